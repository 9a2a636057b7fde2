//! Where one command goes on a cluster, read from its words: the master of
//! its key's slot, any one master (keyless reads), every master (`SCRIPT
//! LOAD`, `INFO`, ...), or split by slot (`DEL`/`EXISTS` of keys in several
//! slots). redis-rs keeps its own table private (`RoutingInfo::for_routable`
//! is `pub(crate)` in 1.8.1), so this is the part of it seckill's commands
//! need; a replica is never a destination.

use redis::cluster_routing::{
    AggregateOp, LogicalAggregateOp, MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo,
    SingleNodeRoutingInfo,
};
use redis::{Cmd, Pipeline};

use super::slots::Node;
use crate::model::layout::key_slot;

/// Where a command goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Destination {
    /// The master of this slot.
    Slot(u16),
    /// Any one master (a keyless command that reads or answers alike everywhere).
    AnyMaster,
    /// Every master, the replies combined.
    EveryMaster(Combine),
    /// One command per slot of its keys (the keys from word `first`, each
    /// `step` words apart: 1 for `DEL k...`, 2 for `MSET k v ...`), the
    /// replies combined.
    Split {
        first: usize,
        step: usize,
        combine: Combine,
    },
    /// This node.
    Node(Node),
    /// No one node can answer it on a cluster (why).
    Unroutable(&'static str),
}

/// How the replies of several nodes make one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Combine {
    /// A map of `host:port` → that node's reply (`INFO`, explicit routing).
    ByNode,
    /// All must succeed; their (equal) reply.
    AllOk,
    /// At least one must succeed; its reply (`SCRIPT LOAD`: a script loaded
    /// where a master answers; one that missed it reloads on `NOSCRIPT`).
    AnyOk,
    /// Integers added (`DEL`, `EXISTS`, `DBSIZE`).
    Sum,
    /// The smallest integer (`WAIT`).
    Min,
    /// Arrays of 0/1 combined element by element (`SCRIPT EXISTS`).
    And,
    /// Arrays one after the other (`KEYS`).
    Concat,
    /// Each key's reply back at its key's place (`MGET`).
    InKeyOrder,
}

/// The words of a command (a cursor argument, never used by seckill, reads as `0`).
pub(crate) fn words(cmd: &Cmd) -> Vec<&[u8]> {
    cmd.args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => bytes,
            _ => b"0".as_slice(),
        })
        .collect()
}

/// A command built from its words.
pub(crate) fn command_of(words: &[Vec<u8>]) -> Cmd {
    let mut cmd = Cmd::new();
    for word in words {
        cmd.arg(word.as_slice());
    }
    cmd
}

/// The commands packed in `bytes` (`*N\r\n$len\r\nword\r\n...`, one after another).
pub(crate) fn unpack(bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let mut commands = Vec::new();
    let mut at = 0;
    let line = |at: &mut usize, prefix: u8| -> Option<usize> {
        if bytes.get(*at) != Some(&prefix) {
            return None;
        }
        let end = *at + bytes[*at..].windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(&bytes[*at + 1..end])
            .ok()?
            .parse()
            .ok()?;
        *at = end + 2;
        Some(n)
    };
    while at < bytes.len() {
        let Some(count) = line(&mut at, b'*') else {
            break;
        };
        let mut words = Vec::with_capacity(count);
        for _ in 0..count {
            let Some(len) = line(&mut at, b'$') else {
                return commands;
            };
            let Some(word) = bytes.get(at..at + len) else {
                return commands;
            };
            words.push(word.to_vec());
            at += len + 2;
        }
        commands.push(words);
    }
    commands
}

/// A pipeline of these commands.
pub(crate) fn pipeline_of(commands: &[Vec<Vec<u8>>]) -> Pipeline {
    let mut pipeline = Pipeline::new();
    for words in commands {
        pipeline.add_command(command_of(words));
    }
    pipeline
}

/// Where the command of these words goes.
pub(crate) fn destination(words: &[&[u8]]) -> Destination {
    use Combine::*;
    use Destination::*;
    let Some(name) = words.first() else {
        return Unroutable("an empty command");
    };
    let name = name.to_ascii_uppercase();
    let sub = words
        .get(1)
        .map(|w| w.to_ascii_uppercase())
        .unwrap_or_default();
    let key_at = |at: usize| {
        words
            .get(at)
            .map_or(AnyMaster, |key| Slot(key_slot_of(key)))
    };
    let count_at =
        |at: usize| -> Option<usize> { std::str::from_utf8(words.get(at)?).ok()?.parse().ok() };
    match name.as_slice() {
        b"EVAL" | b"EVALSHA" | b"EVAL_RO" | b"EVALSHA_RO" | b"FCALL" | b"FCALL_RO" => {
            match count_at(2) {
                Some(0) | None => AnyMaster,
                Some(_) => key_at(3),
            }
        }
        b"XREAD" | b"XREADGROUP" => words
            .iter()
            .position(|w| w.eq_ignore_ascii_case(b"STREAMS"))
            .map_or(Unroutable("XREAD without STREAMS"), |at| key_at(at + 1)),
        b"XGROUP" | b"XINFO" | b"OBJECT" => key_at(2),
        b"MEMORY" => match sub.as_slice() {
            b"USAGE" => key_at(2),
            b"PURGE" => EveryMaster(AllOk),
            b"STATS" | b"DOCTOR" | b"MALLOC-STATS" => EveryMaster(ByNode),
            _ => AnyMaster,
        },
        b"SCRIPT" => match sub.as_slice() {
            b"LOAD" => EveryMaster(AnyOk),
            b"FLUSH" => EveryMaster(AllOk),
            b"EXISTS" => EveryMaster(And),
            b"KILL" => EveryMaster(AnyOk),
            _ => AnyMaster,
        },
        b"FUNCTION" => match sub.as_slice() {
            b"LOAD" | b"DELETE" | b"FLUSH" | b"RESTORE" => EveryMaster(AllOk),
            b"KILL" => EveryMaster(AnyOk),
            _ => AnyMaster,
        },
        b"CONFIG" => match sub.as_slice() {
            b"SET" | b"RESETSTAT" | b"REWRITE" => EveryMaster(AllOk),
            _ => AnyMaster,
        },
        b"ACL" => match sub.as_slice() {
            b"SETUSER" | b"DELUSER" | b"SAVE" | b"LOAD" => EveryMaster(AllOk),
            _ => AnyMaster,
        },
        b"SLOWLOG" | b"LATENCY" => match sub.as_slice() {
            b"RESET" => EveryMaster(AllOk),
            _ => EveryMaster(ByNode),
        },
        b"CLUSTER" => match sub.as_slice() {
            b"COUNTKEYSINSLOT" | b"GETKEYSINSLOT" => count_at(2)
                .and_then(|slot| u16::try_from(slot).ok())
                .map_or(AnyMaster, Slot),
            _ => AnyMaster,
        },
        b"INFO" => EveryMaster(ByNode),
        b"DBSIZE" => EveryMaster(Sum),
        b"FLUSHALL" | b"FLUSHDB" => EveryMaster(AllOk),
        b"KEYS" => EveryMaster(Concat),
        b"WAIT" => EveryMaster(Min),
        b"DEL" | b"UNLINK" | b"EXISTS" | b"TOUCH" => Split {
            first: 1,
            step: 1,
            combine: Sum,
        },
        b"MGET" => Split {
            first: 1,
            step: 1,
            combine: InKeyOrder,
        },
        b"MSET" => Split {
            first: 1,
            step: 2,
            combine: AllOk,
        },
        b"BITOP" => key_at(2),
        b"LMPOP" | b"SINTERCARD" | b"ZDIFF" | b"ZINTER" | b"ZINTERCARD" | b"ZMPOP" | b"ZUNION" => {
            key_at(2)
        }
        b"BLMPOP" | b"BZMPOP" => key_at(3),
        b"PING" | b"TIME" | b"ECHO" | b"LASTSAVE" | b"COMMAND" | b"AUTH" | b"HELLO"
        | b"READONLY" | b"READWRITE" | b"ROLE" | b"SELECT" | b"QUIT" | b"RESET" | b"CLIENT"
        | b"RANDOMKEY" | b"BGSAVE" | b"SAVE" | b"BGREWRITEAOF" | b"MODULE" | b"LOLWUT"
        | b"DEBUG" => AnyMaster,
        b"SCAN" => Unroutable("SCAN walks one node's keys: send it to each master"),
        // A transaction watches keys of one slot on the connection to its
        // master, then goes there whole (a pipeline routed by its first
        // command after MULTI).
        b"WATCH" => key_at(1),
        b"UNWATCH" => EveryMaster(AllOk),
        b"MULTI" | b"EXEC" | b"DISCARD" => {
            Unroutable("a transaction goes whole to one node: send it as one pipeline")
        }
        b"SHUTDOWN" | b"REPLICAOF" | b"SLAVEOF" | b"FAILOVER" | b"MONITOR" | b"SUBSCRIBE"
        | b"PSUBSCRIBE" | b"SSUBSCRIBE" => Unroutable("it concerns one node: name the node"),
        _ => key_at(1),
    }
}

/// Where a command goes when its caller said where (redis-rs's routing
/// words): a node, any master, every master (replicas too are never
/// asked: `AllNodes` means every master here). A route by slot follows the
/// command's own key (redis-rs does not let the slot of a `Route` be read).
pub(crate) fn destination_of(routing: &RoutingInfo, words: &[&[u8]]) -> Destination {
    match routing {
        RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port }) => {
            Destination::Node(Node::new(host.clone(), *port))
        }
        RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random)
        | RoutingInfo::SingleNode(SingleNodeRoutingInfo::RandomPrimary) => Destination::AnyMaster,
        RoutingInfo::MultiNode((
            MultipleNodeRoutingInfo::AllMasters | MultipleNodeRoutingInfo::AllNodes,
            policy,
        )) => Destination::EveryMaster(combine_of(*policy)),
        _ => destination(words),
    }
}

fn combine_of(policy: Option<ResponsePolicy>) -> Combine {
    match policy {
        Some(ResponsePolicy::AllSucceeded) => Combine::AllOk,
        Some(ResponsePolicy::OneSucceeded)
        | Some(ResponsePolicy::FirstSucceededNonEmptyOrAllEmpty) => Combine::AnyOk,
        Some(ResponsePolicy::Aggregate(AggregateOp::Min)) => Combine::Min,
        Some(ResponsePolicy::Aggregate(AggregateOp::Sum)) => Combine::Sum,
        Some(ResponsePolicy::AggregateLogical(LogicalAggregateOp::And)) => Combine::And,
        Some(ResponsePolicy::CombineArrays) => Combine::Concat,
        _ => Combine::ByNode,
    }
}

/// The slot of a key given as bytes (the first `{...}` decides).
pub(crate) fn key_slot_of(key: &[u8]) -> u16 {
    key_slot(&String::from_utf8_lossy(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(words: &[&str]) -> Destination {
        let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        destination(&words)
    }

    #[test]
    fn each_command_goes_where_its_key_is_or_to_the_masters() {
        let slot = |key: &str| Destination::Slot(key_slot(key));
        assert_eq!(
            dest(&["EVALSHA", "abc", "2", "{c:1}:meta", "{c:1}:stock", "x"]),
            slot("{c:1}:meta")
        );
        assert_eq!(dest(&["EVALSHA", "abc", "0"]), Destination::AnyMaster);
        assert_eq!(
            dest(&[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "COUNT",
                "5",
                "STREAMS",
                "{c:1}:orders",
                ">"
            ]),
            slot("{c:1}:orders")
        );
        assert_eq!(
            dest(&["xinfo", "groups", "{c:1}:orders"]),
            slot("{c:1}:orders")
        );
        assert_eq!(dest(&["HGET", "{c:1}:meta", "f"]), slot("{c:1}:meta"));
        assert_eq!(
            dest(&["script", "load", "return 1"]),
            Destination::EveryMaster(Combine::AnyOk)
        );
        assert_eq!(
            dest(&["INFO", "memory"]),
            Destination::EveryMaster(Combine::ByNode)
        );
        assert_eq!(dest(&["TIME"]), Destination::AnyMaster);
        assert_eq!(dest(&["CLUSTER", "SLOTS"]), Destination::AnyMaster);
        assert!(matches!(
            dest(&["DEL", "a", "b"]),
            Destination::Split { .. }
        ));
        assert!(matches!(dest(&["SCAN", "0"]), Destination::Unroutable(_)));
        assert_eq!(dest(&["WATCH", "{c:1}:stock"]), slot("{c:1}:stock"));
        assert!(matches!(dest(&["MULTI"]), Destination::Unroutable(_)));
        let routed = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
        assert_eq!(
            destination_of(&routed, &[b"INFO".as_slice()]),
            Destination::EveryMaster(Combine::ByNode)
        );
    }

    #[test]
    fn packed_commands_unpack_into_their_words() {
        let mut pipe = redis::pipe();
        pipe.cmd("PING").cmd("GET").arg("k");
        let packed = pipe.get_packed_pipeline();
        let words = unpack(&packed);
        assert_eq!(
            words,
            vec![vec![b"PING".to_vec()], vec![b"GET".to_vec(), b"k".to_vec()]]
        );
        assert_eq!(pipeline_of(&words).get_packed_pipeline(), packed);
    }
}

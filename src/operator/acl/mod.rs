//! Least privilege for one campaign: the `ACL SETUSER` words of the buyer,
//! consumer and operator roles, written as a line that survives a shell and
//! `redis-cli` alike, and [`dryrun`], which asks Redis (`ACL DRYRUN`) whether
//! a role can run each script it needs and none it must not.
//!
//! Every role may also run what its connections send before any of its
//! commands, on a standalone Redis and on a cluster alike: `PING` (each
//! connection is checked with it) and `CLUSTER SLOTS` (the slot map, read
//! first from a seed and again after a failover). seckill sends no `CLIENT
//! SETINFO` (Redis 7.2+ would refuse it to these roles, and 7.0 lacks it).
//!
//! Every selector is always in a role's line, whatever the campaign file
//! says today: a campaign that later gains a bucketed item or a
//! `payment_timeout` must never meet a role that lets its scripts start and
//! then refuses a write halfway (scripts have no rollback). The selectors for
//! buckets match only bucket tags (`{campaign:item:bN.salt}`: a plain item's
//! tag has no `.`), so on a campaign without buckets they match no key.
//! docs/security.md says what each role may and may not do.

pub(crate) mod dryrun;

use crate::domain::registry::REGISTRY_KEY;
use crate::model::keys::{LIVE_PREFIX, LOADTEST_PREFIX};

pub(crate) use crate::model::role::Role;

/// How the line sets the password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Password {
    /// `>PASSWORD`: to be replaced before use.
    Placeholder,
    /// `#<sha256 hex>`: the password's hash, from `--password-file`, so the
    /// line can be shown, logged and pasted without the password in it.
    Sha256(String),
}

impl Password {
    /// The password of `text` (a file's contents without its final newline).
    pub(crate) fn of(text: &str) -> Password {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(text.as_bytes());
        Password::Sha256(digest.iter().map(|b| format!("{b:02x}")).collect())
    }

    fn word(&self) -> String {
        match self {
            Password::Placeholder => ">PASSWORD".to_string(),
            Password::Sha256(hex) => format!("#{hex}"),
        }
    }
}

/// The arguments of `ACL SETUSER` for `role` as `user` on `campaign`: the
/// user name first, then each rule (a selector, `(...)`, is one argument).
pub(crate) fn setuser_args(
    role: Role,
    user: &str,
    campaign: &str,
    password: &Password,
) -> Vec<String> {
    let live = format!("{LIVE_PREFIX}:{{{campaign}:");
    let item = |suffix: &str| format!("~{live}*}}:{suffix}");
    let bucket = |suffix: &str| format!("~{live}*:b*.*}}:{suffix}");
    let selector = |commands: &str, keys: &[String]| format!("({commands} {})", keys.join(" "));
    // `reset` first: the line replaces the user's rules, selectors and passwords, so
    // running it twice, or after an older line, gives exactly these rights.
    let mut args: Vec<String> = [user, "reset", "on"].map(String::from).to_vec();
    args.push(password.word());
    args.extend(["resetkeys", "resetchannels", "-@all"].map(String::from));
    // What every connection sends before the role's own commands (the
    // operator's `+@all` has them already).
    let connection_setup = ["+ping", "+cluster|slots"];
    match role {
        Role::Buyer => {
            args.extend(connection_setup.map(String::from));
            // `+hscan`: `serve`'s cache reads a sold-out item's buyers;
            // `+wait`: `buy`/`serve --wait-replicas` after an `ok`;
            // `+info` (@dangerous, but it only reads): the failover fence,
            // the run_id of the Redis process behind each connection
            // (docs/failover.md, "The fence").
            args.extend(
                "+evalsha +script|load +time +hget +hmget +hgetall +get +xlen +hlen +hexists +hscan +zcard +zscore +zrangebyscore +zcount +llen +exists +smembers +sismember +pfcount +wait +info|server"
                    .split(' ')
                    .map(String::from),
            );
            args.push(format!("~{live}*"));
            // The sell-out broadcast (docs/serve.md, "Cheap refusals"): the buy
            // that empties a stock and a bucketed item's proof publish on the
            // stock key's shard channel; `serve` subscribes to them.
            args.extend(["+spublish", "+ssubscribe"].map(String::from));
            args.push(format!("&{live}*"));
            args.push(selector("+incr +set +pexpire", &[item("rate:*")]));
            args.push(selector("+decrby", &[item("stock")]));
            args.push(selector(
                "+hset +hincrby +pexpireat",
                &[item("buyers"), item("buyer_orders"), item("requests")],
            ));
            args.push(selector("+xadd", &[item("orders")]));
            args.push(selector("+hset +pexpireat", &[item("reservations")]));
            args.push(selector("+zadd +pexpireat", &[item("deadlines")]));
            args.push(selector(
                "+hincrby +pexpireat",
                &[item("reservation_counts")],
            ));
            args.push(selector("+incrby", &[bucket("stock")]));
            args.push(selector(
                "+hset +pexpireat",
                &[bucket("xfer_out"), bucket("xfer_in")],
            ));
            args.push(selector(
                "+zadd +zrem +pexpireat",
                &[bucket("xfer_pending")],
            ));
            args.push(selector("+hset", &[bucket("meta")]));
            // The waiting room's door (docs/waiting-room.md): a join counts
            // and places the user, registration counts devices and IPs, and
            // a buy in max_active mode leaves the active set. Admitting,
            // pausing, the risk list and the shuffle are the operator's.
            args.push(selector("+hincrby +hset +pexpireat", &[item("room")]));
            args.push(selector("+hset +pexpireat", &[item("queue")]));
            args.push(selector("+rpush +pexpireat", &[item("line")]));
            args.push(selector("+zrem", &[item("active")]));
            args.push(selector("+hset +pexpireat", &[item("registered")]));
            args.push(selector(
                "+hincrby +pexpireat",
                &[item("devices"), item("ips")],
            ));
            // A ticket room's beat (lua/room_tick.lua): serve counts
            // arrivals, keeps its mark and, holding the lease, moves the
            // cursor. Revoking a key is the operator's (`revoked` is read only).
            args.push(selector(
                "+zadd +zrem +pexpireat",
                &[item("arrivals"), item("passes")],
            ));
            args.push(selector(
                "+hset +hdel +pexpireat",
                &[item("arrival_counts"), item("marks")],
            ));
            args.push(selector("+pfadd +pexpireat", &[item("prequeued")]));
            // A seat item's section (docs/seats.md): a buy takes its seats
            // and names them under the order.
            args.push(selector("+setrange", &[item("seats")]));
            args.push(selector("+hset +pexpireat", &[item("seat_orders")]));
            // Limits above the item (docs/limits.md): a buy claims and
            // releases units in a limit bucket (lua/limit_claim.lua,
            // lua/limit_release.lua); `register --identity` binds an account.
            args.push(selector(
                "+hincrby +hset +hdel +pexpireat",
                &[item("limit_counts"), item("limit_claims")],
            ));
            args.push(selector("+hsetnx +pexpireat", &[item("identity_bindings")]));
        }
        Role::Consumer => {
            // Every key of the campaign with read commands only: `consume
            // --metrics-listen` reads each item's state and room
            // (item_status, queue_read, whose EVALSHA names the keys as
            // read-write whatever the script does with them); its writes
            // are the consumer group's bookkeeping and the dead letters.
            args.extend(connection_setup.map(String::from));
            args.extend(
                "+evalsha +script|load +time +exists +xreadgroup +xack +xautoclaim +xpending +xrange +xlen +xinfo|groups +xinfo|consumers +xgroup|create +xgroup|delconsumer +hget +hmget +get +hlen +hexists +pttl +zcard +zscore +zrangebyscore +zcount +llen +xinfo|stream"
                    .split(' ')
                    .map(String::from),
            );
            args.push(format!("~{live}*"));
            args.push(selector("+xadd", &[item("dead")]));
        }
        Role::Operator => {
            // INFO is @dangerous but only reads: preheat checks the eviction
            // policy with it, doctor reads memory, persistence and replication.
            args.extend(["+@all", "-@admin", "-@dangerous", "+info"].map(String::from));
            args.push(format!("~{live}*"));
            args.push(format!("~{LOADTEST_PREFIX}:{{{campaign}:*"));
            // The channels its scripts publish on when a stock comes back
            // (a cancel, an expiry, a preheat) or empties (a load test).
            args.push(format!("&{live}*"));
            args.push(format!("&{LOADTEST_PREFIX}:{{{campaign}:*"));
            // The campaign registry: preheat records the sale, the kill
            // switch and the load test read it.
            args.push(format!("~{REGISTRY_KEY}"));
        }
    }
    args
}

/// `ACL SETUSER ...` with each word quoted for a POSIX shell and for
/// `redis-cli` (which reads single quotes the same way): paste it after
/// `redis-cli -u URL`, or pipe the line into `redis-cli`. No word holds a
/// single quote (ids are `[A-Za-z0-9_-]`, the password is a placeholder or
/// a hex hash), so single quotes suffice.
pub(crate) fn shell_line(args: &[String]) -> String {
    let mut line = String::from("ACL SETUSER");
    for word in args {
        line.push(' ');
        line.push_str(&quote(word));
    }
    line
}

/// `word`, single-quoted unless every character is safe in both a shell and
/// `redis-cli`.
fn quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '+' | '@' | '#' | '.' | '/' | ':' | '=' | ',')
        });
    if safe && !word.starts_with('#') {
        word.to_string()
    } else {
        format!("'{word}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_a_shell_would_change_is_quoted() {
        let args = setuser_args(Role::Buyer, "seckill-buyer", "c-1", &Password::Placeholder);
        let line = shell_line(&args);
        assert!(
            line.starts_with("ACL SETUSER seckill-buyer reset on '>PASSWORD' resetkeys"),
            "{line}"
        );
        assert!(line.contains(" '+script|load' "), "{line}");
        assert!(line.contains(" '+cluster|slots' "), "{line}");
        assert!(line.contains(" '~seckill:{c-1:*' "), "{line}");
        assert!(
            line.contains(" '(+incr +set +pexpire ~seckill:{c-1:*}:rate:*)' "),
            "{line}"
        );
        // What a shell would split, glob, redirect or pipe is inside quotes.
        let mut inside = false;
        for c in line.chars() {
            if c == '\'' {
                inside = !inside;
            } else if !inside {
                assert!(
                    !"<>|&;()*?{}~$`\"\\".contains(c),
                    "{c:?} unquoted in {line}"
                );
            }
        }
        assert!(!inside);
        assert_eq!(
            Password::of("abc"),
            Password::Sha256(
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into()
            )
        );
        assert_eq!(
            quote(&Password::of("abc").word()),
            "'#ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'"
        );
    }
}

//! The commands each role's subcommands send outside their scripts: the
//! other half of a role's whole path (the scripts' half is the `roles { ... }`
//! line beside each script's typed call, `redis_client::scripts`).
//!
//! A role can run its job only when Redis lets it connect (`PING`, and on a
//! cluster the slot map, `CLUSTER SLOTS`), load a script the server lost
//! (`SCRIPT LOAD`), run each of its scripts and every command inside them,
//! and send the reads and writes its subcommands make beside the scripts —
//! `serve`'s cache reads a sold-out item's buyers with `HSCAN`, `consume`
//! reads and acks the streams, `--wait-replicas` sends `WAIT`. This table is
//! the one list of those commands: `acl --apply` dry-runs each row for the
//! user it wrote, and `doctor` for the user it checks (`acl::dryrun`).
//! `tests/it/role_commands.rs` keeps it complete: it runs each role's
//! subcommands under `MONITOR` (and `ACL LOG`, for what a user without
//! `@admin` was refused) and fails on a command sent outside its scripts that
//! no row of that role names.
//!
//! A row names the command as sent, `{key}` standing for its key and `{db}`
//! for the URL's database number, so the dry run asks about the very words
//! the code sends. Not listed: `AUTH`/`HELLO` (allowed to every user before
//! it logs in) and redis-rs's `CLIENT SETINFO` (the connection layer turns
//! it off: Redis 7.0 has no such command, 7.2+ would log a refusal per
//! connection).

use crate::model::keys::ORDER_GROUP;
use crate::model::role::Role;

/// The key a command is sent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// None: `PING`, `TIME`, `INFO`, `CLUSTER SLOTS`, `WAIT`.
    None,
    /// The key of this name in an item's slot: a plain item's, or any
    /// bucket's of a bucketed item (`stock`, `buyers`, `orders`).
    Item(&'static str),
    /// A key only a bucket has (its transfer log, its admissions).
    Bucket(&'static str),
    /// Any key of an item (`init` deletes them all in one `DEL`).
    AnyOfItem,
    /// The campaign registry, `seckill:campaigns`.
    Registry,
    /// A key of the load test's private namespace (`seckill-loadtest:{...}`)
    /// of this name (`*`: any of them).
    LoadTest(&'static str),
}

impl Key {
    /// The key's kind as JSON says it: `buyers`, `bucket:xfer_pending`,
    /// `*` (any of an item's), `registry`, `loadtest:stock`, `` (none).
    pub(crate) fn kind(self) -> String {
        match self {
            Key::None => String::new(),
            Key::Item(name) => name.to_string(),
            Key::Bucket(name) => format!("bucket:{name}"),
            Key::AnyOfItem => "*".to_string(),
            Key::Registry => "registry".to_string(),
            Key::LoadTest(name) => format!("loadtest:{name}"),
        }
    }

    /// How the key is named in a check: `:buyers`, `seckill:campaigns`.
    pub(crate) fn shown(self) -> String {
        match self {
            Key::None => String::new(),
            Key::Item(name) => format!(":{name}"),
            Key::Bucket(name) => format!(":{name} (a bucket's)"),
            Key::AnyOfItem => ":* (every key of an item)".to_string(),
            Key::Registry => crate::domain::registry::REGISTRY_KEY.to_string(),
            Key::LoadTest(name) => format!("load test :{name}"),
        }
    }
}

/// When a row is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    Always,
    /// Only on a Redis Cluster (`--cluster`).
    Cluster,
    /// Only on a standalone Redis whose URL names a database other than 0.
    OtherDatabase,
}

/// One command a role's subcommands send outside its scripts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    /// The command as sent; `{key}` is the key, `{db}` the database number.
    pub(crate) words: &'static [&'static str],
    pub(crate) key: Key,
    pub(crate) when: When,
    /// Which subcommand sends it, and why.
    pub(crate) by: &'static str,
}

impl Sent {
    /// The command's name: `HSCAN`, `CLUSTER SLOTS`.
    pub(crate) fn command(&self) -> String {
        command_name(self.words)
    }

    /// How a check names it: `HSCAN :buyers`, `CLUSTER SLOTS`.
    pub(crate) fn shown(&self) -> String {
        let name = command_name(self.words);
        match self.key {
            Key::None => name,
            key => format!("{name} {}", key.shown()),
        }
    }

    /// Whether the row applies to a connection of this kind.
    pub(crate) fn applies(&self, cluster: bool, db: i64) -> bool {
        match self.when {
            When::Always => true,
            When::Cluster => cluster,
            When::OtherDatabase => !cluster && db != 0,
        }
    }
}

/// `CMD`, or `CMD SUB` for the commands that have subcommands.
fn command_name(words: &[&str]) -> String {
    const CONTAINERS: [&str; 10] = [
        "ACL", "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "MEMORY", "OBJECT", "SCRIPT", "XGROUP",
        "XINFO",
    ];
    match words {
        [first, second, ..] if CONTAINERS.contains(first) => format!("{first} {second}"),
        [first, ..] => first.to_string(),
        [] => String::new(),
    }
}

const fn sent(words: &'static [&'static str], key: Key, by: &'static str) -> Sent {
    Sent {
        words,
        key,
        when: When::Always,
        by,
    }
}

/// What every role sends to connect and to run its scripts.
const EVERY_ROLE: &[Sent] = &[
    sent(
        &["PING"],
        Key::None,
        "every connection: checked at connect (each node of a cluster), and by the services' /healthz",
    ),
    Sent {
        words: &["CLUSTER", "SLOTS"],
        key: Key::None,
        when: When::Cluster,
        by: "the cluster client: the slot map, at connect and after a MOVED or a failover",
    },
    Sent {
        words: &["SELECT", "{db}"],
        key: Key::None,
        when: When::OtherDatabase,
        by: "every connection to a URL naming a database other than 0",
    },
    sent(
        &["SCRIPT", "LOAD", "return 1"],
        Key::None,
        "every script call: a script the server does not hold (a restart, a failover) is loaded, then run",
    ),
];

/// The buyer's commands outside its scripts (`buy`, `serve`, `queue join`, `register`).
const BUYER: &[Sent] = &[
    sent(
        &["INFO", "server"],
        Key::None,
        "buy and serve: the run_id of the Redis process behind each connection (the fence)",
    ),
    sent(
        &["TIME"],
        Key::None,
        "serve: the cache's clock, Redis TIME against this machine's",
    ),
    sent(
        &["GET", "{key}"],
        Key::Item("stock"),
        "serve: whether an item (each bucket) is sold out, for the cache",
    ),
    sent(
        &["HGET", "{key}", "sold_out"],
        Key::Item("meta"),
        "serve: a bucketed item's sell-out proof, for the cache",
    ),
    sent(
        &["HMGET", "{key}", "starts_at_ms", "ends_at_ms"],
        Key::Item("meta"),
        "serve: the item's window, for the cache",
    ),
    sent(
        &["HSCAN", "{key}", "0", "COUNT", "1000"],
        Key::Item("buyers"),
        "serve: who bought a sold-out or closed item (their retries still go to Redis)",
    ),
    sent(
        &["XLEN", "{key}"],
        Key::Item("orders"),
        "serve: whether a sold-out or closed item's orders moved since its buyers were read",
    ),
    sent(
        &["WAIT", "1", "1000"],
        Key::None,
        "buy and serve with --wait-replicas: the replicas' acknowledgement",
    ),
    sent(
        &["ZREM", "{key}", "t"],
        Key::Bucket("xfer_pending"),
        "buy and serve, a bucketed item's sweep: a settled transfer acked",
    ),
    sent(
        &["HSET", "{key}", "sold_out", "1"],
        Key::Bucket("meta"),
        "buy and serve, a bucketed item's sweep: a bucket's sell-out proof",
    ),
    sent(
        &["SPUBLISH", "{key}", "sold_out"],
        Key::Bucket("stock"),
        "buy and serve, a bucketed item's sweep: the proof told to every serve instance",
    ),
    sent(
        &["SSUBSCRIBE", "{key}"],
        Key::Item("stock"),
        "serve: the sell-out broadcast, each slot's stock channel (docs/serve.md)",
    ),
    sent(
        &["HGET", "{key}", "u"],
        Key::Item("identity_bindings"),
        "buy and serve, an item with a per_identity_limit or a buy with an identity: the account's binding (docs/limits.md)",
    ),
    sent(
        &["HSETNX", "{key}", "u", "d"],
        Key::Item("identity_bindings"),
        "register --identity: the account's binding, the first one stands",
    ),
    sent(
        &["PEXPIREAT", "{key}", "1"],
        Key::Item("identity_bindings"),
        "register --identity: the bindings expire with the sale",
    ),
];

/// The consumer's commands outside its scripts (`consume`, `pending-claim`).
const CONSUMER: &[Sent] = &[
    sent(
        &["HMGET", "{key}", "carried_orders", "carried_units"],
        Key::Item("meta"),
        "consume --metrics-listen: units a recovery carried over (`preheat --recover`)",
    ),
    sent(
        &["ZCOUNT", "{key}", "-inf", "(0"],
        Key::Item("deadlines"),
        "consume --metrics-listen: overdue reservations",
    ),
    sent(
        &[
            "ZRANGEBYSCORE",
            "{key}",
            "-inf",
            "(0",
            "WITHSCORES",
            "LIMIT",
            "0",
            "1",
        ],
        Key::Item("deadlines"),
        "consume --metrics-listen: the oldest overdue reservation",
    ),
    sent(
        &[
            "XREADGROUP",
            "GROUP",
            ORDER_GROUP,
            "c",
            "COUNT",
            "1",
            "STREAMS",
            "{key}",
            ">",
        ],
        Key::Item("orders"),
        "consume: new orders",
    ),
    sent(
        &["XACK", "{key}", ORDER_GROUP, "0-1"],
        Key::Item("orders"),
        "consume, pending-claim: an order once the database committed it",
    ),
    sent(
        &["XAUTOCLAIM", "{key}", ORDER_GROUP, "c", "0", "0-0"],
        Key::Item("orders"),
        "pending-claim, and consume's own pending entries at start",
    ),
    sent(
        &["XPENDING", "{key}", ORDER_GROUP],
        Key::Item("orders"),
        "pending-claim: the group's pending entries",
    ),
    sent(
        &["XRANGE", "{key}", "-", "+"],
        Key::Item("orders"),
        "consume: the entries of a pending id list",
    ),
    sent(
        &["XLEN", "{key}"],
        Key::Item("dead"),
        "pending-claim: the dead letters so far",
    ),
    sent(
        &["EXISTS", "{key}"],
        Key::Item("orders"),
        "consume: whether a stream exists yet",
    ),
    sent(
        &["XINFO", "GROUPS", "{key}"],
        Key::Item("orders"),
        "consume: the group's state",
    ),
    sent(
        &["XINFO", "CONSUMERS", "{key}", ORDER_GROUP],
        Key::Item("orders"),
        "consume, pending-claim: the group's consumers",
    ),
    sent(
        &["XGROUP", "CREATE", "{key}", ORDER_GROUP, "0", "MKSTREAM"],
        Key::Item("orders"),
        "consume, pending-claim: the group, when preheat has not made it",
    ),
];

/// The operator's commands outside its scripts (`preheat`, `init`, the kill
/// switch, `status`, `reconcile`, `rebalance`, `dead-letter`, `pay`,
/// `cancel`, `expire`, the room's admin, `campaigns`, `loadtest`).
const OPERATOR: &[Sent] = &[
    sent(
        &["HMGET", "{key}", "carried_orders", "carried_units"],
        Key::Item("meta"),
        "status, shutdown-switch, init: units a recovery carried over (`preheat --recover`)",
    ),
    sent(
        &["ZCOUNT", "{key}", "-inf", "(0"],
        Key::Item("deadlines"),
        "status, shutdown-switch, init: overdue reservations",
    ),
    sent(
        &[
            "ZRANGEBYSCORE",
            "{key}",
            "-inf",
            "(0",
            "WITHSCORES",
            "LIMIT",
            "0",
            "1",
        ],
        Key::Item("deadlines"),
        "status, shutdown-switch, init: the oldest overdue reservation",
    ),
    sent(
        &["TIME"],
        Key::None,
        "preheat, the kill switch, campaigns: Redis's clock",
    ),
    sent(
        &["INFO", "memory"],
        Key::None,
        "preheat: the eviction policy; --require-durable: persistence (INFO persistence)",
    ),
    sent(
        &["INFO", "replication"],
        Key::None,
        "regions move and rebalance: the replicas a debit must reach before its credit",
    ),
    sent(
        &["WAIT", "1", "1000"],
        Key::None,
        "regions move and rebalance: every replica confirmed the debit (docs/regions.md)",
    ),
    sent(
        &["HGETALL", "{key}"],
        Key::Registry,
        "preheat, the kill switch, campaigns, loadtest: the live campaigns",
    ),
    sent(
        &["HSET", "{key}", "c", "{}"],
        Key::Registry,
        "preheat: records the sale",
    ),
    sent(
        &["HDEL", "{key}", "c"],
        Key::Registry,
        "init: forgets a reset sale",
    ),
    sent(
        &["HMGET", "{key}", "initial_stock"],
        Key::Item("meta"),
        "preheat's plan, the window",
    ),
    sent(
        &["HGET", "{key}", "sold_out"],
        Key::Item("meta"),
        "rebalance, reconcile --repair: a bucket's sell-out proof",
    ),
    sent(
        &["HSET", "{key}", "sold_out", "1"],
        Key::Item("meta"),
        "reconcile --repair: a bucket's sell-out proof healed",
    ),
    sent(
        &["HDEL", "{key}", "sold_out"],
        Key::Item("meta"),
        "reconcile --repair: a wrong sell-out proof removed",
    ),
    sent(
        &["EXISTS", "{key}"],
        Key::AnyOfItem,
        "preheat, init, reconcile, and loadtest's live-sale guard: whether an item's keys exist",
    ),
    sent(
        &["GET", "{key}"],
        Key::Item("stock"),
        "pay, cancel, dead-letter: the stock",
    ),
    sent(
        &["GET", "{key}"],
        Key::Item("bucket_count"),
        "every command on an item: how many buckets Redis holds",
    ),
    sent(
        &["SET", "{key}", "2"],
        Key::Item("bucket_count"),
        "preheat: how many buckets the item has",
    ),
    sent(&["DEL", "{key}"], Key::AnyOfItem, "init: the item's keys"),
    sent(
        &["SCAN", "0", "MATCH", "seckill:{c:i}:*", "COUNT", "1000"],
        Key::None,
        "init: the item's per-user keys",
    ),
    sent(
        &["HSCAN", "{key}", "0", "COUNT", "1000"],
        Key::Item("buyers"),
        "reconcile: the buyers",
    ),
    sent(
        &["HSET", "{key}", "u", "1"],
        Key::Item("buyers"),
        "preheat --recover: the buyers restored",
    ),
    sent(
        &["HSET", "{key}", "u", "o"],
        Key::Item("buyer_orders"),
        "preheat --recover: the buyers' orders restored",
    ),
    sent(
        &["PEXPIREAT", "{key}", "1"],
        Key::Item("buyers"),
        "preheat --recover: the restored buyers expire with the item",
    ),
    sent(
        &["XRANGE", "{key}", "-", "+"],
        Key::Item("orders"),
        "reconcile: the order stream",
    ),
    sent(
        &["XREVRANGE", "{key}", "+", "-", "COUNT", "1"],
        Key::Item("orders"),
        "init: the newest orders a reset would lose",
    ),
    sent(
        &["XPENDING", "{key}", ORDER_GROUP],
        Key::Item("orders"),
        "reconcile: orders in flight",
    ),
    sent(
        &["XINFO", "GROUPS", "{key}"],
        Key::Item("orders"),
        "reconcile, doctor: the consumer group",
    ),
    sent(
        &["XINFO", "CONSUMERS", "{key}", ORDER_GROUP],
        Key::Item("orders"),
        "status, the kill switch: the consumers",
    ),
    sent(
        &["XGROUP", "CREATE", "{key}", ORDER_GROUP, "0", "MKSTREAM"],
        Key::Item("orders"),
        "preheat: the consumer group",
    ),
    sent(
        &["XRANGE", "{key}", "-", "+"],
        Key::Item("dead"),
        "dead-letter list and redrive",
    ),
    sent(
        &["XDEL", "{key}", "0-1"],
        Key::Item("dead"),
        "dead-letter redrive: a letter once stored",
    ),
    sent(
        &["LRANGE", "{key}", "0", "-1"],
        Key::Item("switch_log"),
        "shutdown-switch status: the history",
    ),
    sent(
        &["LLEN", "{key}"],
        Key::Item("switch_log"),
        "shutdown-switch status --history: how many flips are kept",
    ),
    sent(
        &["HEXISTS", "{key}", "o"],
        Key::Item("reservations"),
        "pay, cancel: whether the order is a reservation",
    ),
    sent(
        &["HMGET", "{key}", "o"],
        Key::Item("reservations"),
        "status, expire: reservation records",
    ),
    sent(
        &["HMGET", "{key}", "reserved_orders"],
        Key::Item("reservation_counts"),
        "status: reservation counters",
    ),
    sent(
        &["ZRANGE", "{key}", "0", "-1"],
        Key::Bucket("xfer_pending"),
        "rebalance, reconcile: transfers in flight",
    ),
    sent(
        &["ZREM", "{key}", "t"],
        Key::Bucket("xfer_pending"),
        "rebalance, reconcile --repair: a settled transfer acked",
    ),
    sent(
        &["HSCAN", "{key}", "0", "COUNT", "1000"],
        Key::Bucket("xfer_out"),
        "reconcile: the transfer log",
    ),
    sent(
        &["HSCAN", "{key}", "0", "COUNT", "1000"],
        Key::Bucket("xfer_in"),
        "reconcile: the transfer log",
    ),
    sent(
        &["HGET", "{key}", "config"],
        Key::Item("room"),
        "preheat's plan, queue shuffle: the room's settings and seed",
    ),
    sent(
        &["HLEN", "{key}"],
        Key::Bucket("admissions"),
        "queue status: a bucket's admissions",
    ),
    sent(
        &["ZRANGE", "{key}", "0", "-1"],
        Key::Item("active"),
        "queue admit: the active set",
    ),
    sent(
        &["ZREM", "{key}", "u"],
        Key::Item("active"),
        "queue admit: users who bought leave the active set",
    ),
    sent(
        &["HGET", "{key}", "u"],
        Key::Item("buyers"),
        "queue admit: whether an active user bought",
    ),
    sent(
        &["LRANGE", "{key}", "0", "-1"],
        Key::Item("line"),
        "queue admit: the line",
    ),
    sent(
        &["ZSCORE", "{key}", "u"],
        Key::Item("shuffled"),
        "queue shuffle --verify: the shuffled positions",
    ),
    sent(
        &["GET", "{key}"],
        Key::LoadTest("stock"),
        "loadtest: the designs it measures, in its own namespace",
    ),
    sent(&["SET", "{key}", "1"], Key::LoadTest("stock"), "loadtest"),
    sent(&["DECR", "{key}"], Key::LoadTest("stock"), "loadtest"),
    sent(&["INCR", "{key}"], Key::LoadTest("stock"), "loadtest"),
    sent(&["WATCH", "{key}"], Key::LoadTest("stock"), "loadtest"),
    sent(&["UNWATCH"], Key::None, "loadtest"),
    sent(&["MULTI"], Key::None, "loadtest"),
    sent(&["EXEC"], Key::None, "loadtest"),
    sent(
        &["SET", "{key}", "t", "NX", "PX", "1000"],
        Key::LoadTest("lock"),
        "loadtest",
    ),
    sent(
        &["DEL", "{key}"],
        Key::LoadTest("*"),
        "loadtest: its namespace, reset before and after",
    ),
    sent(
        &["EXISTS", "{key}"],
        Key::LoadTest("*"),
        "loadtest: its namespace, reset before and after",
    ),
    sent(
        &["HSET", "{key}", "f", "v"],
        Key::LoadTest("meta"),
        "loadtest",
    ),
    sent(
        &[
            "SCAN",
            "0",
            "MATCH",
            "seckill-loadtest:{c:i}:*",
            "COUNT",
            "1000",
        ],
        Key::None,
        "loadtest: its namespace, cleared",
    ),
];

/// Every command `role`'s subcommands send outside their scripts.
pub(crate) fn sent_by(role: Role) -> impl Iterator<Item = &'static Sent> {
    let own = match role {
        Role::Buyer => BUYER,
        Role::Consumer => CONSUMER,
        Role::Operator => OPERATOR,
    };
    EVERY_ROLE.iter().chain(own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_name_their_command_and_key() {
        let hscan = sent_by(Role::Buyer)
            .find(|s| s.words[0] == "HSCAN")
            .expect("serve's cache reads buyers");
        assert_eq!(hscan.shown(), "HSCAN :buyers");
        let slots = sent_by(Role::Consumer)
            .find(|s| s.words == ["CLUSTER", "SLOTS"])
            .unwrap();
        assert_eq!(slots.shown(), "CLUSTER SLOTS");
        assert!(slots.applies(true, 0) && !slots.applies(false, 0));
        for role in Role::ALL {
            for row in sent_by(role) {
                let keyed = row.words.contains(&"{key}");
                assert_eq!(keyed, row.key != Key::None, "{role:?} {:?}", row.words);
                assert!(!row.by.is_empty());
            }
        }
    }
}

//! Every exit status `seckill` can return, written down once.
//!
//! Scripts branch on these numbers, so they are part of the interface: the
//! README table is generated from the same list and `tests/it/exit_codes.rs`
//! checks each one from outside the binary.

/// The command did what was asked (`buy`: the order was placed; `reconcile`: balanced).
pub const SUCCESS: i32 = 0;
/// Runtime failure: Redis or the order database unreachable, a timeout, a server error.
pub const RUNTIME_ERROR: i32 = 1;
/// Usage error: bad flags, or a campaign file that does not parse or validate.
pub const USAGE_ERROR: i32 = 2;
/// `reconcile` found drift: the stock equation does not hold or the order sets
/// differ; with `--fence`, an item stays fenced (what was not re-applied is named).
pub const DRIFT_FOUND: i32 = 3;
/// `loadtest`: a threshold failed (--max-p99, --min-qps, oversold or undersold).
pub const THRESHOLD_FAILED: i32 = 4;
/// `preheat` refused an item: it has sales (`--force`), or orders but no
/// stock key; nothing was written for it. Distinct from 1: Redis answered.
pub const PREHEAT_REFUSED: i32 = 5;
/// `consume`/`pending-claim`: the order database refused some orders (a
/// trigger, a unique index, a charset) while it stored the rest; each refused
/// order stays pending (or was dead-lettered after `--max-deliveries`) and is
/// named on stderr. Distinct from 1: everything else was stored.
pub const ORDERS_REFUSED: i32 = 6;
/// `acl --apply`: the user was written, but `ACL DRYRUN` found the role unable
/// to run one of its scripts, or able to run another role's (each check listed);
/// `serve --check-credential`, `buy --dry-run`: a node refused the credential a
/// command of the job's path (each named).
pub const ACL_CHECK_FAILED: i32 = 7;
/// `doctor`: no-go, a check failed (or a critical one could not be made);
/// each failed line says what to do.
pub const NO_GO: i32 = 8;
/// `buy`: the item has no stock left (or not enough for `--qty`).
pub const SOLD_OUT: i32 = 10;
/// `buy`: the user already bought up to `per_user_limit`; the existing order id is printed.
pub const DUPLICATE: i32 = 11;
/// `buy`: the user sent more than `rate_limit.max_requests` attempts within `rate_limit.window`.
pub const RATE_LIMITED: i32 = 12;
/// `buy`: the kill switch is on for this item.
pub const CLOSED: i32 = 13;
/// `buy`: the sale window has not opened yet (`starts_at` is in the future).
pub const NOT_STARTED: i32 = 14;
/// `buy`: the sale window has closed (`ends_at` is in the past).
pub const ENDED: i32 = 15;
/// `buy`: the item was never preheated into Redis (or its keys expired).
pub const NOT_PREHEATED: i32 = 16;
/// `buy`: a stored value the script reads is malformed (not a strict integer,
/// or a key of the wrong type); nothing was written, the message names the key.
pub const CORRUPT_STATE: i32 = 17;
/// `buy`: this request id already bought with other parameters (`--qty`); the
/// original order is named and nothing more was bought.
pub const REQUEST_ID_REUSED: i32 = 18;
/// `buy`: the request was sent but its reply was lost (I/O error, timeout):
/// the attempt may or may not have run. Retry with the same `--request-id`.
pub const OUTCOME_UNKNOWN: i32 = 19;
/// `buy --wait-replicas N`: bought, but fewer than N replicas confirmed it in
/// time; a failover now could lose it (the order id is printed).
pub const UNREPLICATED: i32 = 20;
/// `buy`: the item is fenced: its Redis is not the process preheat loaded the
/// stock on (a failover, a restart, a restore) and may have lost sales, so
/// nothing is sold until `seckill reconcile --fence` proves the books
/// (docs/failover.md, "The fence"). Nothing was written.
pub const FENCED: i32 = 21;
/// `buy` in a campaign with regions: the user's home region is another one
/// (named); a user buys only at home, so per-user limits hold across
/// regions (docs/regions.md). Nothing was sent.
pub const WRONG_REGION: i32 = 22;
/// `regions move`: debited in the source but not credited yet (a replica did
/// not confirm the debit in time, or the destination is fenced or down):
/// the units are in transit; `regions rebalance` settles them.
pub const IN_TRANSIT: i32 = 23;
/// `buy`: a limit above the item would be passed — a limit group's
/// `per_user_limit` over its items, or the item's `per_identity_limit` over
/// the accounts presenting one identity (docs/limits.md); what is held is
/// printed, nothing was bought.
pub const LIMIT_REACHED: i32 = 24;
/// `buy`: the item has a `per_identity_limit` and the buy carries no
/// identity (no `--identity`, none bound by `register --identity`).
pub const IDENTITY_REQUIRED: i32 = 25;
/// `buy`: the account is bound to another identity than the one presented;
/// `register --identity`: the account was bound to another one before (it stands).
pub const IDENTITY_MISMATCH: i32 = 26;
/// `buy --seats`: a named seat is held, sold or blocked (each is named);
/// nothing was written (docs/seats.md).
pub const SEAT_TAKEN: i32 = 27;
/// `buy --qty N` (best available): no N free seats side by side in one row of the sections
/// asked for; the closest block is named; nothing was written (docs/seats.md).
pub const NO_BLOCK: i32 = 28;
/// `pay`: the order was paid before (nothing changed); `cancel`: the order is paid, so it is never released.
pub const ALREADY_PAID: i32 = 30;
/// `pay`/`cancel`: the order's payment deadline passed; it is (or is about to be) released by `expire`.
pub const ORDER_EXPIRED: i32 = 31;
/// `pay`/`cancel`: the order was cancelled before (nothing changed).
pub const ORDER_CANCELLED: i32 = 32;
/// `pay`/`cancel`: no reservation with this order id in this campaign (or in `--item`).
pub const UNKNOWN_ORDER: i32 = 33;
/// `status --check`: an item is not preheated (never, or its keys expired): buys would fail.
pub const CHECK_PREHEAT: i32 = 40;
/// `status --check`: an item's kill switch is ON: every buy is refused.
pub const CHECK_SWITCH_ON: i32 = 41;
/// `status --check --reconcile-at T`: an item's keys expire before T: the
/// nightly reconcile could no longer check it.
pub const CHECK_EXPIRY: i32 = 42;
/// `status --check --max-lag N`: more than N order entries wait for the
/// consumer (lag) or sit delivered and unacknowledged (pending).
pub const CHECK_LAG: i32 = 43;
/// `status --check`: reservations are past their payment deadline for longer
/// than `--grace` and nothing released them (no `seckill expire` runs).
pub const CHECK_OVERDUE: i32 = 44;
/// `status --check`: order entries sit in the dead-letter stream, not in the
/// order database.
pub const CHECK_DEAD_LETTERS: i32 = 45;
/// `status --check`: a waiting room's admitter work (the pre-queue's
/// shuffle, the fan-out to buckets) is later than `--grace`: no `seckill
/// queue admit --loop` runs.
pub const CHECK_ADMITTER: i32 = 46;
/// `status --check`: an item is fenced after a failover or restart (every
/// buy answers `fenced` until `seckill reconcile --fence`).
pub const CHECK_FENCED: i32 = 47;
/// `buy`/`queue`: the item's waiting room takes registered users only
/// (`seckill register`), and this user is not (docs/waiting-room.md).
pub const NOT_REGISTERED: i32 = 50;
/// `buy`: the item has a waiting room and the user never joined it (`seckill queue join`).
pub const NOT_QUEUED: i32 = 51;
/// `buy`: the user waits in the waiting room, not admitted yet; the position,
/// serving position and wait are printed (retry after it).
pub const NOT_ADMITTED: i32 = 52;
/// `buy`: the user's admission ran out (`admission_ttl`) before a buy.
pub const ADMISSION_EXPIRED: i32 = 53;
/// `register`: the user registered before from another device or IP prefix;
/// the first registration stands.
pub const ALREADY_REGISTERED: i32 = 54;
/// `register`: the device has `per_device` accounts registered already.
pub const DEVICE_LIMIT: i32 = 55;
/// `register`: the IP prefix has `per_ip` accounts registered already.
pub const IP_LIMIT: i32 = 56;
/// `register`: registration is closed (`registration.until`, Redis clock).
pub const REGISTRATION_CLOSED: i32 = 57;

/// (code, name, meaning) for documentation and tests.
pub const ALL: &[(i32, &str, &str)] = &[
    (SUCCESS, "success", "done; buy: ok; reconcile: balanced"),
    (
        RUNTIME_ERROR,
        "runtime_error",
        "Redis or the database unreachable, timeout, server error",
    ),
    (
        USAGE_ERROR,
        "usage_error",
        "bad flags or a bad campaign file",
    ),
    (
        DRIFT_FOUND,
        "drift_found",
        "reconcile: the stock equation does not hold (--fence: an item stays fenced)",
    ),
    (
        THRESHOLD_FAILED,
        "threshold_failed",
        "loadtest: a threshold failed (p99, qps, oversold, undersold)",
    ),
    (
        PREHEAT_REFUSED,
        "preheat_refused",
        "preheat: a reload would sell units again; nothing written",
    ),
    (
        ORDERS_REFUSED,
        "orders_refused",
        "consume/pending-claim: the database refused some orders; everything else was stored",
    ),
    (
        ACL_CHECK_FAILED,
        "acl_check_failed",
        "acl, buy --dry-run, serve --check-credential: a check refused",
    ),
    (
        NO_GO,
        "no_go",
        "doctor: a check failed; each failed line says what to do",
    ),
    (SOLD_OUT, "sold_out", "buy: not enough stock left"),
    (
        DUPLICATE,
        "duplicate",
        "buy: user already bought up to the limit",
    ),
    (
        RATE_LIMITED,
        "rate_limited",
        "buy: too many attempts in the rate-limit window",
    ),
    (CLOSED, "closed", "buy: kill switch is on"),
    (NOT_STARTED, "not_started", "buy: before starts_at"),
    (ENDED, "ended", "buy: after ends_at"),
    (
        NOT_PREHEATED,
        "not_preheated",
        "buy/pay/cancel: item not preheated (or expired)",
    ),
    (
        CORRUPT_STATE,
        "corrupt_state",
        "buy: a stored value is malformed; nothing written, the key is named",
    ),
    (
        REQUEST_ID_REUSED,
        "request_id_reused",
        "buy: the request id already bought other units; the original order is named",
    ),
    (
        OUTCOME_UNKNOWN,
        "outcome_unknown",
        "buy: reply lost after sending; retry with the same --request-id",
    ),
    (
        UNREPLICATED,
        "unreplicated",
        "buy: with --wait-replicas, bought, but fewer replicas confirmed it in time",
    ),
    (
        WRONG_REGION,
        "wrong_region",
        "buy: the user's home region is another one (named); nothing was sent",
    ),
    (
        IN_TRANSIT,
        "in_transit",
        "regions: debited, not credited yet (replicas short, peer fenced or down)",
    ),
    (
        FENCED,
        "fenced",
        "buy: the item is fenced after a failover or restart; run reconcile --fence",
    ),
    (
        LIMIT_REACHED,
        "limit_reached",
        "buy: a limit group's or per-identity limit would be passed; nothing bought",
    ),
    (
        IDENTITY_REQUIRED,
        "identity_required",
        "buy: the item has a per_identity_limit and the buy carries no identity",
    ),
    (
        IDENTITY_MISMATCH,
        "identity_mismatch",
        "buy/register: the account is bound to another identity than the one presented",
    ),
    (
        SEAT_TAKEN,
        "seat_taken",
        "buy: a named seat is held, sold or blocked (named); nothing written",
    ),
    (
        NO_BLOCK,
        "no_block",
        "buy: no block of N free seats in one row; the closest is named",
    ),
    (
        ALREADY_PAID,
        "already_paid",
        "pay/cancel: the order is paid (nothing changed)",
    ),
    (
        ORDER_EXPIRED,
        "expired",
        "pay/cancel: the payment deadline passed; released by expire",
    ),
    (
        ORDER_CANCELLED,
        "cancelled",
        "pay/cancel: the order was cancelled before (nothing changed)",
    ),
    (
        UNKNOWN_ORDER,
        "unknown_order",
        "pay/cancel: no such reservation in this campaign",
    ),
    (
        CHECK_PREHEAT,
        "check_preheat",
        "status: --check found an item not preheated (or its keys expired)",
    ),
    (
        CHECK_SWITCH_ON,
        "check_switch_on",
        "status: --check found a kill switch ON",
    ),
    (
        CHECK_EXPIRY,
        "check_expiry",
        "status: --check found keys that expire before --reconcile-at",
    ),
    (
        CHECK_LAG,
        "check_lag",
        "status: --check found lag or pending above --max-lag",
    ),
    (
        CHECK_OVERDUE,
        "check_overdue",
        "status: --check found reservations past their deadline longer than --grace",
    ),
    (
        CHECK_DEAD_LETTERS,
        "check_dead_letters",
        "status: --check found entries in a dead-letter stream",
    ),
    (
        CHECK_ADMITTER,
        "check_admitter",
        "status: --check found a waiting room's admitter work late (queue admit)",
    ),
    (
        CHECK_FENCED,
        "check_fenced",
        "status: --check found an item fenced (run reconcile --fence)",
    ),
    (
        NOT_REGISTERED,
        "not_registered",
        "buy/queue: the waiting room takes registered users only; this one is not",
    ),
    (
        NOT_QUEUED,
        "not_queued",
        "buy: the user never joined the item's waiting room",
    ),
    (
        NOT_ADMITTED,
        "not_admitted",
        "buy: not admitted by the waiting room yet; position and wait printed",
    ),
    (
        ADMISSION_EXPIRED,
        "admission_expired",
        "buy: the user's admission ran out before a buy",
    ),
    (
        ALREADY_REGISTERED,
        "already_registered",
        "register: registered before from another device or IP; the first one stands",
    ),
    (
        DEVICE_LIMIT,
        "device_limit",
        "register: the device has per_device accounts already",
    ),
    (
        IP_LIMIT,
        "ip_limit",
        "register: the IP prefix has per_ip accounts already",
    ),
    (
        REGISTRATION_CLOSED,
        "registration_closed",
        "register: registration is closed (registration.until, Redis clock)",
    ),
];

/// Every outcome a script answers (`buy`; `pay` and `cancel`; the waiting
/// room's `queue join` and `register`), as the
/// script and the JSON name it, and the exit code it is: the one map from
/// outcome to exit code.
pub const OUTCOMES: &[(&str, i32)] = &[
    ("ok", SUCCESS),
    ("sold_out", SOLD_OUT),
    ("duplicate", DUPLICATE),
    ("rate_limited", RATE_LIMITED),
    ("closed", CLOSED),
    ("not_started", NOT_STARTED),
    ("ended", ENDED),
    ("not_preheated", NOT_PREHEATED),
    ("corrupt_state", CORRUPT_STATE),
    ("request_id_reused", REQUEST_ID_REUSED),
    ("unreplicated", UNREPLICATED),
    ("fenced", FENCED),
    ("limit_reached", LIMIT_REACHED),
    ("identity_required", IDENTITY_REQUIRED),
    ("identity_mismatch", IDENTITY_MISMATCH),
    ("seat_taken", SEAT_TAKEN),
    ("no_block", NO_BLOCK),
    ("paid", SUCCESS),
    ("already_paid", ALREADY_PAID),
    ("cancelled", SUCCESS),
    ("already_cancelled", ORDER_CANCELLED),
    ("was_cancelled", ORDER_CANCELLED),
    ("expired", ORDER_EXPIRED),
    ("unknown_order", UNKNOWN_ORDER),
    ("not_registered", NOT_REGISTERED),
    ("not_queued", NOT_QUEUED),
    ("not_admitted", NOT_ADMITTED),
    ("admission_expired", ADMISSION_EXPIRED),
    ("joined", SUCCESS),
    ("queued", SUCCESS),
    ("registered", SUCCESS),
    ("already_registered", ALREADY_REGISTERED),
    ("device_limit", DEVICE_LIMIT),
    ("ip_limit", IP_LIMIT),
    ("registration_closed", REGISTRATION_CLOSED),
];

/// The exit code of the outcome named `outcome` in [`OUTCOMES`]
/// ([`RUNTIME_ERROR`] for a name not listed).
pub fn of_outcome(outcome: &str) -> i32 {
    OUTCOMES
        .iter()
        .find(|(name, _)| *name == outcome)
        .map_or(RUNTIME_ERROR, |(_, code)| *code)
}

/// The name of `code` in [`ALL`] (`"runtime_error"` for a code not listed).
pub fn name_of(code: i32) -> &'static str {
    ALL.iter()
        .find(|(c, _, _)| *c == code)
        .map_or("runtime_error", |(_, name, _)| name)
}

/// The "Exit codes:" paragraph of `command`'s `--help`, generated from [`ALL`]:
/// the codes every command shares, plus those whose meaning starts with `command:`.
pub fn help(command: &str) -> String {
    let mut text = String::from("Exit codes:");
    let width = ALL.iter().map(|(_, name, _)| name.len()).max().unwrap_or(0);
    for (code, name, meaning) in ALL {
        let owner = meaning
            .split_once(": ")
            .map(|(head, _)| head)
            .filter(|head| !head.contains([' ', ';']));
        let meaning = match owner {
            None => meaning,
            Some(owner) if owner.split('/').any(|o| o == command) => &meaning[owner.len() + 2..],
            Some(_) => continue,
        };
        text.push_str(&format!("\n  {code:>2}  {name:<width$} {meaning}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_the_shared_codes_and_only_the_commands_own() {
        // Names are padded to the longest one, so the meanings line up.
        let width = ALL.iter().map(|(_, name, _)| name.len()).max().unwrap();
        let line = |code: &str, name: &str, meaning: &str| {
            format!("\n  {code:>2}  {name:<width$} {meaning}")
        };
        let buy = help("buy");
        assert!(buy.contains(&line("10", "sold_out", "not enough stock left")));
        assert!(buy.contains(&line("2", "usage_error", "bad flags")));
        assert!(!buy.contains("drift_found"));
        let reconcile = help("reconcile");
        assert!(reconcile.contains(&line(
            "3",
            "drift_found",
            "the stock equation does not hold"
        )));
        assert!(!reconcile.contains("sold_out"));
        assert_eq!(name_of(DRIFT_FOUND), "drift_found");
        let pay = help("pay");
        assert!(pay.contains(&line("30", "already_paid", "the order is paid")));
        assert!(pay.contains(&line("16", "not_preheated", "item not preheated")));
        assert!(!help("buy").contains("already_paid"));
    }
}

//! The EXAMPLES and EXIT CODES of every subcommand's long help (`--help`,
//! and so the man pages). Examples are written once here and
//! `tests/it/help.rs` parses each with the real command line, so an example
//! cannot drift from the flags; exit codes come from `exit_codes::ALL`.

/// What `--help` says after the flags: modes, examples, safety (the exit
/// codes follow, generated from `exit_codes::ALL`).
pub(crate) const LOADTEST_HELP: &str = "\
Closed loop (the default): each connection sends its next attempt when the last one is \
answered. Simple and the reference chapter's experiment, but it HIDES STALLS: when Redis \
pauses, the clients pause with it, the attempts that shoppers would have made meanwhile \
are never made, and the percentiles barely move (coordinated omission). To ask \"at 40,000 \
attempts/s, what p99 do shoppers see?\", use open loop: --rate R with --duration D (or \
--requests N) sends on schedule whatever Redis does, and reports latency from the planned \
send time (corrected, what a shopper sees) next to the service time, plus late sends and \
dropped attempts.

Examples:
  seckill loadtest -c campaigns/moutai.yaml --redis redis://127.0.0.1:6421 --variant all
  seckill loadtest -c campaigns/moutai.yaml --variant full --rate 40000 --duration 10s
  seckill loadtest -c campaigns/moutai.yaml --variant v3 --format csv --hdr-out runs/a-
  seckill loadtest -c campaigns/moutai.yaml --variant full --max-p99 5ms --min-qps 20000
  seckill loadtest -c campaigns/moutai.yaml --variant full --wait-replicas 1 --wide

Safety: every key a load test writes lives under `seckill-loadtest:{campaign:item}:`, \
never under a live sale's `seckill:` prefix. The namespace is reset before each variant \
and deleted afterwards (unless --keep). The load test refuses to run (exit 2) when that \
namespace holds keys no load test wrote, or when the campaign is preheated on the same \
Redis (saturating it would starve the real sale).";

/// What exit 4 means, under the generated exit-code table.
pub(crate) const THRESHOLD_NOTE: &str = "A threshold fails on --max-p99, --min-qps, --fail-on-oversell, and always on \
     oversold, undersold or stock drift in a variant that promises exact books (all but v1).";

/// What 1 and 3 mean for cron, under the generated exit-code table.
pub(crate) const CRON_NOTE: &str = "1 also means an item could not be checked (not preheated, or its keys \
     expired) or the order database has no seckill schema (reconcile never creates one); drift (3) \
     wins when both happen. Redis holding nothing of an item whose orders are stored (it lost its \
     data) is drift, and `next:` says to run `preheat --recover`; from then on the orders it \
     carried over are a known loss, shown and balanced against (0). The JSON names the offending \
     order ids, and for a seat item the offending seats (proved seat by seat: every sold seat is \
     in a stored paid order, every held seat in an open reservation).";

/// Examples of `command` (as typed, e.g. `shutdown-switch`), one command line each.
pub fn examples(command: &str) -> &'static [&'static str] {
    match command {
        "init" => &[
            "seckill -c campaigns/moutai.yaml init",
            "seckill -c campaigns/moutai.yaml init --yes",
            "seckill -c campaigns/moutai.yaml init --yes --purge-orders moutai-1111",
        ],
        "preheat" => &[
            "seckill -c campaigns/moutai.yaml preheat --dry-run",
            "seckill -c campaigns/moutai.yaml preheat",
            "seckill -c campaigns/concert.yaml preheat --update-meta",
        ],
        "buy" => &[
            "seckill -c campaigns/moutai.yaml buy --item 1001 --user alice --request-id r-1",
            "seckill -c campaigns/moutai.yaml buy --item 1001 --user alice --format json",
        ],
        "shutdown-switch" => &[
            "seckill -c campaigns/moutai.yaml shutdown-switch on --reason \"payment gateway down\" --by alice",
            "seckill -c campaigns/moutai.yaml shutdown-switch status --history",
            "seckill -c campaigns/moutai.yaml shutdown-switch off --item 1001",
            "seckill -c campaigns/moutai-cluster.yaml --cluster shutdown-switch status --buckets",
        ],
        "status" => &[
            "seckill -c campaigns/moutai.yaml status",
            "seckill -c campaigns/moutai.yaml status --watch 1s",
            "seckill -c campaigns/moutai.yaml status --format json --item 1001",
            "seckill -c campaigns/moutai.yaml status --format prometheus",
            "seckill -c campaigns/moutai.yaml status --check --max-lag 1000 --reconcile-at 03:00 --quiet",
        ],
        "consume" => &[
            "seckill -c campaigns/moutai.yaml consume --drain",
            "seckill -c campaigns/moutai.yaml consume --consumer worker-1 --metrics-listen :9464",
        ],
        "pending-claim" => &[
            "seckill -c campaigns/moutai.yaml pending-claim",
            "seckill -c campaigns/moutai.yaml pending-claim --min-idle 0s --max-deliveries 3",
            "seckill -c campaigns/moutai.yaml pending-claim --delete-consumers 1h",
        ],
        "reconcile" => &[
            "seckill -c campaigns/moutai.yaml reconcile",
            "seckill -c campaigns/moutai.yaml reconcile --format json --quiet",
            "seckill -c campaigns/moutai.yaml reconcile --repair --item 1001",
        ],
        "loadtest" => &[
            "seckill -c campaigns/moutai.yaml loadtest --redis redis://127.0.0.1:6431/0 --variant all",
            "seckill -c campaigns/moutai.yaml loadtest --variant v1 --threads 50",
        ],
        "completions" => &[
            "seckill completions bash > ~/.local/share/bash-completion/completions/seckill",
            "seckill completions zsh > /usr/local/share/zsh/site-functions/_seckill",
        ],
        "man" => &["seckill man", "seckill man --out /usr/local/share/man/man1"],
        "dead-letter" => &[
            "seckill -c campaigns/moutai.yaml dead-letter list",
            "seckill -c campaigns/moutai.yaml dead-letter redrive --id 1764460800000-0",
        ],
        "pay" => &[
            "seckill -c campaigns/moutai-reservations.yaml pay --order 01M8P4NS5EX06GCT2VHVMNX9BY",
            "seckill -c campaigns/moutai-reservations.yaml pay --order 01M8P4NS5EX06GCT2VHVMNX9BY --item 3001 --format json",
        ],
        "cancel" => &[
            "seckill -c campaigns/moutai-reservations.yaml cancel --order 01M8P4NS5R15TCQ7WW9F98MDXS --reason \"changed her mind\"",
        ],
        "expire" => &[
            "seckill -c campaigns/moutai-reservations.yaml expire",
            "seckill -c campaigns/moutai-reservations.yaml expire --loop --interval 1s --batch 100",
            "seckill -c campaigns/moutai-reservations.yaml expire --loop --metrics-listen :9465",
        ],
        "doctor" => &[
            "seckill -c campaigns/moutai.yaml doctor",
            "seckill -c campaigns/moutai-cluster.yaml --cluster doctor --reconcile-at 03:00 --format json",
        ],
        "campaigns" => &[
            "seckill campaigns --redis redis://127.0.0.1:6379/0",
            "seckill -c campaigns/moutai.yaml campaigns --format json",
            "seckill campaigns --redis redis://127.0.0.1:6379/0 drop moutai-111 --dry-run",
            "seckill campaigns --redis redis://127.0.0.1:6379/0 drop moutai-111 --yes",
        ],
        "serve" => &[
            "seckill -c campaigns/moutai.yaml serve",
            "seckill -c campaigns/moutai.yaml serve --listen :8080 --max-in-flight 2048",
            "seckill -c campaigns/moutai-reservations.yaml serve --operator-token-file /etc/seckill/operator.token",
        ],
        "queue" => &[
            "seckill -c campaigns/moutai-queue.yaml queue join --item 2001 --user alice",
            "seckill -c campaigns/moutai-queue.yaml queue position --item 2001 --user alice --format json",
            "seckill -c campaigns/moutai-queue.yaml queue status",
            "seckill -c campaigns/moutai-queue.yaml queue pause --item 2001",
            "seckill -c campaigns/moutai-queue.yaml queue admit --loop --interval 100ms",
            "seckill -c campaigns/moutai-queue.yaml queue shuffle --wait",
            "seckill -c campaigns/moutai-queue.yaml queue penalize --item 2001 --user bot-7 --delay 2s",
        ],
        "register" => &[
            "seckill -c campaigns/moutai-queue.yaml register --user alice --device phone-4f2a --ip 203.0.113.7",
            "seckill -c campaigns/moutai-queue.yaml register --user bob --device tab-9 --item 2001 --format json",
        ],
        "rebalance" => &[
            "seckill -c campaigns/moutai-cluster.yaml --cluster rebalance",
            "seckill -c campaigns/moutai-cluster.yaml --cluster rebalance --watch --interval 200ms --metrics-listen :9466",
        ],
        "regions" => &[
            "seckill -c campaigns/moutai-regions.yaml regions status",
            "seckill -c campaigns/moutai-regions.yaml regions rebalance --watch --interval 100ms",
            "seckill -c campaigns/moutai-regions.yaml regions move --item 1001 --from bj --to sh --units 50",
            "seckill -c campaigns/moutai-regions.yaml regions home alice --format json",
        ],
        "scripts" => &[
            "seckill scripts list",
            "seckill scripts show buy",
            "seckill scripts show queue_join --format json",
        ],
        "acl" => &[
            "seckill -c campaigns/moutai.yaml acl --role all",
            "seckill -c campaigns/moutai.yaml acl --role buyer --password-file /etc/seckill/buyer.pw | redis-cli -u redis://admin@127.0.0.1:6379",
            "seckill -c campaigns/moutai.yaml --redis redis://admin:secret@127.0.0.1:6379 acl --role consumer --password-file consumer.pw --apply",
        ],
        // `seckill` itself: a launch day.
        "" => &[
            "seckill -c campaigns/moutai.yaml doctor",
            "seckill -c campaigns/moutai.yaml preheat",
            "seckill -c campaigns/moutai.yaml status --watch 1s",
            "seckill -c campaigns/moutai.yaml consume --metrics-listen :9464",
            "seckill -c campaigns/moutai.yaml shutdown-switch on --reason \"payment gateway down\"",
            "seckill -c campaigns/moutai.yaml reconcile --quiet",
        ],
        _ => &[],
    }
}

/// The "Examples:" paragraph of `command`'s long help.
pub(crate) fn examples_paragraph(command: &str) -> String {
    let mut text = String::from("Examples:");
    for example in examples(command) {
        text.push_str("\n  ");
        text.push_str(example);
    }
    text
}

/// The long help's closing sections of `command`: examples, then its exit codes.
pub(crate) fn long(command: &str) -> String {
    if command == "loadtest" {
        // Its own text already has modes, examples and safety, in that order.
        return format!(
            "{}\n\n{}\n\n{}",
            LOADTEST_HELP.trim_end(),
            crate::model::exit_codes::help(command),
            THRESHOLD_NOTE
        );
    }
    let before = String::new();
    let after = match command {
        "reconcile" => format!("\n\n{}", CRON_NOTE),
        "pay" | "cancel" => format!(
            "\n\nA runtime error (1) means the outcome is unknown: {} again with the same order is safe.",
            if command == "pay" {
                "paying"
            } else {
                "cancelling"
            }
        ),
        "expire" => {
            "\n\nRun it beside the sale (several at once are fine, any may be killed) or from \
                     cron: each pass releases everything due, in calls of at most --batch orders."
                .to_string()
        }
        "queue" => "\n\njoin also answers not_started (14: before starts_at, in a room without a \
                     pre-queue), ended (15) and not_preheated (16: no room in Redis). A rate room \
                     admits by the Redis clock alone; `queue admit --loop` is needed for a \
                     max_active room, a bucketed item (the fan-out) and a pre-queue (the shuffle)."
            .to_string(),
        "dead-letter" => {
            "\n\nredrive exits 0 when every selected dead letter is stored, 1 when one \
                          is still refused."
                .to_string()
        }
        _ => String::new(),
    };
    format!(
        "{before}{}\n\n{}{after}",
        examples_paragraph(command),
        crate::model::exit_codes::help(command)
    )
}

/// The long help's closing sections of `seckill` itself: a launch day, then
/// every exit code.
pub(crate) fn root() -> String {
    let mut codes = String::from("Exit codes:");
    let width = crate::model::exit_codes::ALL
        .iter()
        .map(|(_, name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (code, name, meaning) in crate::model::exit_codes::ALL {
        codes.push_str(&format!("\n  {code:>2}  {name:<width$} {meaning}"));
    }
    format!("{}\n\n{codes}", examples_paragraph(""))
}

#!/usr/bin/env bash
# What one script call costs Redis, per path of the buy scripts, against a
# textbook buy script (bench/textbook.lua: EXISTS stock, SISMEMBER buyers,
# GET, DECR, SADD, XADD; no validation), and against the bare commands an
# `ok` of buy.lua must send (bench/buy_calls.lua: what the data format costs
# by itself). The capacity of a hot item is one
# master's single thread: Redis time per attempt is the figure that decides
# how many masters a sale needs (docs/lua.md).
#
# On one throwaway redis-server: redis-benchmark drives each path's EVALSHA
# (REQUESTS calls, CLIENTS connections); before each run CONFIG RESETSTAT,
# after it `usec_per_call` of evalsha from INFO commandstats. The paths
# alternate within each round, ROUNDS rounds; the table gives each path's
# median and its ratio to the textbook's median of the same run (the
# machine is shared: single runs swing ±20-30 %, so only medians of
# alternated rounds are quoted).
#
# The sale's calls are the binary's own: `seckill loadtest --print-command
# full` gives buy.lua's EVALSHA word by word (its keys moved from the load-test
# namespace to the live one, where `seckill init` loaded the item), and the
# SHA of each script is checked against the text this script resolves from
# lua/ (lua/lib/ included the way build.rs does), so a drifted resolution
# fails here rather than measuring another script.
#
#   scripts/bench-script-cost.sh [ROUNDS=5] [REQUESTS=100000] [CLIENTS=50]
#   BEFORE=REV scripts/bench-script-cost.sh ...   also runs lua/buy.lua as it was
#       at git revision REV (its lua/lib/ included; same KEYS and ARGV): ok, sold
#       out, duplicate and request-id replay, side by side
#   ONLY=REGEX scripts/bench-script-cost.sh ...   only the paths whose name matches
# The buy calls carry the run_id of the Redis process as their last ARGV, as
# seckill's connections fill it in (the fence, docs/failover.md); one path
# sends the placeholder instead, so the script reads INFO itself. The fence's
# cost per attempt: `BEFORE=<rev before the fence> ONLY='ok, no rate|at .* ok|INFO'`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
rounds=${1:-5} requests=${2:-100000} clients=${3:-50}
. scripts/lib.sh
lib_need redis-server "apt-get install -y redis-server"
lib_need redis-benchmark "apt-get install -y redis-tools"
lib_cargo
cargo build --release --quiet
seckill="$repo/target/release/seckill"
lib_workdir
work="$LIB_WORK"
lib_start_redis bench
cli() { redis-cli -p "$REDIS_PORT" "$@"; }


# Three campaigns on the same item id: no rate limit, the headline's rate
# limit (campaigns/moutai.yaml: 10 attempts per user per second), reservations.
campaign_file() { # name extra-yaml
    cat >"$work/$1.yaml" <<YAML
campaign: bench
per_user_limit: 1
$2
items:
  - { id: "1001", name: bench, price: "1499.00", stock: 100000000 }
YAML
}
campaign_file plain ""
campaign_file rated "rate_limit: { window: 1s, max_requests: 10 }"
campaign_file reserving "payment_timeout: 15m"
export SECKILL_REDIS_URL="$REDIS_URL"
base="seckill:{bench:1001}"

# The buy call, word by word: EVALSHA sha 10 KEYS... user qty request_id order_id campaign item timeout.
eval "buy=($("$seckill" -c "$work/plain.yaml" loadtest --print-command full))"
[ "${buy[0]} ${buy[2]}" = "EVALSHA 10" ] || { echo "bench-script-cost: unexpected buy call ${buy[*]}" >&2; exit 1; }
for ((k = 3; k < 13; k++)); do buy[k]="seckill:${buy[k]#seckill-loadtest:}"; done
eval "v3=($("$seckill" -c "$work/plain.yaml" loadtest --print-command v3))"
# load SCRIPT [SHA]: SCRIPT LOAD of the resolved lua/SCRIPT; its SHA, which
# must be SHA when given (the one the binary sends).
load() {
    local sha
    sha=$(cli -x SCRIPT LOAD < <(lib_resolved_lua "$1"))
    [ -z "${2:-}" ] || [ "$sha" = "$2" ] \
        || { echo "bench-script-cost: lua/$1 resolves to SHA $sha, the binary runs $2" >&2; exit 1; }
    echo "$sha"
}
load buy.lua "${buy[1]}" >/dev/null
load v3_decr.lua "${v3[1]}" >/dev/null
bucket_sha=$(load bucket_buy.lua)
textbook_sha=$(cli -x SCRIPT LOAD <"$repo/bench/textbook.lua")
calls_sha=$(cli -x SCRIPT LOAD <"$repo/bench/buy_calls.lua")
before_sha=""
if [ -n "${BEFORE:-}" ]; then
    # lua/ as it was at BEFORE, its includes resolved the same way.
    mkdir -p "$work/before"
    git -C "$repo" archive "$BEFORE" lua | tar -x -C "$work/before"
    lib_resolved_lua buy.lua "$work/before/lua" >"$work/before.lua"
    before_sha=$(cli -x SCRIPT LOAD <"$work/before.lua")
fi

# The run_id of this Redis process: the fence's `node` ARGV, as a seckill
# connection fills it in (docs/failover.md, "The fence").
run_id=$(cli INFO server | tr -d '\r' | sed -n 's/^run_id://p')
[ ${#run_id} = 40 ] || { echo "bench-script-cost: no run_id in INFO server" >&2; exit 1; }
# buy_call USER REQUEST_ID TIMEOUT [NODE]: buy.lua's words with those ARGV
# (no ticket; NODE: the fence's run_id, by default this process's).
buy_call() {
    local words=("${buy[@]:0:13}" "$1" 1 "$2" "o__rand_int__" bench 1001 "$3" "" "" "${4:-$run_id}")
    printf '%q ' "${words[@]}"
}
# bucket_call USER COUNT: bucket_buy.lua on the item's keys (a bucket's are
# the same keys under its own tag) plus its transfer log; no credit.
bucket_call() {
    local words=(EVALSHA "$bucket_sha" 11 "${buy[@]:3:10}" "$base:xfer_in"
        "$1" 1 "" "o__rand_int__" bench 1001 0 "$2" "" 0 0 "" "" "$run_id")
    printf '%q ' "${words[@]}"
}

# Each path: name | campaign file | state after `init --yes` | the call.
paths=(
    "textbook ok|plain|textbook_stock 100000000|EVALSHA $textbook_sha 3 tb:stock tb:buyers tb:orders u__rand_int__ o__rand_int__"
    "textbook sold out|plain|textbook_stock 0|EVALSHA $textbook_sha 3 tb:stock tb:buyers tb:orders u__rand_int__ o__rand_int__"
    "buy ok's calls alone (bench/buy_calls.lua)|plain||EVALSHA $calls_sha ${buy[*]:2:11} u__rand_int__ 1 '' o__rand_int__ bench 1001 0"
    "buy ok, no rate limit|plain||$(buy_call u__rand_int__ '' 0)"
    "buy ok, rate limit on|rated||$(buy_call u__rand_int__ '' 0)"
    "buy ok, fence without the run_id (INFO in the script)|plain||$(buy_call u__rand_int__ '' 0 '?node')"
    "buy sold out, no rate limit|plain|stock 0|$(buy_call u__rand_int__ '' 0)"
    "buy sold out, rate limit on|rated|stock 0|$(buy_call u__rand_int__ '' 0)"
    "buy sold out, with a request id|plain|stock 0|$(buy_call u__rand_int__ r__rand_int__ 0)"
    "buy duplicate|plain|bought dup|$(buy_call dup '' 0)"
    "buy rate-limited|rated|limited hot|$(buy_call hot '' 0)"
    "buy request-id replay|plain|replay again r1|$(buy_call again r1 0)"
    "buy reservation ok|reserving||$(buy_call u__rand_int__ '' 900000)"
    "bucket_buy home-hit ok|plain||$(bucket_call u__rand_int__ 1)"
    "bucket_buy sold out, proven|plain|proven|$(bucket_call u__rand_int__ 1)"
    "v3 (DECR only)|plain||${v3[*]}"
)
if [ -n "$before_sha" ]; then
    before_call() { buy_call "$@" | sed "s/^EVALSHA [0-9a-f]*/EVALSHA $before_sha/"; }
    paths+=(
        "buy.lua at $BEFORE ok, no rate limit|plain||$(before_call u__rand_int__ '' 0)"
        "buy.lua at $BEFORE sold out, no rate limit|plain|stock 0|$(before_call u__rand_int__ '' 0)"
        "buy.lua at $BEFORE duplicate|plain|bought dup|$(before_call dup '' 0)"
        "buy.lua at $BEFORE request-id replay|plain|replay again r1|$(before_call again r1 0)"
    )
fi
# ONLY=REGEX keeps the paths whose name matches (e.g. a quick side-by-side
# of two paths with more rounds).
if [ -n "${ONLY:-}" ]; then
    kept=()
    for path in "${paths[@]}"; do
        [[ "${path%%|*}" =~ $ONLY ]] && kept+=("$path")
    done
    paths=("${kept[@]}")
fi

# The state a path starts from, after `init --yes` loaded the item.
prepare() { # campaign state...
    # The previous path's orders were never consumed: init names them and
    # deletes them only when told which campaign (`--purge-orders`).
    "$seckill" -c "$work/$1.yaml" init --yes --purge-orders bench >/dev/null
    cli DEL tb:stock tb:buyers tb:orders >/dev/null
    case "${2:-}" in
        textbook_stock) cli SET tb:stock "$3" >/dev/null ;;
        stock) cli SET "$base:stock" "$3" >/dev/null ;;
        bought) "$seckill" -c "$work/$1.yaml" buy --item 1001 --user "$3" >/dev/null ;;
        limited) for _ in $(seq 12); do "$seckill" -c "$work/rated.yaml" buy --item 1001 --user "$3" >/dev/null || true; done ;;
        replay) "$seckill" -c "$work/$1.yaml" buy --item 1001 --user "$3" --request-id "$4" >/dev/null ;;
        proven) cli SET "$base:stock" 0 >/dev/null; cli HSET "$base:meta" sold_out 1 >/dev/null ;;
        "") ;;
    esac
}

results="$work/results"
: >"$results"
lib_bench_header
echo "$requests calls per run, $clients clients, $rounds alternated rounds; $(date -u +%Y-%m-%d)"
for round in $(seq "$rounds"); do
    for path in "${paths[@]}"; do
        IFS='|' read -r name campaign state call <<<"$path"
        # shellcheck disable=SC2086 # the state's words are separate arguments
        prepare "$campaign" $state
        cli CONFIG RESETSTAT >/dev/null
        eval "redis-benchmark -p $REDIS_PORT -n $requests -c $clients -r 100000000 $call" >/dev/null 2>&1 \
            || { echo "bench-script-cost: $name: redis-benchmark failed: $call" >&2; exit 1; }
        usec=$(lib_evalsha_usec)
        [ "$usec" != failed ] || { echo "bench-script-cost: $name: the script failed (redis-cli -p $REDIS_PORT; call: $call)" >&2; exit 1; }
        printf '%s|%s\n' "$name" "$usec" >>"$results"
    done
    echo "round $round done" >&2
done

# Medians, then each path against the textbook's path of the same outcome.
awk -F'|' "$LIB_AWK_MEDIAN"'
    { v[$1] = v[$1] " " $2; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
    END {
        for (i = 1; i <= n; i++) m[order[i]] = median(v[order[i]])
        ok = m["textbook ok"]; so = m["textbook sold out"]; plain = m["buy ok, no rate limit"]
        print "| path | Redis µs per call (median) | rounds | ratio |"
        print "|---|---|---|---|"
        for (i = 1; i <= n; i++) {
            p = order[i]; r = ""
            if (p ~ /^textbook/ || p ~ /^v3/) r = "—"
            else if (p ~ /sold out/) r = sprintf("%.2f× textbook sold out", m[p] / so)
            else if (p ~ /calls alone/) r = sprintf("%.2f× textbook ok", m[p] / ok)
            else if (p == "buy reservation ok" || p == "bucket_buy home-hit ok") r = sprintf("%.2f× textbook ok, %.2f× buy ok", m[p] / ok, m[p] / plain)
            else r = sprintf("%.2f× textbook ok", m[p] / ok)
            printf "| %s | %.1f | %s | %s |\n", p, m[p], v[p], r
        }
    }' "$results"

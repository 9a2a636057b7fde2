#!/usr/bin/env bash
# The headline job on a fresh Debian/Ubuntu machine with Rust: install
# redis-server if missing, start a throwaway Redis on a free port, and run a
# launch rehearsal with the real binary: preheat, buys (ok, duplicate,
# sold_out), the kill switch, status; the orders into SQLite and the nightly
# reconcile; then the V1-V4 load test that shows why the Lua design wins.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-servers.sh
cargo build --release --quiet
seckill=target/release/seckill

. scripts/lib.sh
lib_workdir
dir=$LIB_WORK
lib_start_redis sale
export SECKILL_REDIS_URL="$REDIS_URL"
echo "# throwaway Redis at $SECKILL_REDIS_URL"

# Shows each command as it can be pasted: an argument with a space is quoted.
run() {
    local shown="" arg
    for arg in "$@"; do
        case "$arg" in *" "*) shown+=" \"$arg\"" ;; *) shown+=" $arg" ;; esac
    done
    echo; echo "\$ seckill$shown"
    "$seckill" "$@" || echo "(exit code $?)"
}
run -c campaigns/moutai.yaml preheat
run -c campaigns/moutai.yaml preheat
run -c campaigns/moutai.yaml buy --item 1001 --user alice --request-id req-alice-1
run -c campaigns/moutai.yaml buy --item 1001 --user alice --request-id req-alice-1
run -c campaigns/moutai.yaml buy --item 1001 --user alice
run -c campaigns/iphone.yaml preheat --item max-1t-gold
echo; echo "\$ for u in \$(seq 10); do seckill -c campaigns/iphone.yaml buy --item max-1t-gold --user fan-\$u --format json; done | grep -c '\"ok\"'"
for u in $(seq 10); do "$seckill" -c campaigns/iphone.yaml buy --item max-1t-gold --user "fan-$u" --format json || true; done | grep -c '"outcome": "ok"'
run -c campaigns/iphone.yaml buy --item max-1t-gold --user fan-11
run -c campaigns/moutai.yaml shutdown-switch on --reason "payment gateway down" --by alice
run -c campaigns/moutai.yaml buy --item 1001 --user bob
run -c campaigns/moutai.yaml shutdown-switch status
run -c campaigns/moutai.yaml shutdown-switch off
run -c campaigns/moutai.yaml shutdown-switch status --history
run -c campaigns/moutai.yaml status
export SECKILL_ORDERS_DB="sqlite://$dir/orders.db"
run -c campaigns/moutai.yaml consume --drain
run -c campaigns/iphone.yaml consume --drain
run -c campaigns/moutai.yaml reconcile
run -c campaigns/moutai.yaml status --format prometheus
# loadtest refuses a Redis that carries a live sale: rehearse on a second one.
lib_start_redis rehearsal
echo; echo "# a second throwaway Redis for the load test at $REDIS_URL"
run -c campaigns/moutai.yaml --redis "$REDIS_URL" loadtest --variant all

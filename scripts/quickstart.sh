#!/usr/bin/env bash
# The headline job on a fresh Debian/Ubuntu machine with Rust: install
# redis-server if missing, start a throwaway Redis on a free port, and run a
# launch rehearsal with the real binary: preheat, buys (ok, duplicate,
# sold_out), the kill switch, status; the orders into SQLite and the nightly
# reconcile; then the V1-V4 load test that shows why the Lua design wins.
# SECKILL_BIN=PATH runs that binary instead of building the release one;
# QUICKSTART_SKIP_LOADTEST=1 stops before the load test (tests/it/quickstart.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-servers.sh
if [ -n "${SECKILL_BIN:-}" ]; then
    seckill="$(realpath "$SECKILL_BIN")"
else
    cargo build --release --quiet
    seckill="$PWD/target/release/seckill"
fi

. scripts/lib.sh
lib_workdir
dir=$LIB_WORK
# Persisting as a sale's Redis must (preheat warns about one that does not).
lib_start_redis sale --appendonly yes --appendfsync always
# The demo's own copies of the shipped campaign files, their `redis:` the
# throwaway Redis: every command goes there with nothing to override (a
# SECKILL_REDIS_URL would warn before each command that it overrides the file).
mkdir -p "$dir/demo/campaigns"
for name in moutai iphone; do
    sed -e '/^redis:/d' -e "/^campaign:/a redis: $REDIS_URL" \
        "campaigns/$name.yaml" >"$dir/demo/campaigns/$name.yaml"
done
cd "$dir/demo"
echo "# throwaway Redis at $REDIS_URL; the demo's campaign files (copies of"
echo "# the shipped ones, redis: pointing at it) are in $dir/demo/campaigns"

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
[ "${QUICKSTART_SKIP_LOADTEST:-}" = 1 ] && exit 0
# loadtest refuses a Redis that carries a live sale: rehearse on a second one.
lib_start_redis rehearsal
echo; echo "# a second throwaway Redis for the load test at $REDIS_URL"
run -c campaigns/moutai.yaml --redis "$REDIS_URL" loadtest --variant all

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

dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
# start_redis NAME: a throwaway redis-server on a free port; prints the port.
start_redis() {
  local port
  for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 20000))
    if redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
         --daemonize yes --pidfile "$dir/$1.pid" >/dev/null 2>&1; then
      for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
      if redis-cli -p "$port" ping >/dev/null 2>&1; then echo "$port"; return; fi
    fi
  done
  echo "could not start redis-server" >&2; exit 1
}
port=$(start_redis sale); pids+=("$(cat "$dir/sale.pid")")
export SECKILL_REDIS_URL="redis://127.0.0.1:$port/0"
echo "# throwaway Redis at $SECKILL_REDIS_URL"

run() { echo; echo "\$ seckill $*"; "$seckill" "$@" || echo "(exit code $?)"; }
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
rehearsal=$(start_redis rehearsal); pids+=("$(cat "$dir/rehearsal.pid")")
echo; echo "# a second throwaway Redis for the load test at redis://127.0.0.1:$rehearsal/0"
run -c campaigns/moutai.yaml --redis "redis://127.0.0.1:$rehearsal/0" loadtest --variant all

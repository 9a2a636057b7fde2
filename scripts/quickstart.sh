#!/usr/bin/env bash
# The headline job on a fresh Debian/Ubuntu machine with Rust: install
# redis-server if missing, start a throwaway Redis on a free port, and run a
# launch rehearsal with the real binary: preheat, buys (ok, duplicate,
# sold_out), the kill switch, status.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-servers.sh
cargo build --release --quiet
seckill=target/release/seckill

dir=$(mktemp -d)
for _ in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 20000))
  if redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
       --daemonize yes --pidfile "$dir/redis.pid" >/dev/null 2>&1; then
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
  fi
done
trap 'kill "$(cat "$dir/redis.pid")" 2>/dev/null; rm -rf "$dir"' EXIT
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
run -c campaigns/moutai.yaml shutdown-switch on --reason "payment gateway down"
run -c campaigns/moutai.yaml buy --item 1001 --user bob
run -c campaigns/moutai.yaml shutdown-switch status

#!/usr/bin/env bash
# What one `seckill status` sample costs Redis per item since it also lists
# the group's consumers: Redis time per call (INFO commandstats, after CONFIG
# RESETSTAT) of the status script (EVALSHA item_status) and of XINFO
# CONSUMERS, measured together in each round on a live-looking item (ORDERS
# orders in its stream, CONSUMERS consumers in its group), medians of ROUNDS.
#
#   scripts/bench-status.sh [ROUNDS] [SAMPLES] [ORDERS] [CONSUMERS]   (defaults 5 200 20000 4)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
rounds=${1:-5}
samples=${2:-200}
orders=${3:-20000}
consumers=${4:-4}
lib_cargo
cargo build --release --quiet
bin=target/release/seckill
lib_workdir
lib_start_redis status
file="$LIB_WORK/bench.yaml"
printf 'campaign: bench\nkeep_after_end: 2h\nitems:\n  - { id: "1", name: Bottle, price: "1.00", stock: 1000000 }\norders:\n  store: sqlite://%s/orders.db\n' "$LIB_WORK" >"$file"
run() { "$bin" -c "$file" --redis "$REDIS_URL" "$@"; }
run preheat >/dev/null 2>&1
# Orders in the stream, and consumers in the group holding some of them.
stream='seckill:{bench:1}:orders'
for i in $(seq "$orders"); do echo "XADD $stream * order_id o$i"; done | redis-cli -p "$REDIS_PORT" >/dev/null
for c in $(seq "$consumers"); do
  redis-cli -p "$REDIS_PORT" XREADGROUP GROUP orders-db "worker-$c" COUNT 10 STREAMS "$stream" '>' >/dev/null
done
usec() { redis-cli -p "$REDIS_PORT" info commandstats | tr -d '\r' | awk -F'[=,]' -v name="cmdstat_$1:calls" '$1 == name { print $6 }'; }
echo "seckill $(git rev-parse --short HEAD 2>/dev/null || echo '?'), release build; $(redis-server --version | awk '{print $1, $2, $3}'); $(nproc) cores"
echo "$samples status samples per round (status --format prometheus: one sample each), $orders orders in the stream, $consumers consumers"
printf '| round | item_status µs/call | XINFO CONSUMERS µs/call | XINFO / script |\n|---|---|---|---|\n'
declare -a script=() xinfo=()
for round in $(seq "$rounds"); do
  redis-cli -p "$REDIS_PORT" config resetstat >/dev/null
  for i in $(seq "$samples"); do run status --format prometheus >/dev/null; done
  s=$(usec evalsha) x=$(usec 'xinfo|consumers')
  printf '| %s | %s | %s | %s |\n' "$round" "$s" "$x" "$(awk -v a="$x" -v b="$s" 'BEGIN { printf "%.2f", a / b }')"
  script+=("$s") xinfo+=("$x")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
s=$(median "${script[@]}") x=$(median "${xinfo[@]}")
echo "median Redis µs per call: item_status $s, XINFO CONSUMERS $x: the consumer list adds $(awk -v a="$x" -v b="$s" 'BEGIN { printf "%.2f", a / b }')× the script's time"

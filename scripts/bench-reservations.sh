#!/usr/bin/env bash
# What a reservation costs the buy path: redis-benchmark runs the very same
# EVALSHA of lua/buy.lua (from `seckill loadtest --print-command full`) with
# payment_timeout_ms 0 (an ok is final) and 900000 (an ok is a 15-minute
# reservation: record, deadline, counters), alternating, on one throwaway
# Redis; prints each round and the median of the per-round ratios.
#
#   scripts/bench-reservations.sh [ROUNDS=7] [REQUESTS=100000] [CLIENTS=50]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7} requests=${2:-100000} clients=${3:-50}
. scripts/lib.sh
lib_cargo
cargo build --release --quiet
seckill=target/release/seckill
lib_workdir
lib_start_redis bench
cat >"$LIB_WORK/c.yaml" <<YAML
campaign: bench
items:
  - { id: "1001", name: bench, price: "1.00", stock: 1 }
YAML
# A preheated load-test namespace with stock for every request of every round.
"$seckill" -c "$LIB_WORK/c.yaml" --redis "$REDIS_URL" loadtest --variant full \
  --requests 1 --threads 1 --stock 100000000 --keep >/dev/null
final=$("$seckill" -c "$LIB_WORK/c.yaml" --redis "$REDIS_URL" loadtest --print-command full)
[ "${final: -2}" = " 0" ] || { echo "the buy call no longer ends in payment_timeout_ms" >&2; exit 1; }
reserve="${final% 0} 900000"
echo "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on port $REDIS_PORT; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "requests $requests, clients $clients, rounds $rounds"
rps() { eval "redis-benchmark -p $REDIS_PORT -n $requests -c $clients -r 100000000 --csv $1" 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"'; }
ratios=()
for round in $(seq "$rounds"); do
  a=$(rps "$final"); b=$(rps "$reserve")
  ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
  ratios+=("$ratio")
  printf 'round %d: final %8.0f req/s   reservation %8.0f req/s   ratio %s\n' "$round" "$a" "$b" "$ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END { printf "median ratio reservation/final: %.3f\n", r[int((NR + 1) / 2)] }'

#!/usr/bin/env bash
# bench-vs-redis-benchmark.sh — is `seckill loadtest` as fast a client as redis-benchmark?
#
# Starts a throwaway redis-server on a free loopback port, then for each script
# variant (v3, full) runs, in alternating order for several rounds:
#   * seckill loadtest --variant V --threads N --requests R [--pipeline P]
#   * redis-benchmark -c N -n R [-P P] sending the very same EVALSHA
#     (same script, same keys, same stock) against the same server,
# and prints each round's figures, the ratio of the means and the median of
# the per-round ratios (robust to a round disturbed by other work on the machine).
# Both start from the same stock, so both do the same mix of sales and
# sold-out answers. The server is killed on exit.
#
# Usage: scripts/bench-vs-redis-benchmark.sh [--threads N] [--requests N] [--rounds N]
#                                            [--pipeline N] [--stock N] [--variants "v3 full"]
set -euo pipefail
cd "$(dirname "$0")/.."

threads=100
requests=300000
rounds=7
pipeline=1
stock=1000
variants="v3 full"
campaign=campaigns/moutai.yaml
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --pipeline) pipeline=$2; shift 2 ;;
    --stock) stock=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

. scripts/lib.sh
lib_need redis-server "apt-get install redis-server"
lib_need redis-cli "apt-get install redis-tools"
lib_need redis-benchmark "apt-get install redis-tools"

cargo build --release --quiet
seckill=target/release/seckill

lib_start_redis bench --loglevel warning
port=$REDIS_PORT
url=$REDIS_URL

# The exact EVALSHA each variant sends, from the binary (one source of the
# scripts' KEYS/ARGV order); `__rand_int__` is redis-benchmark's placeholder.
# The scripts themselves are loaded by the warm-up run of seckill below.
eval "v3_command=($("$seckill" loadtest -c "$campaign" --print-command v3))"
eval "full_command=($("$seckill" loadtest -c "$campaign" --print-command full))"
# EVALSHA sha numkeys meta stock buyers buyer_orders ...
stock_key=${full_command[4]}
buyer_keys=("${full_command[5]}" "${full_command[6]}")

echo "redis-server $(redis-server --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p') on port $port; $(nproc) cores"
echo "threads/connections $threads, requests $requests, pipeline $pipeline, stock $stock, rounds $rounds"

# seckill loadtest; --keep leaves the namespace for redis-benchmark's turn.
seckill_qps() {
  "$seckill" loadtest -c "$campaign" --redis "$url" --variant "$1" --threads "$threads" \
    --requests "$requests" --pipeline "$pipeline" --stock "$stock" --keep --format json \
    | sed -n 's/^ *"qps": \([0-9.]*\),*$/\1/p'
}

# redis-benchmark on the same namespace, from the same stock and no buyers.
benchmark_rps() {
  redis-cli -p "$port" SET "$stock_key" "$stock" >/dev/null
  redis-cli -p "$port" DEL "${buyer_keys[@]}" >/dev/null
  local command
  case "$1" in
    v3) command=("${v3_command[@]}") ;;
    full) command=("${full_command[@]}") ;;
  esac
  redis-benchmark -p "$port" -c "$threads" -n "$requests" -P "$pipeline" -r "$requests" --csv \
    "${command[@]}" | tail -1 | cut -d'"' -f4
}

for variant in $variants; do
  case "$variant" in v3|full) ;; *) echo "variant $variant: only v3 and full send one script call per request" >&2; exit 2 ;; esac
  seckill_qps "$variant" >/dev/null   # warm-up: creates the namespace, warms caches
  ours_total=0
  theirs_total=0
  ratios=()
  for round in $(seq "$rounds"); do
    if [ $((round % 2)) -eq 1 ]; then
      ours=$(seckill_qps "$variant"); theirs=$(benchmark_rps "$variant")
    else
      theirs=$(benchmark_rps "$variant"); ours=$(seckill_qps "$variant")
    fi
    ours_total=$(awk -v a="$ours_total" -v b="$ours" 'BEGIN { print a + b }')
    theirs_total=$(awk -v a="$theirs_total" -v b="$theirs" 'BEGIN { print a + b }')
    ratios+=("$(awk -v o="$ours" -v t="$theirs" 'BEGIN { print 100 * o / t }')")
    awk -v v="$variant" -v r="$round" -v o="$ours" -v t="$theirs" \
      'BEGIN { printf "%-4s round %d: seckill %8.0f req/s   redis-benchmark %8.0f req/s   ratio %5.1f%%\n", v, r, o, t, 100 * o / t }'
  done
  awk -v v="$variant" -v o="$ours_total" -v t="$theirs_total" -v n="$rounds" \
    'BEGIN { printf "%-4s mean:    seckill %8.0f req/s   redis-benchmark %8.0f req/s   ratio %5.1f%%\n", v, o / n, t / n, 100 * o / t }'
  median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ r[NR] = $1 } END { print (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2 }')
  printf '%-4s median of the per-round ratios: %5.1f%%\n' "$variant" "$median"
done

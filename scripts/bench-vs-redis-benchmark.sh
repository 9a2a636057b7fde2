#!/usr/bin/env bash
# bench-vs-redis-benchmark.sh — is `seckill loadtest` as fast a client as redis-benchmark?
#
# Starts a throwaway redis-server on a free loopback port, then for each script
# variant (v3, full) and each pipeline depth (1 and 16 by default) runs, in
# alternating order for several rounds:
#   * seckill loadtest --variant V --connections N --requests R --pipeline P
#   * redis-benchmark -c N -n R -P P sending the very same EVALSHA
#     (same script, same keys, same stock) against the same server,
# and prints each round's rates, the median of the per-round ratios (robust
# to a round disturbed by other work on the machine) and each client's CPU
# time per request (user + sys from getrusage, via /usr/bin/time), including
# its start-up. Both start from the same stock, so both do the same mix of
# sales and sold-out answers. The server is killed on exit.
#
# Usage: scripts/bench-vs-redis-benchmark.sh [--connections N] [--requests N] [--rounds N]
#          [--pipelines "1 16"] [--stock N] [--variants "v3 full"]
set -euo pipefail
cd "$(dirname "$0")/.."

connections=100
requests=300000
rounds=5
pipelines="1 16"
stock=1000
variants="v3 full"
campaign=campaigns/moutai.yaml
while [ $# -gt 0 ]; do
  case "$1" in
    --connections) connections=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --pipelines) pipelines=$2; shift 2 ;;
    --stock) stock=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

. scripts/lib.sh
lib_need redis-server "apt-get install redis-server"
lib_need redis-cli "apt-get install redis-tools"
lib_need redis-benchmark "apt-get install redis-tools"
lib_need /usr/bin/time "apt-get install time"

cargo build --release --quiet
seckill=target/release/seckill

lib_start_redis bench --loglevel warning
port=$REDIS_PORT
url=$REDIS_URL
workdir=$LIB_WORK

# The exact EVALSHA each variant sends, from the binary (one source of the
# scripts' KEYS/ARGV order); `__rand_int__` is redis-benchmark's placeholder.
# The scripts themselves are loaded by the warm-up run of seckill below.
eval "v3_command=($("$seckill" loadtest -c "$campaign" --print-command v3))"
eval "full_command=($("$seckill" loadtest -c "$campaign" --print-command full))"
# EVALSHA sha numkeys meta stock buyers buyer_orders ...
stock_key=${full_command[4]}
buyer_keys=("${full_command[5]}" "${full_command[6]}")

echo "redis-server $(redis-server --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p') on port $port; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "connections $connections, requests $requests, stock $stock, rounds $rounds (alternating), pipelines $pipelines"

# `rate cpu_us_per_request` of one seckill run; --keep leaves the namespace for redis-benchmark's turn.
seckill_run() {
  local variant=$1 pipeline=$2
  /usr/bin/time -f '%U %S' -o "$workdir/time" "$seckill" loadtest -c "$campaign" --redis "$url" \
    --variant "$variant" --connections "$connections" --requests "$requests" \
    --pipeline "$pipeline" --stock "$stock" --keep --format json >"$workdir/out"
  local rate
  rate=$(sed -n 's/^ *"qps": \([0-9.]*\),*$/\1/p' "$workdir/out" | head -1)
  awk -v r="$rate" -v n="$requests" '{ printf "%s %.2f\n", r, ($1 + $2) * 1e6 / n }' "$workdir/time"
}

# The same for redis-benchmark on the same namespace, from the same stock and no buyers.
benchmark_run() {
  local variant=$1 pipeline=$2 command
  redis-cli -p "$port" SET "$stock_key" "$stock" >/dev/null
  redis-cli -p "$port" DEL "${buyer_keys[@]}" >/dev/null
  case "$variant" in
    v3) command=("${v3_command[@]}") ;;
    full) command=("${full_command[@]}") ;;
  esac
  /usr/bin/time -f '%U %S' -o "$workdir/time" redis-benchmark -p "$port" -c "$connections" \
    -n "$requests" -P "$pipeline" -r "$requests" --csv "${command[@]}" >"$workdir/out"
  local rate
  rate=$(tail -1 "$workdir/out" | cut -d'"' -f4)
  awk -v r="$rate" -v n="$requests" '{ printf "%s %.2f\n", r, ($1 + $2) * 1e6 / n }' "$workdir/time"
}

median() {
  sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

summary=()
for variant in $variants; do
  case "$variant" in v3|full) ;; *) echo "variant $variant: only v3 and full send one script call per request" >&2; exit 2 ;; esac
  for pipeline in $pipelines; do
    seckill_run "$variant" "$pipeline" >/dev/null   # warm-up: creates the namespace, warms caches
    ratios=(); ours_cpu=(); theirs_cpu=(); ours_rates=(); theirs_rates=()
    for round in $(seq "$rounds"); do
      if [ $((round % 2)) -eq 1 ]; then
        read -r ours ours_us < <(seckill_run "$variant" "$pipeline")
        read -r theirs theirs_us < <(benchmark_run "$variant" "$pipeline")
      else
        read -r theirs theirs_us < <(benchmark_run "$variant" "$pipeline")
        read -r ours ours_us < <(seckill_run "$variant" "$pipeline")
      fi
      ratios+=("$(awk -v o="$ours" -v t="$theirs" 'BEGIN { print o / t }')")
      ours_cpu+=("$ours_us"); theirs_cpu+=("$theirs_us")
      ours_rates+=("$ours"); theirs_rates+=("$theirs")
      awk -v v="$variant" -v p="$pipeline" -v r="$round" -v o="$ours" -v t="$theirs" -v oc="$ours_us" -v tc="$theirs_us" \
        'BEGIN { printf "%-4s P%-2s round %d: seckill %8.0f req/s %5.2f us/req   redis-benchmark %8.0f req/s %5.2f us/req   ratio %.3f\n", v, p, r, o, oc, t, tc, o / t }'
    done
    summary+=("$(printf '| %s | %s | %.0f | %.0f | **%.3f×** | %.2f | %.2f |' "$variant" "$pipeline" \
      "$(printf '%s\n' "${ours_rates[@]}" | median)" "$(printf '%s\n' "${theirs_rates[@]}" | median)" \
      "$(printf '%s\n' "${ratios[@]}" | median)" \
      "$(printf '%s\n' "${ours_cpu[@]}" | median)" "$(printf '%s\n' "${theirs_cpu[@]}" | median)")")
  done
done

echo
echo "Medians over $rounds alternating rounds ($connections connections, $requests requests each):"
echo
echo "| variant | pipeline | seckill req/s | redis-benchmark req/s | ratio (median of rounds) | seckill CPU µs/req | redis-benchmark CPU µs/req |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"

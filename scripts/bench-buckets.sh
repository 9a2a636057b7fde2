#!/usr/bin/env bash
# What buckets cost and buy (docs/buckets.md), on a local Redis Cluster
# (scripts/cluster.sh: 3 masters + 3 replicas; started here when not running,
# and stopped again at the end). One hot item, `seckill loadtest --variant full`
# with 1, 4 and 8 buckets, uniform and skewed users (skewed: every user's home
# is one of 2 buckets). Per run, from the load test's JSON and each master's
# INFO commandstats / INFO cpu (reset before each run):
#   buys/s, oversold, undersold (units left while someone was told sold_out),
#   round trips per successful buy (mean, p99), transfer share,
#   each master's share of the script calls,
#   Redis CPU per successful buy (µs: script time from commandstats, and the
#   servers' whole user+sys CPU from INFO cpu),
# then the projected capacity of an M-master cluster from the CPU figure.
#
#   scripts/bench-buckets.sh [REQUESTS] [STOCK] [THREADS]   (defaults 60000 50000 50)
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${1:-60000}
stock=${2:-50000}
threads=${3:-50}
cargo build --release --quiet
bin=target/release/seckill
base=${SECKILL_CLUSTER_PORT:-21001}
export SECKILL_CLUSTER_PORT=$base
started_here=0
if ! redis-cli -p "$base" cluster info 2>/dev/null | grep -q cluster_state:ok; then
  SECKILL_CLUSTER_AOF=no scripts/cluster.sh up >/dev/null
  started_here=1
fi
trap 'if [ "$started_here" = 1 ]; then scripts/cluster.sh down >/dev/null; fi' EXIT
seeds="redis://127.0.0.1:$base,redis://127.0.0.1:$((base + 1)),redis://127.0.0.1:$((base + 2))"
masters=$(redis-cli -p "$base" cluster nodes | awk '$3 ~ /master/ { split($2, a, "[:@]"); print a[2] }' | sort -n)
# Not the shipped cluster campaign: `loadtest` refuses a Redis carrying that sale.
campaign=campaigns/moutai.yaml

# cpu_us PORT: the server's user+sys CPU so far, in µs.
cpu_us() { redis-cli -p "$1" info cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.0f", s * 1e6 }'; }
# stat PORT CMD FIELD: a field of one cmdstat line (0 when the command was not called).
stat() { redis-cli -p "$1" info commandstats | tr -d '\r' | awk -F'[:,=]' -v c="cmdstat_$2" -v f="$3" \
  '$1 == c { for (i = 2; i < NF; i += 2) if ($i == f) v = $(i + 1) } END { print v + 0 }'; }

echo "seckill $(git rev-parse --short HEAD 2>/dev/null || echo '?'), release build; $(redis-server --version | awk '{print $1, $2, $3}'); $(nproc) cores"
echo "cluster: masters on ports $(echo $masters | tr ' ' ','), 1 replica each; $requests requests, stock $stock, $threads threads"
printf '| buckets | users | buys/s | ok | oversold | undersold | round trips/ok mean | p99 | transfer share | script calls per master | script µs/ok | Redis CPU µs/ok |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
cpu_per_ok_8=""
for run in "1 uniform" "4 uniform" "4 skewed" "8 uniform" "8 skewed"; do
  set -- $run
  buckets=$1 demand=$2
  args=(--variant full --requests "$requests" --stock "$stock" --connections "$threads" --format json)
  [ "$buckets" -gt 1 ] && args+=(--buckets "$buckets")
  [ "$demand" = skewed ] && args+=(--hot-buckets 2)
  declare -A cpu_before=()
  for m in $masters; do redis-cli -p "$m" config resetstat >/dev/null; cpu_before[$m]=$(cpu_us "$m"); done
  json=$("$bin" -c "$campaign" --redis "$seeds" --cluster loadtest "${args[@]}")
  # The JSON envelope: `variants` without --buckets, `buckets` with it.
  row=$(echo "$json" | jq -c 'if .buckets then .buckets else .variants[0] end')
  calls="" total_calls=0 script_us=0 cpu=0
  for m in $masters; do
    c=$(stat "$m" evalsha calls); total_calls=$((total_calls + c))
    script_us=$((script_us + $(stat "$m" evalsha usec) + $(stat "$m" zrem usec)))
    cpu=$((cpu + $(cpu_us "$m") - ${cpu_before[$m]}))
    calls="$calls $c"
  done
  shares=$(for c in $calls; do awk -v c="$c" -v t="$total_calls" 'BEGIN { printf "%.0f%% ", 100 * c / t }'; done)
  ok=$(echo "$row" | jq .succeeded)
  echo "$row" | jq -r --arg b "$buckets" --arg d "$demand" --arg shares "${shares% }" \
    --arg sus "$(awk -v u="$script_us" -v o="$ok" 'BEGIN { printf "%.1f", u / o }')" \
    --arg cus "$(awk -v u="$cpu" -v o="$ok" 'BEGIN { printf "%.1f", u / o }')" \
    '"| \($b) | \($d) | \(.qps | floor) | \(.succeeded) | \(.oversold) | \(.undersold // (if .sold_out > 0 then .final_stock else 0 end)) | \(.round_trips_per_ok_mean // 1 | . * 100 | round / 100) | \(.round_trips_per_ok_p99 // 1) | \(.transfer_share // 0 | . * 1000 | round / 10)% | \($shares) | \($sus) | \($cus) |"'
  if [ "$buckets" = 8 ] && [ "$demand" = uniform ]; then
    cpu_per_ok_8=$(awk -v u="$cpu" -v o="$ok" 'BEGIN { printf "%.1f", u / o }')
  fi
  unset cpu_before
done
echo
echo "Projection from the 8-bucket uniform run (${cpu_per_ok_8} µs of Redis CPU per successful buy, each master"
echo "one core for its main thread, load spread evenly as the call shares above show):"
for m in 1 3 8 16 32; do
  awk -v m="$m" -v u="$cpu_per_ok_8" 'BEGIN { printf "  %2d masters: about %.0f successful buys/s\n", m, m * 1e6 / u }'
done

#!/usr/bin/env bash
# What `--wait-replicas 1` costs the buy path: `seckill loadtest --variant full`
# on a local master + replica (both started here, no persistence), rounds
# alternating without and with `--wait-replicas 1` so both sides see the same
# machine load; prints each round's buys/s and p99, and the ratio of medians.
#
#   scripts/bench-wait-replicas.sh [ROUNDS] [REQUESTS] [CONNECTIONS]   (defaults 3 100000 50)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
rounds=${1:-3}
requests=${2:-100000}
connections=${3:-50}
lib_need jq "apt-get install jq"
lib_cargo
cargo build --release --quiet
bin=target/release/seckill
lib_workdir
lib_start_redis master
master_port=$REDIS_PORT master_url=$REDIS_URL
lib_start_redis replica --replicaof 127.0.0.1 "$master_port"
for i in $(seq 100); do
  redis-cli -p "$master_port" info replication | grep -q 'state=online' && break
  sleep 0.1
done
redis-cli -p "$master_port" info replication | grep -q 'state=online' || { echo "the replica never synced" >&2; exit 1; }

echo "seckill $(git rev-parse --short HEAD 2>/dev/null || echo '?'), release build; $(redis-server --version | awk '{print $1, $2, $3}'); $(nproc) cores"
echo "loadtest --variant full, $requests requests (stock = requests: every buy sells), $connections connections, master + 1 replica on loopback"
printf '| round | wait | buys/s | p99 ms | ok | unreplicated | verdict |\n|---|---|---|---|---|---|---|\n'
declare -a plain=() waited=()
for round in $(seq "$rounds"); do
  for wait in no yes; do
    args=(--variant full --requests "$requests" --stock "$requests" --connections "$connections" --format json)
    [ "$wait" = yes ] && args+=(--wait-replicas 1 --wait-timeout 1s)
    row=$("$bin" -c campaigns/moutai.yaml --redis "$master_url" loadtest "${args[@]}" | jq -c '.variants[0]')
    qps=$(echo "$row" | jq '.qps | floor')
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$round" "$wait" "$qps" \
      "$(echo "$row" | jq '.p99_ms * 100 | round / 100')" "$(echo "$row" | jq .succeeded)" \
      "$(echo "$row" | jq .unreplicated)" "$(echo "$row" | jq -r .verdict)"
    if [ "$wait" = yes ]; then waited+=("$qps"); else plain+=("$qps"); fi
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
p=$(median "${plain[@]}") w=$(median "${waited[@]}")
echo "median buys/s: without $p, with --wait-replicas 1 $w: ratio $(awk -v a="$w" -v b="$p" 'BEGIN { printf "%.2f", a / b }')"

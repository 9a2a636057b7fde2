#!/usr/bin/env bash
# bench-serve.sh — is `seckill serve` the bottleneck of a sale?
#
# Two throwaway redis-servers and one `seckill serve` (release build) on
# this machine. In alternating rounds (A B A B ...), purchases that all
# succeed (distinct users, a stock larger than the run):
#   A  wrk over keep-alive HTTP against serve (a Lua script gives every
#      request its own user and request id): the full buy script through serve
#   B  seckill loadtest --variant full straight on the second Redis (a load
#      test refuses a Redis that carries a live sale, and serve's is one;
#      only one of the two is busy at a time)
# and the median of the per-round ratios A/B. Then, once:
#   * `loadtest --target` through serve (the toolkit's own HTTP client);
#   * sold-out answers from serve's cache: wrk on an item sold out for good,
#     with INFO commandstats showing how many scripts Redis ran meanwhile;
#   * p99 at a fixed open-loop rate, through serve and direct;
#   * Redis round trips per request (serve's /metrics).
# Everything is killed on exit.
#
# Usage: scripts/bench-serve.sh [--rounds N] [--seconds S] [--connections C] [--rate R]
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
seconds=5
connections=64
rate=5000
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

. scripts/lib.sh
lib_need redis-server "apt-get install redis-server"
lib_need redis-cli "apt-get install redis-tools"
lib_need wrk "apt-get install wrk"
lib_need curl "apt-get install curl"
lib_cargo
cargo build --release --quiet
seckill="$PWD/target/release/seckill"

lib_start_redis direct --loglevel warning
direct_url=$REDIS_URL
lib_start_redis bench --loglevel warning
port=$REDIS_PORT
export SECKILL_REDIS_URL=$REDIS_URL
work=$LIB_WORK

# A stock no round exhausts: every attempt is a purchase.
cat >"$work/sale.yaml" <<EOF
campaign: bench-serve
per_user_limit: 1
keep_after_end: 2h
items:
  - { id: "1", name: Bottle, price: "10.00", stock: 100000000 }
  - { id: "gone", name: Gone, price: "10.00", stock: 1 }
EOF
"$seckill" -c "$work/sale.yaml" preheat >/dev/null 2>&1

serve_port="$(lib_free_port)"
"$seckill" -c "$work/sale.yaml" serve --listen "127.0.0.1:$serve_port" 2>"$work/serve.log" &
serve_pid=$!
lib_track $serve_pid
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$serve_port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
base="http://127.0.0.1:$serve_port"

# wrk: every request its own user and request id (thread id + counter).
cat >"$work/buy.lua" <<'EOF'
local counter = 0
local thread_id = 0
local threads = 0
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
function init(args)
  thread_id = id
  prefix = args[1] or "r"
end
function request()
  counter = counter + 1
  local user = prefix .. "-" .. thread_id .. "-" .. counter
  local body = '{"user":"' .. user .. '","qty":1,"request_id":"' .. user .. '"}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end
EOF

wrk_rate() { # url seconds prefix -> requests/s
  wrk -t2 -c"$connections" -d"${2}s" -s "$work/buy.lua" "$1" -- "$3" 2>/dev/null \
    | awk '/^Requests\/sec/ {print $2}'
}
direct_rate() { # -> buys/s of the full script straight on Redis
  "$seckill" -c "$work/sale.yaml" loadtest --redis "$direct_url" --variant full --connections "$connections" \
    --requests $((seconds * 30000)) --stock 100000000 --format json 2>/dev/null \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["variants"][0]["qps"])'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "round  serve (wrk) buys/s   direct (loadtest full) buys/s   ratio"
ratios=()
for r in $(seq "$rounds"); do
  a=$(wrk_rate "$base/v1/items/1/buy" "$seconds" "r$r")
  b=$(direct_rate)
  ratio=$(python3 -c "print(f'{$a/$b:.3f}')")
  ratios+=("$ratio")
  printf '%5s  %18.0f   %28.0f   %s\n' "$r" "$a" "$b" "$ratio"
done
printf 'median ratio serve/direct: %s (target >= 0.9)\n' "$(printf '%s\n' "${ratios[@]}" | median)"

target_json=$("$seckill" -c "$work/sale.yaml" loadtest --target "$base" --rehearsal --item 1 \
  --connections "$connections" --requests $((seconds * 20000)) --format json 2>/dev/null)
python3 - "$target_json" <<'EOF'
import json, sys
t = json.loads(sys.argv[1])["target"]
print(f"loadtest --target (closed loop): {t['qps']:.0f} answers/s, p99 {t['latency']['p99_ms']:.2f} ms, outcomes {t['outcomes']}")
EOF

# Sold out for good: the one unit goes, the cache learns it, then wrk.
curl -s -X POST "$base/v1/items/gone/buy" -H 'Content-Type: application/json' \
  -d '{"user":"first","request_id":"first"}' >/dev/null
for _ in $(seq 100); do
  curl -s -X POST "$base/v1/items/gone/buy" -H 'Content-Type: application/json' \
    -d '{"user":"probe","request_id":"probe"}' | grep -q '"from_cache":true' && break
  sleep 0.05
done
# One fixed body (wrk's per-request Lua would be the bottleneck, not serve):
# a shopper who bought nothing, so the cache answers.
cat >"$work/late.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"user":"late-shopper","qty":1,"request_id":"late-request"}'
wrk.headers["Content-Type"] = "application/json"
EOF
cpu_ticks() { awk '{print $14 + $15}' "/proc/$serve_pid/stat"; }
redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
ticks_before=$(cpu_ticks)
cached_out=$(wrk -t2 -c"$connections" -d"${seconds}s" -s "$work/late.lua" "$base/v1/items/gone/buy" 2>/dev/null)
ticks_after=$(cpu_ticks)
cached=$(awk '/^Requests\/sec/ {print $2}' <<<"$cached_out")
answered=$(awk '/requests in/ {print $1}' <<<"$cached_out")
scripts=$(redis-cli -p "$port" INFO commandstats | awk -F'[=,]' '/^cmdstat_evalsha:/ {print $2}')
printf 'sold-out answers from the cache: %.0f/s (target >= 100000), scripts Redis ran meanwhile: %s\n' \
  "$cached" "${scripts:-0}"
python3 -c "import os; t=($ticks_after-$ticks_before)/os.sysconf('SC_CLK_TCK'); print(f'serve CPU per cached answer: {t/$answered*1e6:.1f} us (user+sys; one core answers {$answered/t:.0f}/s)')"

open_json=$("$seckill" -c "$work/sale.yaml" loadtest --target "$base" --rehearsal --item 1 \
  --connections "$connections" --rate "$rate" --duration "${seconds}s" --format json 2>/dev/null)
direct_open=$("$seckill" -c "$work/sale.yaml" loadtest --redis "$direct_url" --variant full --connections "$connections" \
  --rate "$rate" --duration "${seconds}s" --stock 100000000 --format json 2>/dev/null)
python3 - "$open_json" "$direct_open" "$rate" <<'EOF'
import json, sys
t = json.loads(sys.argv[1])["target"]
d = json.loads(sys.argv[2])["variants"][0]
print(f"open loop at {sys.argv[3]}/s: through serve p50 {t['latency']['p50_ms']:.2f} ms p99 {t['latency']['p99_ms']:.2f} ms; direct p50 {d['p50_ms']:.2f} ms p99 {d['p99_ms']:.2f} ms")
EOF

curl -s "$base/metrics" | python3 -c '
import sys
trips = requests = 0
for line in sys.stdin:
    if line.startswith("seckill_serve_redis_round_trips_total"):
        trips = float(line.split()[-1])
    if line.startswith("seckill_serve_requests_total") and "endpoint=\"buy\"" in line:
        requests += float(line.split()[-1])
print(f"Redis round trips per buy request: {trips / max(requests, 1):.3f} (cached answers make none)")
'

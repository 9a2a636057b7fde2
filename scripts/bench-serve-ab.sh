#!/usr/bin/env bash
# bench-serve-ab.sh — two builds of `seckill serve` side by side, to tell a
# change of the door from the machine's drift (a shared 2-core machine swings
# ±20-30 % between runs; alternating short rounds and comparing medians does not).
#
# Each build serves from its own throwaway redis-server, both up at once; each
# round runs the same load against A then B, and prints requests/s and serve's
# CPU (user+sys, from /proc) per answer. MODE:
#   buy     wrk, every request a new user and request id (the full buy script)
#   cached  wrk, one shopper refused from the cache (an item sold out for good)
#   target  `loadtest --target` closed loop, 64 connections, with CLIENT's
#           load generator (env CLIENT, default B; a build after c668912,
#           whose JSON report has `target`) for both, so only the door differs
# Then the medians and B/A.
#
# Usage: scripts/bench-serve-ab.sh BIN_A BIN_B [ROUNDS] [SECONDS] [MODE]
#   e.g. scripts/bench-serve-ab.sh /tmp/old/seckill target/release/seckill 8 3 cached
set -euo pipefail
case "${1:-}" in -h|--help|"") sed -n '2,17p' "$0"; exit 0 ;; esac
A=$(realpath "$1"); B=$(realpath "$2"); rounds=${3:-8}; seconds=${4:-3}; mode=${5:-cached}
case "$mode" in buy|cached|target) ;; *) echo "MODE is buy, cached or target, not $mode" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
. scripts/lib.sh
lib_need wrk "apt-get install wrk"
lib_need redis-server "apt-get install redis-server"
start() { # bin -> sets PID BASE
  lib_start_redis "r$RANDOM" --loglevel warning
  local work=$LIB_WORK/$REDIS_PORT; mkdir -p $work
  cat >"$work/sale.yaml" <<Y
campaign: bench-serve
per_user_limit: 1
keep_after_end: 2h
items:
  - { id: "1", name: Bottle, price: "10.00", stock: 100000000 }
  - { id: "gone", name: Gone, price: "10.00", stock: 1 }
Y
  SECKILL_REDIS_URL=$REDIS_URL "$1" -c "$work/sale.yaml" preheat >/dev/null 2>&1
  local port="$(lib_free_port)"
  SECKILL_REDIS_URL=$REDIS_URL "$1" -c "$work/sale.yaml" serve --listen "127.0.0.1:$port" >/dev/null 2>"$work/serve.log" &
  PID=$!; lib_track $PID
  BASE="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -sf "$BASE/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -s -X POST "$BASE/v1/items/gone/buy" -H 'Content-Type: application/json' -d '{"user":"first","request_id":"first"}' >/dev/null
  for _ in $(seq 100); do
    curl -s -X POST "$BASE/v1/items/gone/buy" -H 'Content-Type: application/json' -d '{"user":"probe","request_id":"probe"}' | grep -q '"from_cache":true' && break
    sleep 0.05
  done
}
start "$A"; PA=$PID; BA=$BASE
start "$B"; PB=$PID; BB=$BASE
w=$LIB_WORK
CLIENT=${CLIENT:-$B}
cp "$LIB_WORK/$(ls $LIB_WORK | grep -E '^[0-9]+$' | head -1)/sale.yaml" "$w/sale.yaml"
cat >"$w/late.lua" <<'L'
wrk.method = "POST"
wrk.body = '{"user":"late-shopper","qty":1,"request_id":"late-request"}'
wrk.headers["Content-Type"] = "application/json"
L
cat >"$w/buy.lua" <<'L'
local counter = 0
local thread_id = 0
local threads = 0
function setup(thread) thread:set("id", threads) threads = threads + 1 end
function init(args) thread_id = id prefix = args[1] or "r" end
function request()
  counter = counter + 1
  local user = prefix .. "-" .. thread_id .. "-" .. counter
  local body = '{"user":"' .. user .. '","qty":1,"request_id":"' .. user .. '"}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end
L
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
one() { # pid base round -> "rate cpu_us"
  local t0 t1 out n r
  t0=$(cpu $1)
  if [ "$mode" = target ]; then
    local j; j=$(SECKILL_REDIS_URL=redis://127.0.0.1:1/0 "$CLIENT" -c "$w/sale.yaml" loadtest --target "$2" --rehearsal --item 1 --connections 64 --requests $((seconds * 20000)) --format json 2>/dev/null)
    t1=$(cpu $1)
    python3 -c 'import json,sys,os; t=json.loads(sys.argv[1])["target"]; n=sum(t["outcomes"].values()); print("%.0f %.2f p99 %.2f" % (t["qps"], (int(sys.argv[3])-int(sys.argv[2]))/os.sysconf("SC_CLK_TCK")/n*1e6, t["latency"]["p99_ms"]))' "$j" "$t0" "$t1"
    return
  fi
  if [ "$mode" = cached ]; then out=$(wrk -t2 -c64 -d"${seconds}s" -s "$w/late.lua" "$2/v1/items/gone/buy" 2>/dev/null)
  else out=$(wrk -t2 -c64 -d"${seconds}s" -s "$w/buy.lua" "$2/v1/items/1/buy" -- "x$3" 2>/dev/null); fi
  t1=$(cpu $1)
  r=$(awk '/^Requests\/sec/ {print $2}' <<<"$out"); n=$(awk '/requests in/ {print $1}' <<<"$out")
  python3 -c "import os; print('%.0f %.2f' % ($r, ($t1-$t0)/os.sysconf('SC_CLK_TCK')/$n*1e6))"
}
for r in $(seq $rounds); do
  a=$(one $PA $BA a$r); b=$(one $PB $BB b$r)
  echo "round $r  A: $a   B: $b   load $(cut -d' ' -f1 /proc/loadavg)"
done | tee "$w/rounds"
awk '
function med(arr, n,   t) { asort(arr, t); return (n%2) ? t[(n+1)/2] : (t[n/2]+t[n/2+1])/2 }
/^round/ { n++; for (i=1;i<=NF;i++) { if ($i=="A:") { ra[n]=$(i+1); ca[n]=$(i+2) } if ($i=="B:") { rb[n]=$(i+1); cb[n]=$(i+2) } } }
END { if (n) printf "medians of %d rounds: A %.0f/s, %.2f us CPU per answer; B %.0f/s, %.2f us; B/A rate %.3f, CPU %.3f\n", n, med(ra,n), med(ca,n), med(rb,n), med(cb,n), med(rb,n)/med(ra,n), med(cb,n)/med(ca,n) }
' "$w/rounds"

#!/usr/bin/env bash
# Rehearse a sale day on a 3 master + 3 replica Redis Cluster with only the
# users `seckill acl` generates, each job as its role, as docs/guide.md
# writes the commands; then survive a replica frozen, and a master frozen,
# for FREEZE seconds each (SIGSTOP: the port still accepts, nothing answers)
# with the kill switch flipped during each, and check the books at the end.
#
#   scripts/rehearse-sale-day.sh               # about 4 minutes (60 s freezes)
#   FREEZE=10 scripts/rehearse-sale-day.sh     # the same walk, shorter freezes
#
# The walk: `scripts/cluster.sh up` (its own ports and directory), AOF and
# noeviction set on every node as the guide's step 1 asks; the campaign file
# (a hot and a calm item on different masters, a room item, reservations);
# `acl --role R --password-file R.pw --apply` on every node; `doctor` as the
# admin (go/no-go) and `doctor --role R` as each role; `serve
# --check-credential` and `buy --dry-run` as the buyer; `preheat` as the
# operator; `serve` as the buyer (pay and cancel as the operator; `ok` only
# once a replica has the buy, `--wait-replicas 1`: a frozen master's forced
# failover then loses no acknowledged buy), `consume`
# as the consumer, `expire --loop` and `queue admit --loop` as the operator;
# shoppers buying through the door with curl all along. Then the incidents,
# then lookup and pay through the door, a room join admitted and bought,
# `consume --drain`, `reconcile`, `status`. Orders go to SQLite (the guide's
# default store), `orders.db` beside the campaign file.
#
# Checked at the end: sold + left = initial for every item; reconcile exit
# 0; every order the door acknowledged (200 ok) stored in the database; a
# buy refused `closed` while the switch was on in each freeze; serve selling
# the hot item again after the promotion. Printed: a verdict and the
# timings (each kill switch flip during the freezes, the promotion, serve's
# first ok after it). Exit 0 when every check held, 1 otherwise.
#
# Environment: FREEZE (seconds, default 60), SECKILL_CLUSTER_PORT (default
# 21501; six ports from it, each bus at +10000, below the ephemeral range), SECKILL (a built binary;
# default: `cargo build`, then target/debug/seckill), KEEP=1 keeps the work
# directory. Nothing is started on a port that answers already.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
FREEZE=${FREEZE:-60}
base=${SECKILL_CLUSTER_PORT:-21501}
case "$FREEZE" in '' | *[!0-9]*) echo "FREEZE must be a number of seconds" >&2; exit 2 ;; esac
for p in $(seq "$base" $((base + 5))); do
  if redis-cli -p "$p" ping >/dev/null 2>&1; then
    echo "port $p answers already: set SECKILL_CLUSTER_PORT to a free block of six" >&2
    exit 2
  fi
done
lib_need redis-server "scripts/install-servers.sh"
lib_need curl "scripts/install-servers.sh"
lib_need jq "apt-get install jq"
lib_need sqlite3 "apt-get install sqlite3"
if [ -z "${SECKILL:-}" ]; then
  lib_cargo
  cargo build --quiet
  SECKILL=$PWD/target/debug/seckill
fi
work=$(mktemp -d)
cluster_dir="$work/cluster"
frozen=""
pids=()
cleanup() {
  [ -n "$frozen" ] && kill -CONT "$frozen" 2>/dev/null || true
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  SECKILL_CLUSTER_PORT=$base SECKILL_CLUSTER_DIR=$cluster_dir scripts/cluster.sh down >/dev/null 2>&1 || true
  if [ "${KEEP:-}" = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
say() { echo "[$(date -u +%H:%M:%S)] $*"; }
failures=0
check() { # check WHAT CONDITION-RESULT(0/1)
  if [ "$2" = 0 ]; then echo "  ok    $1"; else echo "  FAIL  $1"; failures=$((failures + 1)); fi
}
seeds() { # seeds [USER] [FIRST-PORT]: comma-separated seed URLs, FIRST-PORT first
  local user=${1:-} first=${2:-$base} s="" p
  for p in $first $(seq "$base" $((base + 5)) | grep -vx "$first"); do
    s="$s${s:+,}redis://${user:+$user@}127.0.0.1:$p"
  done
  echo "$s"
}
node_pid() { redis-cli -p "$1" info server | tr -d '\r' | sed -n 's/^process_id://p'; }
master_of() { # master_of KEY: the port of the master serving KEY's slot
  local slot
  slot=$(redis-cli -p "$base" cluster keyslot "$1")
  redis-cli -p "$base" cluster nodes | awk -v slot="$slot" '$3 ~ /master/ && $3 !~ /fail/ {
    for (i = 9; i <= NF; i++) { n = split($i, r, "-"); lo = r[1]; hi = (n == 2) ? r[2] : r[1];
      if (slot + 0 >= lo + 0 && slot + 0 <= hi + 0) { split($2, a, "[:@]"); print a[2]; exit } } }'
}
replica_of() { # replica_of MASTER-PORT: the port of its first replica
  local id
  id=$(redis-cli -p "$base" cluster nodes | awk -v p=":$1@" 'index($2, p) { print $1 }')
  redis-cli -p "$base" cluster nodes | awk -v id="$id" '$4 == id { split($2, a, "[:@]"); print a[2]; exit }'
}
synced() { redis-cli -p "$1" info replication | tr -d '\r' | grep -q '^master_link_status:up'; }
is_master() { # is_master ASKED PORT: PORT is a healthy master in ASKED's CLUSTER NODES
  redis-cli -p "$1" cluster nodes 2>/dev/null | awk -v p="127.0.0.1:$2@" 'index($2, p) == 1 && $3 ~ /master/ && $3 !~ /fail/ { ok = 1 } END { exit !ok }'
}

say "rehearsal: seckill $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $($SECKILL --version | head -1), redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), freezes of ${FREEZE}s"
SECKILL_CLUSTER_PORT=$base SECKILL_CLUSTER_DIR=$cluster_dir scripts/cluster.sh up | sed -n 1p
# Step 1 of the guide on every node (a failover promotes a replica).
for p in $(seq "$base" $((base + 5))); do
  for setting in "appendonly yes" "appendfsync always" "maxmemory 256mb" "maxmemory-policy noeviction"; do
    # shellcheck disable=SC2086
    redis-cli -p "$p" config set $setting >/dev/null
  done
done

# Every replica linked and synced before the go/no-go, as on a real cluster
# the day before (CLUSTER SLOTS lists a replica only once it is).
for p in $(seq "$base" $((base + 5))); do
  redis-cli -p "$p" info replication | tr -d '\r' | grep -q '^role:slave' || continue
  for _ in $(seq 300); do synced "$p" && break; sleep 0.1; done
done
sleep 1

# The campaign: a hot and a calm item on two masters other than the
# registry's, a room item, reservations.
registry_master=$(master_of seckill:campaigns)
hot="" calm=""
for n in $(seq 1 99); do
  m=$(master_of "seckill:{rehearsal:$n}:stock")
  if [ -z "$hot" ] && [ "$m" != "$registry_master" ]; then hot=$n; hot_master=$m; continue; fi
  if [ -n "$hot" ] && [ -z "$calm" ] && [ "$m" != "$hot_master" ]; then calm=$n; calm_master=$m; break; fi
done
room=500
file="$work/rehearsal.yaml"
cat >"$file" <<EOF
campaign: rehearsal
keep_after_end: 26h
per_user_limit: 1
payment_timeout: 10m
items:
  - id: "$hot"
    name: Hot item
    price: "1499.00"
    stock: 100000
  - id: "$calm"
    name: Calm item
    price: "99.00"
    stock: 100000
  - id: "$room"
    name: Room item
    price: "10.00"
    stock: 10
    waiting_room: { mode: max_active, max_active: 5 }
orders:
  store: sqlite://orders.db
EOF
export SECKILL_REDIS_CLUSTER=true
admin_url=$(seeds)
# as ROLE ARGS...: seckill as the role's user, its password from a file (nothing in ps)
# (seeds listed from $first: during an incident, the hung node first; with
# AS_EXEC=1 the shell becomes seckill, so a background job's pid is its own)
as() {
  local role=$1
  shift
  SECKILL_REDIS_URL=$(seeds "seckill-$role" "${first:-$calm_master}") \
    ${AS_EXEC:+exec} "$SECKILL" -c "$file" --redis-password-file "$work/$role.pw" "$@"
}
say "hot item $hot on master $hot_master, calm item $calm on master $calm_master, the registry on $registry_master"

say "roles: acl --apply on every node"
for role in buyer consumer operator; do
  openssl rand -hex 24 >"$work/$role.pw"
  for p in $(seq "$base" $((base + 5))); do
    SECKILL_REDIS_CLUSTER=false SECKILL_REDIS_URL=redis://127.0.0.1:$p "$SECKILL" -c "$file" acl --role "$role" \
      --password-file "$work/$role.pw" --apply --format json >"$work/acl-$role-$p.json" || {
      echo "acl --apply of $role on $p failed:"; jq -c '.users[0].checks[] | select(.ok != true)' "$work/acl-$role-$p.json"; exit 1; }
  done
done
echo "  3 roles written and proven on 6 nodes"

say "go / no-go"
set +e
SECKILL_REDIS_URL=$admin_url "$SECKILL" -c "$file" doctor >"$work/doctor.txt" 2>&1
doctor_code=$?
set -e
grep -E '^(GO|NO-GO)' "$work/doctor.txt" | sed 's/^/  doctor (admin): /'
check "doctor as the admin: GO (exit $doctor_code)" "$([ "$doctor_code" = 0 ] && echo 0 || echo 1)"
[ "$doctor_code" = 0 ] || grep -E '^(FAIL|WARN)' "$work/doctor.txt" | sed 's/^/    /'
for role in buyer consumer operator; do
  verdict=$(as "$role" doctor --role "$role" --allow-unchecked --format json 2>/dev/null |
    jq -r '.checks[] | select(.check == "permissions") | .verdict + ": " + .detail' || true)
  check "doctor --role $role from its own URL: ${verdict:0:90}" "$([ "${verdict%%:*}" = ok ] && echo 0 || echo 1)"
done
openssl rand -hex 24 >"$work/operator.token"
operator_flags=(--operator-token-file "$work/operator.token" --operator-redis "$(seeds seckill-operator "$calm_master")" --operator-redis-password-file "$work/operator.pw")
set +e
as buyer serve --check-credential "${operator_flags[@]}" --format json >"$work/check-credential.json"
code=$?
set -e
check "serve --check-credential: $(jq -r '"\([.credentials[] | select(.verdict == "proven")] | length) of \(.credentials | length) rows"' "$work/check-credential.json") proven, 2 credentials x 6 nodes (exit $code)" "$([ "$code" = 0 ] && [ "$(jq '.credentials | length' "$work/check-credential.json")" = 12 ] && echo 0 || echo 1)"
set +e
as buyer buy --item "$hot" --user dry-run-user --dry-run >/dev/null
code=$?
set -e
check "buy --dry-run as the buyer (exit $code)" "$code"

say "the sale opens"
if ! as operator preheat >"$work/preheat.txt" 2>&1; then
  # A stalled fsync can outlast --response-timeout: an operator runs it
  # again (a loaded item is kept, nothing is loaded twice).
  echo "  preheat failed ($(tail -1 "$work/preheat.txt")); running it again"
  as operator preheat >"$work/preheat.txt" 2>&1 || { cat "$work/preheat.txt"; exit 1; }
fi
door_port=$(lib_free_port)
door=http://127.0.0.1:$door_port
first=$(replica_of "$hot_master") AS_EXEC=1 as buyer serve --listen "127.0.0.1:$door_port" "${operator_flags[@]}" \
  --wait-replicas 1 --wait-timeout 250ms >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
pids+=("$serve_pid")
AS_EXEC=1 as consumer consume >"$work/consume.out" 2>"$work/consume.err" &
consume_pid=$!
pids+=("$consume_pid")
AS_EXEC=1 as operator expire --loop >"$work/expire.out" 2>"$work/expire.err" &
pids+=($!)
AS_EXEC=1 as operator queue admit --loop >"$work/admit.out" 2>"$work/admit.err" &
pids+=($!)
for _ in $(seq 100); do curl -sf "$door/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "$door/healthz" >/dev/null || { echo "serve did not start:"; cat "$work/serve.err"; exit 1; }

# Shoppers: each line of w*.log is `sent_ns done_ns item user status body`.
shopper() {
  local w=$1 n=0 item user t out
  while [ ! -f "$work/stop" ]; do
    if [ $((n % 2)) = 0 ]; then item=$hot; else item=$calm; fi
    user="w$w-$n"
    t=$(date +%s%N)
    out=$(curl -s -m 10 -o "$work/body.$w" -w '%{http_code}' -X POST "$door/v1/items/$item/buy" \
      -H 'Content-Type: application/json' -d "{\"user\": \"$user\", \"request_id\": \"r-$user\"}" || true)
    echo "$t $(date +%s%N) $item $user ${out:-000} $(tr -d '\n ' <"$work/body.$w" 2>/dev/null)" >>"$work/w$w.log"
    n=$((n + 1))
    sleep 0.02
  done
}
for w in 1 2 3 4; do shopper "$w" & pids+=($!); done
sleep 3

# flip ARGS...: the kill switch as the operator, its duration in ms appended to $work/flips
flip() {
  local t0 code
  t0=$(now_ms)
  set +e
  SECKILL_DEBUG=1 as operator shutdown-switch "$@" >/dev/null 2>"$work/flip.err"
  cat "$work/flip.err" >>"$work/flips.$phase.log"
  code=$?
  set -e
  echo "$1 ${*:2} $(($(now_ms) - t0)) $code" >>"$work/flips.$phase"
  [ "$code" = 0 ] || { echo "  shutdown-switch $* failed (exit $code): $(tail -1 "$work/flip.err")"; failures=$((failures + 1)); }
}
# refused ITEM: a buy through the door answers `closed`
refused() {
  curl -s -X POST "$door/v1/items/$1/buy" -H 'Content-Type: application/json' \
    -d "{\"user\": \"probe-$RANDOM$RANDOM\", \"request_id\": \"p-$RANDOM$RANDOM\"}" | grep -q '"outcome":"closed"'
}

# The baseline: the kill switch flipped with every node answering (what an
# fsync of appendfsync always costs on this machine shows here too).
phase=baseline
for _ in 1 2 3; do flip on --reason "drill: baseline"; flip off; sleep 1; done

# Incident 1: the hot item's replica hangs.
replica=$(replica_of "$hot_master")
phase=replica
say "incident 1: replica 127.0.0.1:$replica (of the hot item's master) frozen for ${FREEZE}s"
frozen=$(node_pid "$replica")
kill -STOP "$frozen"
froze=$(now_ms)
first=$replica
closed_ok=0 closed_asked=0
while [ $(($(now_ms) - froze)) -lt $((FREEZE * 1000 - 3000)) ]; do
  flip on --reason "drill: replica frozen"
  closed_asked=$((closed_asked + 1))
  refused "$hot" && closed_ok=$((closed_ok + 1))
  if [ "$closed_asked" = 1 ]; then
    set +e; as buyer buy --item "$calm" --user cli-during-replica >/dev/null 2>&1; cli_code=$?; set -e
    check "buy on the command line while the switch is on: exit $cli_code (13 closed)" "$([ "$cli_code" = 13 ] && echo 0 || echo 1)"
    t0=$(now_ms); set +e; as operator status >/dev/null 2>&1; code=$?; set -e
    check "status while the replica hangs: exit $code in $(($(now_ms) - t0)) ms" "$code"
  fi
  flip off
  sleep 5
done
check "the door refused a buy as closed each time the switch was on ($closed_ok of $closed_asked)" "$([ "$closed_ok" = "$closed_asked" ] && echo 0 || echo 1)"
kill -CONT "$frozen"
frozen=""
first=""
say "replica resumed; waiting for it to resync"
for _ in $(seq 600); do synced "$replica" && break; sleep 0.1; done
synced "$replica" || { echo "the replica never resynced"; exit 1; }
sleep 2

# Incident 2: the hot item's master hangs; the cluster promotes its replica.
phase=master
say "incident 2: master 127.0.0.1:$hot_master (the hot item's) frozen for ${FREEZE}s"
frozen=$(node_pid "$hot_master")
kill -STOP "$frozen"
froze_ns=$(date +%s%N)
froze=$((froze_ns / 1000000))
first=$hot_master
promoted_ns=""
closed_ok=0 closed_asked=0 last_flip=0
while [ $(($(now_ms) - froze)) -lt $((FREEZE * 1000)) ]; do
  if [ -z "$promoted_ns" ] && is_master "$calm_master" "$replica"; then
    promoted_ns=$(date +%s%N)
    say "replica 127.0.0.1:$replica promoted $(((promoted_ns - froze_ns) / 1000000)) ms after the freeze"
  fi
  if [ $(($(now_ms) - last_flip)) -ge 10000 ]; then
    last_flip=$(now_ms)
    if [ -z "$promoted_ns" ]; then
      flip on --item "$calm" --reason "drill: master frozen"
      closed_asked=$((closed_asked + 1)); refused "$calm" && closed_ok=$((closed_ok + 1))
      flip off --item "$calm"
    else
      flip on --reason "drill: after the promotion"
      closed_asked=$((closed_asked + 1)); refused "$hot" && closed_ok=$((closed_ok + 1))
      flip off
    fi
  fi
  sleep 0.1
done
check "the door refused a buy as closed each time the switch was on ($closed_ok of $closed_asked)" "$([ "$closed_ok" = "$closed_asked" ] && echo 0 || echo 1)"
kill -CONT "$frozen"
frozen=""
first=""
say "old master resumed (it rejoins as a replica)"
sleep 3
touch "$work/stop"
sleep 1
wait_shoppers() { local pid; for pid in "${pids[@]:4}"; do wait "$pid" 2>/dev/null || true; done; }
wait_shoppers
cat "$work"/w*.log >"$work/attempts.log"

# serve's recovery: the first ok for the hot item among requests sent after the promotion.
if [ -n "$promoted_ns" ]; then
  recovery_ms=$(awk -v p="$promoted_ns" -v item="$hot" '$3 == item && $5 == 200 && $1 >= p { d = ($2 - p) / 1e6; if (best == "" || d < best) best = d } END { if (best == "") print "never"; else printf "%d", best }' "$work/attempts.log")
else
  recovery_ms=never
fi
check "serve sold the hot item again ${recovery_ms} ms after the promotion (the guide: within 2 s)" "$([ "$recovery_ms" != never ] && [ "$recovery_ms" -le 2000 ] && echo 0 || echo 1)"

say "the rest of the day through the door"
ok_line=$(awk '$5 == 200 && $6 ~ /"outcome":"ok"/' "$work/attempts.log" | tail -1)
ok_item=$(echo "$ok_line" | cut -d' ' -f3)
ok_user=$(echo "$ok_line" | cut -d' ' -f4)
ok_order=$(echo "$ok_line" | grep -o '"order_id":"[^"]*"' | cut -d'"' -f4)
found=1
curl -s "$door/v1/items/$ok_item/orders/$ok_user?request_id=r-$ok_user" | grep -q "\"$ok_order\"" && found=0
check "lookup: GET /v1/items/$ok_item/orders/$ok_user answers its order" "$found"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$door/v1/orders/$ok_order/pay" -H "Authorization: Bearer $(cat "$work/operator.token")")
check "pay through the door as the operator: HTTP $code" "$([ "$code" = 200 ] && echo 0 || echo 1)"
curl -s -X POST "$door/v1/items/$room/queue" -H 'Content-Type: application/json' -d '{"user": "q1"}' >/dev/null
bought=""
for _ in $(seq 50); do
  if curl -s -X POST "$door/v1/items/$room/buy" -H 'Content-Type: application/json' \
    -d '{"user": "q1", "request_id": "q1-1"}' | grep -q '"outcome":"ok"'; then bought=1; break; fi
  sleep 0.2
done
check "a room join admitted by queue admit --loop, then bought" "$([ -n "$bought" ] && echo 0 || echo 1)"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
kill "$consume_pid"; wait "$consume_pid" || { echo "  consume exited non-zero: $(tail -2 "$work/consume.err")"; failures=$((failures + 1)); }

say "the night"
set +e
as consumer consume --drain >"$work/drain.txt" 2>&1
code=$?
check "consume --drain as the consumer: exit $code" "$code"
as operator reconcile >"$work/reconcile.txt" 2>&1
code=$?
set -e
check "reconcile as the operator: exit $code" "$code"
as operator status --format json >"$work/status.json"
while read -r item initial left sold; do
  check "item $item: sold $sold + left $left = initial $initial" "$([ $((sold + left)) = "$initial" ] && echo 0 || echo 1)"
done < <(jq -r '.items[] | "\(.item) \(.initial_stock) \(.stock_left) \(.sold)"' "$work/status.json")
grep '"outcome":"ok"' "$work/attempts.log" | awk '$5 == 200' | grep -o '"order_id":"[^"]*"' | cut -d'"' -f4 | sort -u >"$work/acked.txt"
sqlite3 "$work/orders.db" 'SELECT order_id FROM orders' | sort -u >"$work/stored.txt"
missing=$(comm -23 "$work/acked.txt" "$work/stored.txt" | wc -l)
check "every acknowledged order stored: $(wc -l <"$work/acked.txt") acknowledged, $missing missing" "$([ "$missing" = 0 ] && echo 0 || echo 1)"
denied=0
for p in $(seq "$base" $((base + 5))); do
  denied=$((denied + $(redis-cli -p "$p" acl log | grep -c '^username$' || true)))
done
check "ACL LOG empty on every node: $denied entries" "$([ "$denied" = 0 ] && echo 0 || echo 1)"

say "figures"
attempts=$(wc -l <"$work/attempts.log")
echo "  attempts through the door: $attempts; by status: $(awk '{ c[$5]++ } END { for (s in c) printf "%s %d, ", s, c[s] }' "$work/attempts.log" | sed 's/, $//')"
for phase in baseline replica master; do
  [ -f "$work/flips.$phase" ] || continue
  case $phase in baseline) when="with every node answering" ;; *) when="while the $phase hung" ;; esac
  echo "  kill switch $when: $(wc -l <"$work/flips.$phase") flips, $(awk '{ print $(NF-1) }' "$work/flips.$phase" | sort -n | awk '{ a[NR] = $1 } END { printf "median %d ms, max %d ms", a[int((NR + 1) / 2)], a[NR] }')"
done
[ -n "$promoted_ns" ] && echo "  promotion: $(((promoted_ns - froze_ns) / 1000000)) ms after the master froze (cluster-node-timeout 5000 ms)"
echo "  serve's first ok for the hot item after the promotion: $recovery_ms ms"
if [ "$failures" = 0 ]; then
  say "VERDICT: the sale day held (every check ok)"
  exit 0
fi
say "VERDICT: $failures check(s) FAILED"
exit 1

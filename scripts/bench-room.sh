#!/usr/bin/env bash
# bench-room.sh — what a ticket waiting room costs (docs/waiting-room.md,
# "Ticket mode"; issue 26): Redis per join, serve's CPU per join and per
# poll, and what the ticket gate adds to a buy `ok` in Redis.
#
# Two throwaway redis-servers and INSTANCES `seckill serve` processes
# (release build, one --room-key-file) on this machine; the campaign is
# issue 26's room, `waiting_room: { mode: ticket, admit_rate: 500/s,
# admission_ttl: 2m }`, on item 1 (stock 100,000,000), beside an item
# without a room (`gone`, stock 1) for cached sold-out answers. Before the
# rounds, a warm-up of joins leaves a backlog of more than 256 pending 10 ms
# buckets, as a crowd of millions at 500/s does: the lease holder's beat
# then reads pending buckets while its budget lasts. In alternating rounds (the same order
# each round), medians:
#   1  joins   wrk on every instance at once (one wrk each, a Lua script giving
#              every request its own user): INFO commandstats of the window
#              (after CONFIG RESETSTAT) ÷ the joins, as EVALSHA's usec (the
#              beats, whole) and as every command's (an upper bound: Redis
#              counts the commands a script runs again under their own names);
#              Redis's main-thread CPU (INFO cpu) beside them; EVALSHA calls
#              against INSTANCES × window / 100 ms,
#              and the cursor's moves (new members of the room's passes zset);
#              the joins are checked against the arrivals the room counted.
#   2  serve   wrk on instance 1 alone: joins (distinct users), polls (one
#              user's ticket in the Seckill-Ticket header, GET), and buy attempts
#              on the sold-out item answered from the cache (`from_cache: true`);
#              serve's CPU (utime + stime, /proc/PID/stat) ÷ the answers.
#   3  buy ok  on the second Redis, redis-benchmark driving buy.lua's EVALSHA
#              (new users, __rand_int__): an `ok` through a ticket room whose
#              cursor passed the arrival (cursor_ms and a passes member written
#              directly), and an `ok` of the same item in a campaign without a
#              room; `usec_per_call` from INFO commandstats after CONFIG RESETSTAT.
#              And one beat alone (room_tick.lua, a twentieth of the calls, no
#              lease): an instance flushing ten buckets with nothing pending,
#              and with 400 buckets pending above the cursor.
# Then the headline arithmetic for 5,000,000 joins in one second. Each
# target is printed with `met` or `NOT MET`; a step that fails stops the run
# with a message and a non-zero exit, and no figure is printed for it.
#
# The calls are the binary's own: buy.lua's EVALSHA comes from `seckill
# loadtest --print-command full`, with the eight room keys and the ticket's
# arrival and key id after it as `seckill buy --ticket` sends them (checked
# against that command's real call, seen through MONITOR), and each path
# answers `ok` once through redis-cli before the rounds.
#
# Usage: scripts/bench-room.sh [--rounds N] [--seconds S] [--join-seconds S]
#                              [--instances K] [--requests R] [--clients C]
#   --rounds 5, --seconds 5 (each serve run), --join-seconds 10 (each join
#   window of 1), --instances 4, --requests 100000 and --clients 50 (each
#   redis-benchmark run of 3); --quick: 1 round, 2 s runs, 20,000 calls, to
#   see that it runs (quote only full rounds).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

rounds=5
seconds=5
join_seconds=10
instances=4
requests=100000
clients=50
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --join-seconds) join_seconds=$2; shift 2 ;;
        --instances) instances=$2; shift 2 ;;
        --requests) requests=$2; shift 2 ;;
        --clients) clients=$2; shift 2 ;;
        --quick) rounds=1; seconds=2; join_seconds=2; requests=20000; shift ;;
        -h|--help) sed -n '2,51p' "$0"; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for n in "$rounds" "$seconds" "$join_seconds" "$instances" "$requests" "$clients"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench-room: $n is not a positive whole number (see --help)" >&2; exit 2; }
done

. scripts/lib.sh
lib_need redis-server "apt-get install redis-server"
lib_need redis-cli "apt-get install redis-tools"
lib_need redis-benchmark "apt-get install redis-tools"
lib_need wrk "scripts/install-servers.sh --bench"
lib_need curl "apt-get install curl"
lib_need python3 "apt-get install python3"
lib_cargo
cargo build --release --quiet
seckill="${CARGO_TARGET_DIR:-$repo/target}/release/seckill"

fail() {
    echo "bench-room: $*" >&2
    exit 1
}

lib_workdir
work=$LIB_WORK
# The script-cost Redis first, then the one serve uses (REDIS_PORT stays its).
lib_start_redis direct --loglevel warning
direct_port=$REDIS_PORT
direct_url=$REDIS_URL
lib_start_redis serve --loglevel warning
port=$REDIS_PORT
export SECKILL_REDIS_URL=$REDIS_URL
cli() { redis-cli -p "$port" "$@"; }
dcli() { redis-cli -p "$direct_port" "$@"; }
clk_tck=$(getconf CLK_TCK)

head -c 48 /dev/urandom | base64 >"$work/room.key"
cat >"$work/sale.yaml" <<EOF
campaign: bench-room
per_user_limit: 1
keep_after_end: 2h
items:
  - { id: "1", name: Bottle, price: "10.00", stock: 100000000,
      waiting_room: { mode: ticket, admit_rate: 500/s, admission_ttl: 2m } }
  - { id: "gone", name: Gone, price: "10.00", stock: 1 }
EOF
out=$("$seckill" -c "$work/sale.yaml" preheat 2>&1) || fail "preheat of the serve campaign failed: $out"
room_key="seckill:{bench-room:1}:room"
passes_key="seckill:{bench-room:1}:passes"
[ "$(cli HGET "$room_key" mode)" = ticket ] || fail "preheat left $room_key without mode ticket"

# INSTANCES serve processes on the one Redis.
serve_pids=()
bases=()
start_serve() { # I: serve I on a free port (another port when the one picked was taken)
    local i=$1 serve_port pid
    for _ in 1 2 3 4 5; do
        serve_port=$(lib_free_port)
        "$seckill" -c "$work/sale.yaml" serve --listen "127.0.0.1:$serve_port" \
            --room-key-file "$work/room.key" >"$work/serve-$i.log" 2>&1 &
        pid=$!
        for _ in $(seq 100); do
            curl -sf "http://127.0.0.1:$serve_port/healthz" >/dev/null 2>&1 && break
            kill -0 $pid 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 $pid 2>/dev/null && curl -sf "http://127.0.0.1:$serve_port/healthz" >/dev/null 2>&1; then
            lib_track $pid
            serve_pids+=("$pid")
            bases+=("http://127.0.0.1:$serve_port")
            return 0
        fi
        kill $pid 2>/dev/null || true
        wait $pid 2>/dev/null || true
        grep -q "Address already in use" "$work/serve-$i.log" || break
    done
    fail "serve $i did not start: $(tail -3 "$work/serve-$i.log")"
}
for i in $(seq "$instances"); do start_serve "$i"; done
base=${bases[0]}
serve_pid=${serve_pids[0]}
alive() {
    local i
    for i in "${!serve_pids[@]}"; do
        kill -0 "${serve_pids[$i]}" 2>/dev/null \
            || fail "serve $((i + 1)) died: $(tail -3 "$work/serve-$((i + 1)).log")"
    done
}

# wrk: every join its own user (thread id + counter) under a prefix.
cat >"$work/join.lua" <<'EOF'
local counter = 0
local thread_id = 0
local threads = 0
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
function init(args)
  thread_id = id
  prefix = args[1] or "j"
end
function request()
  counter = counter + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"},
    '{"user":"' .. prefix .. "-" .. thread_id .. "-" .. counter .. '"}')
end
EOF

# wrk_run OUT URL SECONDS CONNECTIONS THREADS SCRIPT [ARGS...]: wrk's output in OUT.
wrk_run() {
    local out=$1 url=$2 secs=$3 conns=$4 threads=$5 script=$6
    shift 6
    wrk -t"$threads" -c"$conns" -d"${secs}s" -s "$script" "$url" -- "$@" >"$out" 2>&1 \
        || fail "wrk on $url failed: $(tail -3 "$out")"
}
wrk_answers() { awk '/requests in/ {print $1}' "$1"; }
wrk_non2xx() { awk '/Non-2xx or 3xx responses/ {print $NF}' "$1" | grep . || echo 0; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
arrived() { cli HGET "$room_key" arrived_total; }
# Settled: two beats after the last join, every instance has flushed its counts.
settle() { sleep 0.3; }

json_field() { # FIELD: the field of the JSON object on stdin
    python3 -c 'import json,sys; v=json.load(sys.stdin).get(sys.argv[1]); print("" if v is None else v)' "$1"
}

# The sold-out item: its one unit goes, then the cache must answer.
curl -s -X POST "${base}/v1/items/gone/buy" -H 'Content-Type: application/json' \
    -d '{"user":"first","request_id":"first"}' | grep -q '"ok"' || fail "the first buy of item gone was not ok"
cached_probe() {
    curl -s -X POST "${base}/v1/items/gone/buy" -H 'Content-Type: application/json' \
        -d '{"user":"late-shopper","request_id":"late-request"}'
}
for _ in $(seq 100); do
    cached_probe | grep -q '"from_cache":true' && break
    sleep 0.05
done
cached_probe | grep -q '"from_cache":true' || fail "serve never answered item gone's sell-out from its cache"
cat >"$work/cached.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"user":"late-shopper","qty":1,"request_id":"late-request"}'
wrk.headers["Content-Type"] = "application/json"
EOF

# One user's ticket, polled again and again (a fixed request: wrk's
# per-request Lua would cost more than the poll).
poll_join=$(curl -s -X POST "$base/v1/items/1/queue" -H 'Content-Type: application/json' -d '{"user":"poller"}')
poll_ticket=$(json_field ticket <<<"$poll_join")
[ -n "$poll_ticket" ] || fail "a join answered no ticket: $poll_join"
poll_answer=$(curl -s -w ' %{http_code}' "$base/v1/items/1/queue/poller" -H "Seckill-Ticket: $poll_ticket")
[ "${poll_answer##* }" = 200 ] || fail "a poll with the ticket answered $poll_answer"
cat >"$work/poll.lua" <<EOF
wrk.method = "GET"
wrk.headers["Seckill-Ticket"] = "$poll_ticket"
EOF

# The buy with a ticket as the binary sends it: seen through MONITOR.
probe_join=$(curl -s -X POST "$base/v1/items/1/queue" -H 'Content-Type: application/json' -d '{"user":"probe"}')
probe_ticket=$(json_field ticket <<<"$probe_join")
probe_arrival=$(json_field arrival_ms <<<"$probe_join")
[ -n "$probe_ticket" ] && [ -n "$probe_arrival" ] || fail "a join answered no ticket: $probe_join"
eval "buy=($("$seckill" -c "$work/sale.yaml" loadtest --print-command full))"
[ "${buy[0]} ${buy[2]}" = "EVALSHA 10" ] || fail "unexpected buy call ${buy[*]}"
buy_sha=${buy[1]}
loadtest_roles=()
for ((k = 3; k < 13; k++)); do
    role=${buy[k]##*\}:}
    loadtest_roles+=("${role%%:*}") # rate:<user> is the rate key's role
done
redis-cli -p "$port" MONITOR >"$work/monitor.txt" 2>&1 &
monitor_pid=$!
lib_track $monitor_pid
sleep 0.2
"$seckill" -c "$work/sale.yaml" buy --item 1 --user probe --ticket "$probe_ticket" \
    --room-key-file "$work/room.key" >"$work/probe-buy.txt" 2>&1 || true
sleep 0.2
kill $monitor_pid
wait $monitor_pid 2>/dev/null || true
# The call's words after the SHA: key count, keys, ARGV.
seen_call=$(grep -m1 "\"EVALSHA\" \"$buy_sha\"" "$work/monitor.txt" \
    | sed 's/^[^]]*] //' | python3 -c 'import shlex,sys; print(" ".join(shlex.split(sys.stdin.read())[2:]))')
[ -n "$seen_call" ] || fail "seckill buy --ticket sent no EVALSHA of buy.lua ($(head -3 "$work/probe-buy.txt"))"
read -r -a seen <<<"$seen_call"
[ "${seen[0]}" = 19 ] || fail "seckill buy --ticket sent ${seen[0]} keys, not 19: $seen_call"
ticket_roles=()
for ((k = 1; k <= 19; k++)); do
    role=${seen[k]##*\}:}
    ticket_roles+=("${role%%:*}")
done
expected_roles="meta stock buyers buyer_orders requests orders rate reservations deadlines reservation_counts room queue registered risk admitted active shuffled passes revoked"
# The ten keys' roles are the loadtest call's; the room's nine follow in buy.lua's order.
[ "${ticket_roles[*]}" = "$expected_roles" ] \
    || fail "seckill buy --ticket sends keys ${ticket_roles[*]}, not $expected_roles"
[ "${loadtest_roles[*]}" = "${ticket_roles[*]:0:10}" ] \
    || fail "loadtest --print-command full sends keys ${loadtest_roles[*]}, seckill buy ${ticket_roles[*]:0:10}"
[ "${#seen[@]}" = 30 ] || fail "seckill buy --ticket sent $((${#seen[@]} - 20)) ARGV, not 10: $seen_call"
[ "${seen[27]}" = "$probe_arrival" ] || fail "seckill buy --ticket sent arrival ${seen[27]}, the ticket says $probe_arrival"
ticket_key_id=${seen[28]}
[ -n "$ticket_key_id" ] || fail "seckill buy --ticket sent no key id"
# The last ARGV: the run_id its connection read (the failover fence, docs/failover.md).
[[ "${seen[29]}" =~ ^[0-9a-f]{40}$ ]] || fail "seckill buy --ticket sent ${seen[29]} as the run_id, not 40 hex digits"

# --- 3's Redis: a ticket campaign and a room-off one, the same item.
script_campaign() { # ID ROOM
    cat >"$work/$1.yaml" <<YAML
campaign: $1
per_user_limit: 1
$2
items:
  - { id: "1001", name: bench, price: "1499.00", stock: 100000000 }
YAML
    local out
    out=$(SECKILL_REDIS_URL=$direct_url "$seckill" -c "$work/$1.yaml" preheat --allow-shared-items 2>&1) \
        || fail "preheat of campaign $1 failed: $out"
}
script_campaign tk "waiting_room: { mode: ticket, admit_rate: 500/s, admission_ttl: 2m }"
script_campaign off ""
# lua/buy.lua resolved as build.rs does it must be the SHA the binary sends.
sha=$(dcli -x SCRIPT LOAD < <(lib_resolved_lua buy.lua))
[ "$sha" = "$buy_sha" ] || fail "lua/buy.lua resolves to SHA $sha, the binary runs $buy_sha"
# The ticket's arrival: a minute ago; the cursor: now (admitted from the
# pass written before each run, for the room's two minutes).
redis_ms() { dcli TIME | tr '\n' ' ' | awk '{printf "%d", $1 * 1000 + int($2 / 1000)}'; }
arrival=$(($(redis_ms) - 60000))
admit_ticket_room() {
    local now
    now=$(redis_ms)
    dcli HSET "seckill:{tk:1001}:room" cursor_ms "$now" >/dev/null
    dcli DEL "seckill:{tk:1001}:passes" >/dev/null
    dcli ZADD "seckill:{tk:1001}:passes" "$now" "$now:$now" >/dev/null
    # As the lease holder's beat keeps it: that pass runs out in 2 minutes.
    dcli HSET "seckill:{tk:1001}:room" expires_next_at_ms $((now + 120000)) >/dev/null
}
# The fence's last ARGV: this Redis process's run_id, as a seckill connection sends it.
direct_run_id=$(dcli INFO server | tr -d '\r' | sed -n 's/^run_id://p')
[ ${#direct_run_id} = 40 ] || fail "no run_id in INFO server of the second Redis"
buy_call() { # CAMPAIGN TICKET(0/1)
    local c=$1 words=() k role
    for ((k = 3; k < 13; k++)); do words+=("seckill:{$c:1001}:${buy[k]##*\}:}"); done
    if [ "$2" = 1 ]; then
        for role in room queue registered risk admitted active shuffled passes revoked; do words+=("seckill:{$c:1001}:$role"); done
        printf '%q ' EVALSHA "$buy_sha" "${#words[@]}" "${words[@]}" u__rand_int__ 1 "" o__rand_int__ "$c" 1001 0 "$arrival" "$ticket_key_id" "$direct_run_id"
    else
        printf '%q ' EVALSHA "$buy_sha" "${#words[@]}" "${words[@]}" u__rand_int__ 1 "" o__rand_int__ "$c" 1001 0 "" "" "$direct_run_id"
    fi
}
ticket_ok_call=$(buy_call tk 1)
off_ok_call=$(buy_call off 0)
admit_ticket_room
for call in "$ticket_ok_call" "$off_ok_call"; do
    got=$(eval "dcli ${call//__rand_int__/probe000042}" | head -1)
    [ "$got" = ok ] || fail "one call answered $got, not ok: $call"
done

# joins_everywhere SECONDS PREFIX OUT: one wrk of joins per instance at
# once (16 connections each), each one's output in OUT-<i>.txt.
joins_everywhere() {
    local i pids=() pid
    for i in $(seq "$instances"); do
        wrk_run "$3-$i.txt" "${bases[$((i - 1))]}/v1/items/1/queue" "$1" 16 1 "$work/join.lua" "$2-$i" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || fail "a wrk run of joins failed"; done
}

# One beat in isolation (lua/room_tick.lua on the second Redis): an
# instance flushing ten buckets with no backlog, and with 400 buckets
# pending above the cursor. No lease (lease_ms 0), so the cursor stays and
# every call meets the same room; the instance's own mark is the only one.
script_campaign beat0 "waiting_room: { mode: ticket, admit_rate: 500/s, admission_ttl: 2m }"
script_campaign beat400 "waiting_room: { mode: ticket, admit_rate: 500/s, admission_ttl: 2m }"
tick_sha=$(dcli -x SCRIPT LOAD < <(lib_resolved_lua room_tick.lua))
[ "$(cli SCRIPT EXISTS "$tick_sha")" = 1 ] || fail "serve does not run lua/room_tick.lua as resolved here (SHA $tick_sha)"
beat_cursor=$(dcli HGET "seckill:{beat400:1001}:room" cursor_ms)
[[ "$beat_cursor" =~ ^-?[0-9]+$ ]] || fail "preheat left the ticket room without cursor_ms ($beat_cursor)"
first_bucket=$(((beat_cursor / 10 + 1) * 10))
# 400 pending buckets of 500 tickets each, the backlog a crowd leaves at 500/s.
for ((b = 0; b < 400; b++)); do
    bucket=$((first_bucket + 4000 + b * 10))
    printf 'ZADD seckill:{beat400:1001}:arrivals %d %d\nHSET seckill:{beat400:1001}:arrival_counts %d 500\n' "$bucket" "$bucket" "$bucket"
done | dcli >/dev/null
[ "$(dcli ZCARD "seckill:{beat400:1001}:arrivals")" = 400 ] || fail "the beat backlog was not written"
beat_call() { # CAMPAIGN: one instance's beat flushing ten buckets (200 tickets)
    local c=$1 words=() role b entries=""
    for role in room arrivals arrival_counts marks passes risk revoked prequeued; do words+=("seckill:{$c:1001}:$role"); done
    for ((b = 0; b < 10; b++)); do entries+="$((first_bucket + b * 10)) 20 "; done
    # instance, watermark, lease 0, dead after 1 s, risk and revoked keys as mirrored, no seed wanted
    words+=(bench-instance $((first_bucket + 100)) 0 1000 0 0 0 "${entries% }")
    printf '%q ' EVALSHA "$tick_sha" 8 "${words[@]}"
}
# A beat with a backlog takes milliseconds: fewer calls.
beat_requests=$((requests / 20 > 500 ? requests / 20 : 500))
beat0_call=$(beat_call beat0)
beat400_call=$(beat_call beat400)
for call in "$beat0_call" "$beat400_call"; do
    got=$(eval "dcli $call" | head -1)
    [ "$got" = ok ] || fail "one beat answered $got, not ok: $call"
done

# Warm-up: a backlog of more than 256 pending buckets.
joins_everywhere 4 warm "$work/warm"
settle
alive
pending=$(cli ZCOUNT "seckill:{bench-room:1}:arrivals" "($(cli HGET "$room_key" cursor_ms)" +inf)
[ "$pending" -gt 256 ] || fail "the warm-up left $pending pending buckets, not more than 256"

results="$work/results"
: >"$results"
lib_bench_header
echo "$instances serve instances (1 ticket room, admit_rate 500/s); joins ${join_seconds} s per round on all of them; serve runs ${seconds} s, 64 connections; buy ok $requests calls, $clients clients; $rounds alternated rounds; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "warm-up: $(arrived) tickets counted, $pending buckets pending above the cursor"

join_window() { # ROUND: 1's row
    local r=$1 i before after t0 t1 ms joins=0 non2xx moves_before moves_after cpu0 cpu1
    settle
    before=$(arrived)
    moves_before=$(cli ZCARD "$passes_key")
    cpu0=$(redis_cpu)
    cli CONFIG RESETSTAT >/dev/null
    t0=$(date +%s%N)
    joins_everywhere "$join_seconds" "r$r" "$work/join"
    t1=$(date +%s%N)
    cli INFO commandstats | tr -d '\r' >"$work/commandstats.txt"
    cpu1=$(redis_cpu)
    for i in $(seq "$instances"); do
        non2xx=$(wrk_non2xx "$work/join-$i.txt")
        [ "$non2xx" = 0 ] || fail "joins on serve $i: $non2xx answers not 2xx ($(grep -m1 'requests in' "$work/join-$i.txt"))"
        joins=$((joins + $(wrk_answers "$work/join-$i.txt")))
    done
    settle
    after=$(arrived)
    moves_after=$(cli ZCARD "$passes_key")
    alive
    # Every join wrk saw answered is a ticket the room counted; a few more
    # may have been answered as wrk stopped (at most one per connection).
    [ $((after - before)) -ge "$joins" ] && [ $((after - before)) -le $((joins + 16 * instances)) ] \
        || fail "round $r: wrk saw $joins joins answered, the room counted $((after - before))"
    ms=$(((t1 - t0) / 1000000))
    python3 - "$work/commandstats.txt" "$joins" "$ms" "$instances" "$((moves_after - moves_before))" \
        "$cpu0" "$cpu1" "$r" >>"$results" <<'EOF'
import sys
stats, joins, ms, instances, moves, cpu0, cpu1, r = sys.argv[1:]
joins, ms, instances = int(joins), int(ms), int(instances)
# Redis counts a command run inside a script under its own name too (its
# time is inside the script's as well): EVALSHA is the beats, whole; the
# other commands are the cache's rechecks plus the beats' inner commands
# counted again. So EVALSHA + the others bounds Redis's time from above,
# EVALSHA alone from below. The bench's own INFO and CONFIG are left out.
evalsha_calls = evalsha_usec = other_calls = other_usec = 0
for line in open(stats):
    if not line.startswith("cmdstat_"):
        continue
    name, rest = line[len("cmdstat_"):].split(":", 1)
    fields = dict(kv.split("=") for kv in rest.strip().split(","))
    if int(fields.get("failed_calls", 0)) or int(fields.get("rejected_calls", 0)):
        sys.exit(f"bench-room: {name}: failed or rejected calls during the joins: {rest.strip()}")
    if name.split("|")[0] in ("info", "config"):
        continue
    if name == "evalsha":
        evalsha_calls, evalsha_usec = int(fields["calls"]), int(fields["usec"])
    else:
        other_calls += int(fields["calls"])
        other_usec += int(fields["usec"])
if joins <= 0:
    sys.exit("bench-room: no join answered")
if evalsha_calls == 0:
    sys.exit("bench-room: no beat reached Redis during the joins")
expected = instances * ms / 100
cpu_us = (float(cpu1) - float(cpu0)) * 1e6
# Fields: round, joins, window ms, µs per join (EVALSHA; every command),
# EVALSHA calls, expected beats, cursor moves, µs per beat, other commands
# (calls, µs), commands of any kind per join, Redis CPU µs per join, per
# beat, per instance-second.
print("join|%s|%d|%d|%.5f|%.5f|%d|%.0f|%s|%.1f|%d|%d|%.4f|%.5f|%.1f|%.0f" % (
    r, joins, ms, evalsha_usec / joins, (evalsha_usec + other_usec) / joins, evalsha_calls, expected,
    moves, evalsha_usec / evalsha_calls, other_calls, other_usec, (evalsha_calls + other_calls) / joins,
    cpu_us / joins, cpu_us / evalsha_calls, cpu_us * 1000 / ms / instances))
EOF
}
redis_cpu() { # Redis's main thread, user + sys seconds
    cli INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys)_main_thread:/ {s += $2} END {printf "%.6f", s}'
}

serve_run() { # NAME ROUND URL SCRIPT [ARGS...]: serve 1's CPU per answer
    local name=$1 r=$2 url=$3 t0 t1 answers non2xx
    shift 3
    settle
    t0=$(cpu_ticks "$serve_pid")
    wrk_run "$work/$name.txt" "$url" "$seconds" 64 2 "$@"
    t1=$(cpu_ticks "$serve_pid")
    alive
    answers=$(wrk_answers "$work/$name.txt")
    non2xx=$(wrk_non2xx "$work/$name.txt")
    [ "${answers:-0}" -gt 0 ] || fail "$name: wrk saw no answer"
    case "$name" in
        cached)
            # 410 sold_out, every one: from the cache (checked before and after).
            [ "$non2xx" = "$answers" ] || fail "cached: $non2xx of $answers answers were not the 410"
            cached_probe | grep -q '"from_cache":true' || fail "cached: the answer no longer comes from the cache"
            ;;
        *) [ "$non2xx" = 0 ] || fail "$name: $non2xx of $answers answers not 2xx" ;;
    esac
    python3 -c "print(f'$name|$r|$answers|{($t1 - $t0) / $clk_tck * 1e6 / $answers:.2f}')" >>"$results"
}

script_run() { # NAME ROUND CALLS CALL [CAMPAIGN]: the script's Redis µs per call (a buy: CAMPAIGN's orders checked)
    local name=$1 r=$2 n=$3 call=$4 usec
    dcli XTRIM "seckill:{tk:1001}:orders" MAXLEN 0 >/dev/null
    dcli XTRIM "seckill:{off:1001}:orders" MAXLEN 0 >/dev/null
    admit_ticket_room
    dcli CONFIG RESETSTAT >/dev/null
    eval "redis-benchmark -p $direct_port -n $n -c $clients -r 100000000 $call" >/dev/null 2>&1 \
        || fail "$name: redis-benchmark failed: $call"
    usec=$(REDIS_PORT=$direct_port lib_evalsha_usec)
    [ "$usec" != failed ] || fail "$name: the script failed (redis-cli -p $direct_port; call: $call)"
    if [ -n "${5:-}" ]; then
        # Every call of the run an ok (or, for a user drawn twice, a duplicate): no other answer.
        local sold
        sold=$(dcli XLEN "seckill:{$5:1001}:orders")
        [ "$sold" -ge $((n * 99 / 100)) ] || fail "$name: $sold orders of $n calls: not ok"
    fi
    echo "$name|$r|$usec" >>"$results"
}

for r in $(seq "$rounds"); do
    join_window "$r"
    serve_run serve_join "$r" "$base/v1/items/1/queue" "$work/join.lua" "s$r"
    serve_run poll "$r" "$base/v1/items/1/queue/poller" "$work/poll.lua"
    serve_run cached "$r" "$base/v1/items/gone/buy" "$work/cached.lua"
    script_run ticket_ok "$r" "$requests" "$ticket_ok_call" tk
    script_run off_ok "$r" "$requests" "$off_ok_call" off
    script_run beat0 "$r" "$beat_requests" "$beat0_call"
    script_run beat400 "$r" "$beat_requests" "$beat400_call"
    echo "round $r done" >&2
done

echo
echo "1. Joins on $instances instances, ${join_seconds} s windows (commandstats after CONFIG RESETSTAT; EVALSHA = the beats, lua/room_tick.lua):"
echo "| round | joins | window ms | Redis µs per join: EVALSHA – every command | EVALSHA calls (instances × window / 100 ms) | cursor moves | µs per beat | other commands: calls, µs (the beats' inner commands again, and the cache's rechecks) | Redis commands per join | Redis main-thread CPU: µs per join, per beat, per instance-second |"
echo "|---|---|---|---|---|---|---|---|---|---|"
awk -F'|' '$1 == "join" { printf "| %s | %s | %s | %s – %s | %s (%s) | %s | %s | %s, %s | %s | %s, %s, %s |\n", $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 }' "$results"
echo
awk -F'|' -v inst="$instances" "$LIB_AWK_MEDIAN"'
    $1 == "join" { lo = lo " " $5; hi = hi " " $6; beat = beat " " $10; jr = jr " " ($3 * 1000 / $4)
                   cmds = cmds " " $13; cpu = cpu " " $14; cpub = cpub " " $15; cpui = cpui " " $16
                   pib = pib " " ($7 * $10) * 1000 / $4 / inst }
    $1 == "serve_join" { sj = sj " " $4; rsj[$2] = $4 } $1 == "poll" { po = po " " $4; rpo[$2] = $4 }
    $1 == "cached" { ca = ca " " $4; rca[$2] = $4 }
    $1 == "ticket_ok" { tk = tk " " $3; rtk[$2] = $3 } $1 == "off_ok" { off = off " " $3; roff[$2] = $3 }
    $1 == "beat0" { b0 = b0 " " $3 } $1 == "beat400" { b4 = b4 " " $3 }
    function verdict(ok) { return ok ? "met" : "NOT MET" }
    END {
        mlo = median(lo); mhi = median(hi); mb = median(beat); mr = median(jr); mpib = median(pib)
        mcpu = median(cpu); mcpub = median(cpub); mcpui = median(cpui); mb0 = median(b0); mb4 = median(b4)
        msj = median(sj); mpo = median(po); mca = median(ca); mtk = median(tk); moff = median(off)
        # The same ratios round by round (the paths of a round ran minutes apart at most).
        for (r in rca) { qj = qj sprintf(" %.2f", rsj[r] / rca[r]); qp = qp sprintf(" %.2f", rpo[r] / rca[r]) }
        for (r in roff) qt = qt sprintf(" %.2f", rtk[r] / roff[r])
        if (mhi <= 0.05) jv = "met"; else if (mlo > 0.05) jv = "NOT MET"; else jv = "NOT MET by every command, met by the beats alone"
        print "| what | median | rounds | target |"
        print "|---|---|---|---|"
        printf "| Redis µs per join, amortized: EVALSHA (the beats) – every command (an upper bound) | %.4f – %.4f | %s /%s | ≤ 0.05 — %s |\n", mlo, mhi, lo, hi, jv
        printf "| joins/s through %d instances | %.0f | %s | — |\n", inst, mr, jr
        printf "| Redis commands of any kind per join | %.4f | %s | none per join (a call per join would make it ≥ 1) |\n", median(cmds), cmds
        printf "| Redis µs per beat in the window (EVALSHA usec ÷ calls) | %.1f | %s | — |\n", mb, beat
        printf "| Redis main-thread CPU in the window: µs per join, per beat, per instance-second | %.4f, %.0f, %.0f | %s /%s /%s | — |\n", mcpu, mcpub, mcpui, cpu, cpub, cpui
        printf "| one beat alone flushing 10 buckets, no backlog (Redis µs per call) | %.1f | %s | — |\n", mb0, b0
        printf "| one beat alone flushing 10 buckets, 400 buckets pending | %.1f | %s | — |\n", mb4, b4
        printf "| serve CPU µs per join (1 instance, wrk) | %.2f | %s | — |\n", msj, sj
        printf "| serve CPU µs per poll | %.2f | %s | — |\n", mpo, po
        printf "| serve CPU µs per cached sold-out answer | %.2f | %s | — |\n", mca, ca
        printf "| join / cached: of the medians; median of the rounds'"'"' ratios | %.2f×; %.2f× | %s | ≤ 1.5× — %s |\n", msj / mca, median(qj), qj, verdict(msj / mca <= 1.5 && median(qj) <= 1.5)
        printf "| poll / cached: of the medians; median of the rounds'"'"' ratios | %.2f×; %.2f× | %s | ≤ 1.5× — %s |\n", mpo / mca, median(qp), qp, verdict(mpo / mca <= 1.5 && median(qp) <= 1.5)
        printf "| buy ok, ticket room (Redis µs per call) | %.1f | %s | — |\n", mtk, tk
        printf "| buy ok, room off (Redis µs per call) | %.1f | %s | — |\n", moff, off
        printf "| ticket ok / room-off ok: of the medians (µs apart); median of the rounds'"'"' ratios | %.2f× (%+.1f µs); %.2f× | %s | ≤ 1.15× — %s |\n", mtk / moff, mtk - moff, median(qt), qt, verdict(mtk / moff <= 1.15 && median(qt) <= 1.15)
        print ""
        n = 5000000
        cores = msj * n / 1e6
        print "4. Headline arithmetic, 5,000,000 joins in 1 s (the medians above):"
        printf "- serve: %.2f µs × 5,000,000 = %.1f core-seconds: about %.0f cores busy for that second (polls at Retry-After: %.2f µs each on top).\n", msj, cores, cores, mpo
        printf "- Redis, read from the amortized figure: %.4f–%.4f µs × 5,000,000 = %.2f–%.2f s of Redis time. That figure spreads this run'"'"'s beats over its %.0f joins/s; the beats do not grow with the joins, they grow with the instances.\n", mlo, mhi, mlo * n / 1e6, mhi * n / 1e6, mr
        printf "- Redis, read from the beats: %.0f one-core instances × 10 beats/s × %.0f µs (one beat alone, 400 buckets pending) = %.2f s of Redis time in that second; from the window'"'"'s Redis CPU per instance-second (%.0f µs): %.2f s. The joins themselves: 0.\n", cores, mb4, cores * 10 * mb4 / 1e6, mcpui, cores * mcpui / 1e6
    }' "$results"

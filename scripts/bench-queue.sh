#!/usr/bin/env bash
# What the waiting room costs Redis (docs/waiting-room.md, "Cost"): Redis µs
# per join (lua/queue_join.lua: a new position, and a repeat join), per
# position read (lua/queue_read.lua, one user), per buy with the room on and
# off on the same item (rate mode: ok, sold out, and the room's refusals),
# and the bytes each queued user takes.
#
# On one throwaway redis-server: one campaign per path, all with the same
# item (stock 100,000,000, per_user_limit 1000, no rate limit), preheated by
# the binary; N users (u000000000000 .. , the ids redis-benchmark's
# __rand_int__ makes with -r N) joined through queue_join.lua by `redis-cli
# --pipe`. redis-benchmark drives each path's EVALSHA (REQUESTS calls,
# CLIENTS connections); before each run CONFIG RESETSTAT, after it
# `usec_per_call` of evalsha from INFO commandstats. The paths alternate
# within each round, ROUNDS rounds; the table gives each path's median and
# the room-on buy against the room-off buy of the same outcome (the machine
# is shared: single runs swing ±20-30 %, so only medians of alternated
# rounds are quoted). Before the rounds, each path's call runs once through
# redis-cli and must answer the outcome its name says, so a wrong key or a
# stale state cannot measure another path.
#
# The calls are the binary's own: buy.lua's EVALSHA word by word from
# `seckill loadtest --print-command full` (its ten keys moved to the live
# namespace), the seven room keys after them as `seckill buy` sends them for
# an item whose room is on; each script's SHA (lua/ resolved as build.rs does
# it) is checked against the one the binary loads.
#
#   scripts/bench-queue.sh [ROUNDS=5] [REQUESTS=100000] [CLIENTS=50] [N=100000]
#   CARGO_TARGET_DIR is honoured (the binary is $CARGO_TARGET_DIR/release/seckill).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
rounds=${1:-5} requests=${2:-100000} clients=${3:-50} users=${4:-100000}
. scripts/lib.sh
lib_need redis-server "apt-get install -y redis-server"
lib_need redis-benchmark "apt-get install -y redis-tools"
lib_cargo
cargo build --release --quiet
seckill="${CARGO_TARGET_DIR:-$repo/target}/release/seckill"
lib_workdir
work="$LIB_WORK"
lib_start_redis bench
cli() { redis-cli -p "$REDIS_PORT" "$@"; }
export SECKILL_REDIS_URL="$REDIS_URL"


# campaign_file ID ROOM: the bench item, behind ROOM (a `waiting_room:` line, or none).
campaign_file() {
    cat >"$work/$1.yaml" <<YAML
campaign: $1
per_user_limit: 1000
$2
items:
  - { id: "1001", name: bench, price: "1499.00", stock: 100000000 }
YAML
    # Every campaign sells the same item id: shared on purpose.
    local out
    out=$("$seckill" -c "$work/$1.yaml" preheat --allow-shared-items 2>&1) \
        || { echo "bench-queue: preheat of campaign $1 failed: $out" >&2; exit 1; }
}
# A rate room that admits everyone at once (1,000,000/s: N users in 0.1 s)
# and keeps them admitted for the whole run; one that admits nobody in the run.
open_room="waiting_room: { mode: rate, admit_rate: 1000000/s, admission_ttl: 24h }"
shut_room="waiting_room: { mode: rate, admit_rate: 1/24h, admission_ttl: 24h }"
campaign_file off ""                    # room off: buy ok
campaign_file offso ""                  # room off: sold out
campaign_file on "$open_room"           # room on, N users joined and admitted: buy ok, repeat join, read
campaign_file onso "$open_room"         # room on, N users joined and admitted: sold out
campaign_file wait "$shut_room"         # room on, N users joined, none admitted
campaign_file fresh "$open_room"        # room on: new joins
registering="waiting_room: { mode: rate, admit_rate: 1000000/s, admission_ttl: 24h,
  registration: { until: 2099-01-01T00:00:00Z, per_device: 3 } }"
campaign_file reg "$registering"        # bytes of a registration
campaign_file probe "$registering"      # the binary's own calls, for their SHAs
for so in offso onso; do cli SET "seckill:{$so:1001}:stock" 0 >/dev/null; done

# The buy call, word by word: EVALSHA sha 10 KEYS... user qty request_id order_id campaign item timeout.
eval "buy=($("$seckill" -c "$work/off.yaml" loadtest --print-command full))"
[ "${buy[0]} ${buy[2]}" = "EVALSHA 10" ] || { echo "bench-queue: unexpected buy call ${buy[*]}" >&2; exit 1; }
# load SCRIPT [SHA]: SCRIPT LOAD of the resolved lua/SCRIPT; its SHA, which
# must be SHA when given.
load() {
    local sha
    sha=$(cli -x SCRIPT LOAD < <(lib_resolved_lua "$1"))
    [ -z "${2:-}" ] || [ "$sha" = "$2" ] \
        || { echo "bench-queue: lua/$1 resolves to SHA $sha, the binary runs $2" >&2; exit 1; }
    echo "$sha"
}
load buy.lua "${buy[1]}" >/dev/null
join_sha=$(load queue_join.lua)
read_sha=$(load queue_read.lua)
register_sha=$(load queue_register.lua)
# The binary loads the same queue scripts: after a flush, its own join,
# position and register leave exactly these SHAs in the cache.
cli SCRIPT FLUSH >/dev/null
"$seckill" -c "$work/probe.yaml" register --user probe --device probe-phone >/dev/null
"$seckill" -c "$work/probe.yaml" queue join --item 1001 --user probe >/dev/null
"$seckill" -c "$work/probe.yaml" queue position --item 1001 --user probe >/dev/null || true
for sha in "$join_sha" "$read_sha" "$register_sha"; do
    [ "$(cli SCRIPT EXISTS "$sha")" = 1 ] \
        || { echo "bench-queue: the binary did not load script $sha: lua/ and the build differ" >&2; exit 1; }
done
load buy.lua "${buy[1]}" >/dev/null

room_keys() { # campaign ROLE...: the keys of the room of item 1001, in the order given
    local c="$1" k out=()
    shift
    for k in "$@"; do out+=("seckill:{$c:1001}:$k"); done
    echo "${out[*]}"
}
join_keys() { room_keys "$1" room queue line registered risk admitted shuffled; }
read_keys() { room_keys "$1" room queue registered risk admitted shuffled active; }
buy_call() { # campaign room(0/1) user: buy.lua as `seckill buy` sends it
    local c="$1" words=() k
    for ((k = 3; k < 13; k++)); do
        words+=("$(sed "s/^seckill-loadtest:{off:1001}:/seckill:{$c:1001}:/" <<<"${buy[k]}")")
    done
    if [ "$2" = 1 ]; then
        # shellcheck disable=SC2207 # key names have no spaces
        words+=($(room_keys "$c" room queue registered risk admitted active shuffled))
    fi
    printf '%q ' EVALSHA "${buy[1]}" "${#words[@]}" "${words[@]}" "$3" 1 "" "o__rand_int__" "$c" 1001 0
}

# pipe_users CAMPAIGN SCRIPT: N users through queue_join (join) or
# queue_register (register) in one `redis-cli --pipe`, which must report no error.
pipe_users() {
    local c="$1" what="$2" out
    # shellcheck disable=SC2046 # key names have no spaces
    out=$(LC_ALL=C awk -v n="$users" -v what="$what" -v join_sha="$join_sha" -v reg_sha="$register_sha" \
        -v jk="$(join_keys "$c")" -v rk="$(room_keys "$c" room registered devices ips)" '
        function word(w) { printf "$%d\r\n%s\r\n", length(w), w }
        BEGIN {
            nj = split(jk, jkeys, " "); nr = split(rk, rkeys, " ")
            for (i = 0; i < n; i++) {
                user = sprintf("u%012d", i)
                if (what == "join") {
                    printf "*%d\r\n", 4 + nj; word("EVALSHA"); word(join_sha); word(nj)
                    for (k = 1; k <= nj; k++) word(jkeys[k]); word(user)
                } else {
                    printf "*%d\r\n", 6 + nr; word("EVALSHA"); word(reg_sha); word(nr)
                    for (k = 1; k <= nr; k++) word(rkeys[k])
                    word(user); word(sprintf("phone-%d", i))
                    word(sprintf("10.%d.%d.0/24", int(i / 65536) % 256, int(i / 256) % 256))
                }
            }
        }' | cli --pipe 2>&1)
    grep -q "errors: 0, replies: $users" <<<"$out" \
        || { echo "bench-queue: $what into $c: $out" >&2; exit 1; }
    local key=seckill:{$c:1001}:queue
    [ "$what" = join ] || key=seckill:{$c:1001}:registered
    [ "$(cli HLEN "$key")" = "$users" ] \
        || { echo "bench-queue: $what into $c: $key holds $(cli HLEN "$key") of $users users" >&2; exit 1; }
}

# Bytes per queued user: the room's keys after N joins, and used_memory's growth.
mem_before=$(cli INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
pipe_users on join
mem_after=$(cli INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
usage() { cli MEMORY USAGE "seckill:{$1:1001}:$2" SAMPLES 0; }
q=$(usage on queue) l=$(usage on line) r=$(usage on room)
pipe_users reg register
pipe_users reg join
g=$(usage reg registered) d=$(usage reg devices) i=$(usage reg ips)
for c in onso wait; do pipe_users "$c" join; done
# Everyone of `on` admitted before the rounds (1,000,000/s: 0.1 s after the first join).
serving=$("$seckill" -c "$work/on.yaml" --format json queue status \
    | tr -d ' \n' | sed -n 's/.*"serving":\([0-9]*\).*/\1/p')
[ "$serving" = "$users" ] || { echo "bench-queue: room on serves $serving of $users" >&2; exit 1; }

# Each path: name | expected outcome of one call | the call. The user ids
# are u + 12 digits: -r N picks among the N joined users, -r 100000000
# (mostly) never joined ones.
joined="-r $users"
paths=(
    "queue_join, a new user|joined|-r 100000000|EVALSHA $join_sha 7 $(join_keys fresh) u__rand_int__"
    "queue_join, a repeat (same position)|queued|$joined|EVALSHA $join_sha 7 $(join_keys on) u__rand_int__"
    "queue_read, one admitted user|admitted|$joined|EVALSHA $read_sha 7 $(read_keys on) u__rand_int__"
    "queue_read, one waiting user|waiting|$joined|EVALSHA $read_sha 7 $(read_keys wait) u__rand_int__"
    "buy ok, room off|ok|$joined|$(buy_call off 0 u__rand_int__)"
    "buy ok, room on (admitted)|ok|$joined|$(buy_call on 1 u__rand_int__)"
    "buy sold out, room off|sold_out|$joined|$(buy_call offso 0 u__rand_int__)"
    "buy sold out, room on|sold_out|$joined|$(buy_call onso 1 u__rand_int__)"
    "buy not_admitted, room on|not_admitted|$joined|$(buy_call wait 1 u__rand_int__)"
    "buy not_queued, room on|not_queued|-r 100000000|$(buy_call on 1 x__rand_int__)"
)
for path in "${paths[@]}"; do
    IFS='|' read -r name expected _ call <<<"$path"
    probe=${call//__rand_int__/000000000042}
    [ "$expected" != joined ] || probe=${call//__rand_int__/probe-new}
    [ "$expected" != not_queued ] || probe=${call//__rand_int__/never}
    got=$(eval "cli $probe" | head -c 100000)
    grep -qx "$expected" <<<"$got" \
        || { echo "bench-queue: $name: one call answered $(head -3 <<<"$got" | tr '\n' ' '), not $expected" >&2; exit 1; }
done

results="$work/results"
: >"$results"
lib_bench_header
echo "$requests calls per run, $clients clients, $rounds alternated rounds, $users users joined; $(date -u +%Y-%m-%dT%H:%MZ)"
for round in $(seq "$rounds"); do
    for path in "${paths[@]}"; do
        IFS='|' read -r name _ range call <<<"$path"
        # The order streams hold what the ok paths sold: emptied, the key and its group kept.
        for c in off on; do cli XTRIM "seckill:{$c:1001}:orders" MAXLEN 0 >/dev/null; done
        cli CONFIG RESETSTAT >/dev/null
        eval "redis-benchmark -p $REDIS_PORT -n $requests -c $clients $range $call" >/dev/null 2>&1 \
            || { echo "bench-queue: $name: redis-benchmark failed: $call" >&2; exit 1; }
        usec=$(lib_evalsha_usec)
        [ "$usec" != failed ] || { echo "bench-queue: $name: the script failed (call: $call)" >&2; exit 1; }
        printf '%s|%s\n' "$name" "$usec" >>"$results"
    done
    echo "round $round done" >&2
done

awk -F'|' "$LIB_AWK_MEDIAN"'
    { v[$1] = v[$1] " " $2; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
    END {
        for (i = 1; i <= n; i++) m[order[i]] = median(v[order[i]])
        ok = m["buy ok, room off"]; so = m["buy sold out, room off"]
        print "| path | Redis µs per call (median) | rounds | ratio |"
        print "|---|---|---|---|"
        for (i = 1; i <= n; i++) {
            p = order[i]; r = "—"
            if (p == "buy ok, room on (admitted)") r = sprintf("%.2f× room off, +%.1f µs", m[p] / ok, m[p] - ok)
            else if (p == "buy sold out, room on") r = sprintf("%.2f× room off, %+.1f µs", m[p] / so, m[p] - so)
            else if (p ~ /room on/) r = sprintf("%.2f× buy ok, room off", m[p] / ok)
            printf "| %s | %.1f | %s | %s |\n", p, m[p], v[p], r
        }
    }' "$results"

per() { awk -v b="$1" -v n="$users" 'BEGIN { printf "%.1f", b / n }'; }
echo
echo "Bytes per queued user ($users users, ids of 13 bytes, MEMORY USAGE ... SAMPLES 0):"
echo "| key | bytes | per user |"
echo "|---|---|---|"
echo "| …:queue (hash user → \"<position> <joined at ms>\") | $q | $(per "$q") |"
echo "| …:line (list of users in position order) | $l | $(per "$l") |"
echo "| …:room (settings and counters, one per item) | $r | — |"
echo "| queue + line + room | $((q + l + r)) | $(per $((q + l + r))) |"
echo "| used_memory growth over the $users joins | $((mem_after - mem_before)) | $(per $((mem_after - mem_before))) |"
echo "| with registration: …:registered | $g | $(per "$g") |"
echo "| with registration: …:devices (one device per user) | $d | $(per "$d") |"
echo "| with registration: …:ips (256 users per /24) | $i | $(per "$i") |"

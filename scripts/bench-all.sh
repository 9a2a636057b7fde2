#!/usr/bin/env bash
# Every benchmark behind docs/perf.md, one after the other, each one's output
# in bench-out/<name>.txt (stdout and stderr, as printed), so the page's
# figures can be replaced by a fresh set measured on one machine, one commit.
#
# Runs, in this order (each script's own header says what it measures):
#   script-cost        scripts/bench-script-cost.sh ROUNDS       (BEFORE/ONLY are passed through)
#   serve              scripts/bench-serve.sh --rounds ROUNDS
#   buckets            scripts/bench-buckets.sh                  (one run per row: no rounds;
#                                                                 starts scripts/cluster.sh's
#                                                                 cluster on 21001.. if not running)
#   consume            ROUNDS=ROUNDS scripts/bench-consume.sh    (BASELINE/MEMORY_SIZES passed through)
#   queue              scripts/bench-queue.sh ROUNDS
#   room               scripts/bench-room.sh --rounds ROUNDS
#   reservations       scripts/bench-reservations.sh ROUNDS
#   status             scripts/bench-status.sh ROUNDS
#   stop               scripts/bench-stop.sh ROUNDS
#   vs-redis-benchmark scripts/bench-vs-redis-benchmark.sh --rounds ROUNDS
#   wait-replicas      scripts/bench-wait-replicas.sh ROUNDS
#   regions            scripts/bench-regions.sh --rounds ROUNDS   (writes docs/perf.md's
#                                                                 Regions section; not with ROUNDS=1)
#   seats              scripts/bench-seats.sh --rounds ROUNDS     (writes docs/perf.md's
#                                                                 Seats section; not with ROUNDS=1)
#   loadtest           seckill loadtest --variant all; --variant full --rate 30000
#                      --duration 5s (two throwaway Redis servers); --buckets 8 on the
#                      local cluster (perf.md, "Load test runs")
# ROUNDS unset: each script's own default (5, or 7 for reservations and stop,
# 3 for consume and wait-replicas; 5 for regions and seats, plus its 3 stranded-window runs). ROUNDS=1 is a quick pass to see that every
# bench runs; quote only figures of the full rounds.
#
# How long: about 30–45 minutes on a 2-core machine with the defaults (the
# release build first, then consume's million-order reconcile, script-cost's
# 17 paths and queue's 10 paths take most of it); ROUNDS=1 about 10 minutes.
# Nothing else should run on the machine meanwhile: the figures are only as
# good as the quiet they were measured in (each file starts with the load).
#
#   scripts/bench-all.sh                     every bench, each script's rounds
#   ROUNDS=1 scripts/bench-all.sh            a quick pass
#   ONLY_BENCH="serve consume" scripts/bench-all.sh   only these names (above)
#
# Needs what the benches need: redis-server, redis-cli, redis-benchmark,
# mariadbd, wrk (bench-serve, bench-room), GNU time: `scripts/install-servers.sh --bench`
# installs what is missing.
# Stops at the first bench that fails (its file says why); bench-out/ keeps
# what ran before it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
lib_cargo

rounds="${ROUNDS:-}"
only="${ONLY_BENCH:-}"
out=bench-out
mkdir -p "$out"

# wanted NAME: true when ONLY_BENCH is empty or names NAME.
wanted() {
    [ -z "$only" ] && return 0
    case " $only " in *" $1 "*) return 0 ;; esac
    return 1
}

# run NAME COMMAND...: COMMAND's output into bench-out/NAME.txt, with a first
# line saying what ran, on which commit, and how loaded the machine was.
run() {
    local name="$1" started
    shift
    wanted "$name" || return 0
    started=$(date +%s)
    echo "== $name: $* (output in $out/$name.txt)" >&2
    {
        echo "# $(date -u +%Y-%m-%dT%H:%MZ) $*"
        echo "# $(lib_bench_header)"
        "$@"
    } >"$out/$name.txt" 2>&1
    echo "   done in $(($(date +%s) - started)) s" >&2
}

# A positional rounds argument when ROUNDS is set; none otherwise.
positional=()
flag=()
if [ -n "$rounds" ]; then
    positional=("$rounds")
    flag=(--rounds "$rounds")
fi

cargo build --release --quiet

run script-cost scripts/bench-script-cost.sh "${positional[@]}"
run serve scripts/bench-serve.sh "${flag[@]}"
run buckets scripts/bench-buckets.sh
if [ -n "$rounds" ]; then
    run consume env ROUNDS="$rounds" scripts/bench-consume.sh
else
    run consume scripts/bench-consume.sh
fi
run queue scripts/bench-queue.sh "${positional[@]}"
run room scripts/bench-room.sh "${flag[@]}"
run reservations scripts/bench-reservations.sh "${positional[@]}"
run status scripts/bench-status.sh "${positional[@]}"
run stop scripts/bench-stop.sh "${positional[@]}"
run vs-redis-benchmark scripts/bench-vs-redis-benchmark.sh "${flag[@]}"
run wait-replicas scripts/bench-wait-replicas.sh "${positional[@]}"
# A quick pass (ROUNDS=1) must not replace the page's figures.
if [ "$rounds" = 1 ]; then
    run regions scripts/bench-regions.sh --rounds 1 --no-write
else
    run regions scripts/bench-regions.sh "${flag[@]}"
fi
if [ "$rounds" = 1 ]; then
    run seats scripts/bench-seats.sh --rounds 1 --no-write
else
    run seats scripts/bench-seats.sh "${flag[@]}"
fi

# The load-test runs docs/perf.md quotes: no bench script of their own.
loadtest_runs() {
    local seckill=target/release/seckill
    lib_start_redis variants
    "$seckill" -c campaigns/moutai.yaml --redis "$REDIS_URL" loadtest --variant all
    lib_start_redis open-loop
    "$seckill" -c campaigns/moutai.yaml --redis "$REDIS_URL" loadtest --variant full --rate 30000 --duration 5s
    # The cluster of scripts/cluster.sh, stopped again if started here (as bench-buckets does).
    local started_here=0
    redis-cli -p 21001 cluster info 2>/dev/null | grep -q cluster_state:ok || started_here=1
    SECKILL_CLUSTER_AOF=no scripts/cluster.sh up >/dev/null
    "$seckill" -c campaigns/moutai.yaml --redis redis://127.0.0.1:21001 --cluster loadtest --buckets 8 --variant full
    if [ "$started_here" = 1 ]; then scripts/cluster.sh down >/dev/null; fi
}
run loadtest loadtest_runs

echo "every bench ran; outputs in $out/" >&2

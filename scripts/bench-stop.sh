#!/usr/bin/env bash
# How long each long-running loop takes to exit after SIGTERM (what
# `systemctl stop` waits for): from the signal to the process's exit, for
# `status --watch 1h`, `expire --loop --interval 1h`, `rebalance --watch
# --interval 1h` (all between passes) and an idle `consume`; the loops in
# turn, ROUNDS times, medians.
#
#   scripts/bench-stop.sh [ROUNDS]   (default 7)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
rounds=${1:-7}
lib_cargo
cargo build --release --quiet
bin=target/release/seckill
lib_workdir
lib_start_redis stop
file="$LIB_WORK/stop.yaml"
printf 'campaign: stop\nkeep_after_end: 2h\npayment_timeout: 1m\nitems:\n  - { id: "1", name: Bottle, price: "1.00", stock: 40, buckets: 4 }\norders:\n  store: sqlite://%s/orders.db\n' "$LIB_WORK" >"$file"
"$bin" -c "$file" --redis "$REDIS_URL" preheat >/dev/null 2>&1
loops=("status --watch 1h" "expire --loop --interval 1h" "rebalance --watch --interval 1h" "consume")
echo "seckill $(git rev-parse --short HEAD 2>/dev/null || echo '?'), release build; $(nproc) cores; SIGTERM 1 s after start, $rounds rounds"
printf '| loop | ms from SIGTERM to exit (each round) | median | exit codes |\n|---|---|---|---|\n'
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
declare -A times codes
for round in $(seq "$rounds"); do
  for loop in "${loops[@]}"; do
    # shellcheck disable=SC2086
    "$bin" -c "$file" --redis "$REDIS_URL" $loop >/dev/null 2>&1 &
    pid=$!
    sleep 1
    start=$(date +%s%N)
    kill -TERM "$pid"
    code=0
    wait "$pid" || code=$?
    end=$(date +%s%N)
    times[$loop]+="$(( (end - start) / 1000000 )) "
    codes[$loop]+="$code "
  done
done
for loop in "${loops[@]}"; do
  # shellcheck disable=SC2086
  printf '| `%s` | %s| %s | %s|\n' "$loop" "${times[$loop]}" "$(median ${times[$loop]})" "${codes[$loop]}"
done

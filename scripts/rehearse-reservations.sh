#!/usr/bin/env bash
# Rehearse a sale where an ok is a reservation (campaigns/moutai-reservations.yaml,
# payment_timeout 30s) on a throwaway Redis with the real binary: five
# reservations sell the stock out; two are paid, one cancelled and its bottle
# sold again at once; the unpaid ones miss their deadline, a payment after it
# is refused, `expire` releases them and they are sold again (one to a shopper
# whose reservation expired); the orders and their states go into SQLite and
# `status` and `reconcile` show reserved, paid and released units along the
# way (initial = left + reserved + paid).
#
#   scripts/rehearse-reservations.sh            # about 40 s (the 30 s timeout)
#   TIMEOUT=5s scripts/rehearse-reservations.sh # the same, faster
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
lib_cargo
cargo build --release --quiet
seckill=target/release/seckill

lib_workdir
campaign="$LIB_WORK/moutai-reservations.yaml"
sed "s/^payment_timeout: 30s/payment_timeout: ${TIMEOUT:-30s}/" campaigns/moutai-reservations.yaml >"$campaign"
lib_start_redis sale
export SECKILL_REDIS_URL="$REDIS_URL" SECKILL_ORDERS_DB="sqlite://$LIB_WORK/orders.db"
echo "# throwaway Redis at $SECKILL_REDIS_URL, payment_timeout ${TIMEOUT:-30s}"

run() { echo; echo "\$ seckill $(printf '%q ' "$@")"; "$seckill" -c "$campaign" "$@" || echo "(exit code $?)"; }
order_of() { "$seckill" -c "$campaign" buy --item 3001 --user "$1" --format json | sed -n 's/.*"order_id": "\(.*\)".*/\1/p'; }

run preheat
declare -A order
for user in ann ben cat dan eve; do
  order[$user]=$(order_of "$user")
  echo "\$ seckill buy --item 3001 --user $user   # ok, reserved: ${order[$user]}"
done
run buy --item 3001 --user fay
run pay --order "${order[ann]}"
run pay --order "${order[ben]}"
run pay --order "${order[ben]}"
run cancel --order "${order[cat]}" --reason "changed her mind"
run buy --item 3001 --user fay
run consume --drain
run reconcile
run status
echo; echo "# waiting for the deadlines of dan's and eve's reservations (${TIMEOUT:-30s})"
deadline=$(redis-cli -p "$REDIS_PORT" zrange 'seckill:{moutai-pay-1111:3001}:deadlines' 0 -1 withscores | sed -n 4p)
while [ "$(redis-cli -p "$REDIS_PORT" eval 'local t = redis.call("TIME") return t[1] * 1000 + math.floor(t[2] / 1000)' 0)" -le "$deadline" ]; do sleep 0.2; done
run pay --order "${order[dan]}"
run expire
run buy --item 3001 --user gus
run buy --item 3001 --user dan
run consume --drain
run reconcile
run status
query="SELECT user_id, state, release_reason FROM orders ORDER BY bought_at"
echo; echo "\$ sqlite3 orders.db '$query'"
if command -v sqlite3 >/dev/null; then
  sqlite3 "$LIB_WORK/orders.db" "$query"
else
  python3 -c 'import sqlite3, sys; [print(*r, sep="|") for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])]' \
    "$LIB_WORK/orders.db" "$query"
fi

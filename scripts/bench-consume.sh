#!/usr/bin/env bash
# bench-consume.sh — the order side's speed: `seckill consume --drain` into
# SQLite and MariaDB, then `seckill reconcile` (orders/s and peak memory).
#
# Starts its own redis-server and mariadbd on free loopback ports (temp
# dirs, removed on exit), makes N real orders by running the real buy script
# (the very EVALSHA `seckill loadtest --print-command full` prints, so its
# KEYS/ARGV are the binary's, pipelined with `redis-cli --pipe`, so stock,
# buyers and the order stream agree), then per store and round: rewinds the
# consumer group (every order undelivered again), empties the database,
# times `seckill consume --drain` (the whole process, start-up included) and
# `seckill reconcile` (which must exit 0 or the benchmark fails).
#
# This machine is shared and noisy (single runs vary ±20–30%): every figure
# is the median of ROUNDS rounds, and with BASELINE the two binaries run in
# alternated rounds on the same orders, so their ratio is measured side by
# side. Then reconcile's peak RSS (/usr/bin/time) and orders/s at each of
# MEMORY_SIZES orders, to show memory stays flat as the stream grows.
#
# Usage: scripts/bench-consume.sh [N] [BATCH]            (defaults: 200000 1000)
# Environment:
#   ROUNDS=3                        rounds per store (medians are reported)
#   BASELINE=/path/to/seckill       another build to alternate with (e.g. the branch point's);
#                                   it must read the same campaign files
#   MEMORY_SIZES="100000 1000000"   reconcile's memory at these sizes ("" skips)
# Needs: redis-server, redis-cli, mariadb-server (mariadbd, mariadb-install-db), cargo, GNU time.
set -euo pipefail

orders="${1:-200000}"
batch="${2:-1000}"
rounds="${ROUNDS:-3}"
baseline="${BASELINE:-}"
memory_sizes="${MEMORY_SIZES-100000 1000000}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
. "$repo/scripts/lib.sh"
lib_workdir
work="$LIB_WORK"

lib_need redis-server "apt-get install -y redis-server"
lib_need redis-cli "apt-get install -y redis-tools"
lib_need mariadbd "apt-get install -y mariadb-server"
[ -x /usr/bin/time ] || { echo "bench-consume: /usr/bin/time not found (apt-get install -y time)" >&2; exit 1; }
export PATH="$PATH:/usr/sbin"
[ -z "$baseline" ] || [ -x "$baseline" ] || { echo "bench-consume: BASELINE=$baseline is not an executable" >&2; exit 1; }

echo "building release binary..." >&2
(cd "$repo" && cargo build --release --quiet)
seckill="$repo/target/release/seckill"
commit="$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"

lib_start_redis bench
redis_port="$REDIS_PORT"

maria_port="$(lib_free_port)"
mariadb-install-db --no-defaults --datadir="$work/mariadb" --auth-root-authentication-method=normal \
    --user=root --skip-test-db >"$work/install.log" 2>&1
mariadbd --no-defaults --datadir="$work/mariadb" --port="$maria_port" --socket="$work/mariadb.sock" \
    --bind-address=127.0.0.1 --user=root --skip-log-bin --skip-name-resolve \
    --innodb-buffer-pool-size=256M --log-error="$work/mariadb.err" >/dev/null 2>&1 &
lib_track $!
maria() { mariadb --no-defaults -h127.0.0.1 -P"$maria_port" -uroot "$@"; }
until maria -e 'SELECT 1' >/dev/null 2>&1; do sleep 0.2; done
maria -e "CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY 'bench-pw';
    GRANT ALL ON bench.* TO 'bench'@'127.0.0.1';"

export SECKILL_REDIS_URL="$REDIS_URL"

# The buy call of one order, word by word, into the file $2: the exact
# EVALSHA the binary prints for the load test's `full` variant (the script's
# KEYS and ARGV in the order `seckill buy` sends them; `__rand_int__` stands
# for the order's number in the user, its rate key and the order id). Its
# keys are the load-test namespace's (seckill-loadtest:{c:i}:...); consume
# and reconcile read the live sale's (seckill:{c:i}:...), where preheat put
# the item, so they move there, and the live meta key must exist.
buy_words() { # campaign-file words-file
    local call word numkeys k
    eval "call=($("$seckill" -c "$1" loadtest --print-command full))"
    [ "${call[0]}" = EVALSHA ] || { echo "bench-consume: --print-command printed ${call[*]}" >&2; exit 1; }
    numkeys="${call[2]}"
    for ((k = 3; k < 3 + numkeys; k++)); do
        word="${call[k]}"
        [ "${word#seckill-loadtest:}" != "$word" ] \
            || { echo "bench-consume: key $word is not in the load-test namespace" >&2; exit 1; }
        call[k]="seckill:${word#seckill-loadtest:}"
    done
    [ "$(redis-cli -p "$redis_port" EXISTS "${call[3]}")" = 1 ] \
        || { echo "bench-consume: ${call[3]} (the buy's meta key) is not what preheat wrote" >&2; exit 1; }
    for word in "${call[@]}"; do
        case "$word" in *$'\n'* | *$'\r'*) echo "bench-consume: a word spans lines: $word" >&2; exit 1 ;; esac
    done
    printf '%s\n' "${call[@]}" >"$2"
    STOCK_KEY="${call[4]}"
    STREAM_KEY="${STOCK_KEY%:stock}:orders"
}

# N copies of the call in $1, RESP-encoded for `redis-cli --pipe`, each with
# its own number (users u0000000.., order ids o0000000..).
make_buys() { # words-file count
    LC_ALL=C awk -v n="$2" '{ w[NR] = $0 } END {
        for (i = 0; i < n; i++) {
            number = sprintf("%07d", i)
            printf "*%d\r\n", NR
            for (k = 1; k <= NR; k++) {
                word = w[k]
                gsub(/__rand_int__/, number, word)
                printf "$%d\r\n%s\r\n", length(word), word
            }
        }
    }' "$1"
}

# A campaign of one item with $2 units, all sold by $2 real buys.
sell_out() { # campaign-id units
    local campaign="$1" units="$2" left
    cat >"$work/$campaign.yaml" <<EOF
campaign: $campaign
per_user_limit: 1
items:
  - id: "1001"
    name: Bench item
    price: "1.00"
    stock: $units
EOF
    "$seckill" -c "$work/$campaign.yaml" preheat >/dev/null 2>&1
    buy_words "$work/$campaign.yaml" "$work/$campaign.words"
    make_buys "$work/$campaign.words" "$units" | redis-cli -p "$redis_port" --pipe >"$work/pipe.log"
    left="$(redis-cli -p "$redis_port" GET "$STOCK_KEY")"
    [ "$left" = 0 ] || { echo "bench-consume: buys left stock $left, expected 0" >&2; cat "$work/pipe.log" >&2; exit 1; }
}

# Every order undelivered again and the store empty: the next consume starts from scratch.
rewind() { # store-name
    redis-cli -p "$redis_port" XGROUP SETID "$STREAM_KEY" orders-db 0 >/dev/null
    case "$1" in
        sqlite) rm -f "$work/orders.db" "$work/orders.db-wal" "$work/orders.db-shm" ;;
        mariadb) maria -e "DROP DATABASE IF EXISTS bench; CREATE DATABASE bench;" ;;
    esac
}

store_url() { # store-name
    case "$1" in
        sqlite) echo "sqlite://$work/orders.db" ;;
        mariadb) echo "mysql://bench:bench-pw@127.0.0.1:$maria_port/bench" ;;
    esac
}

# Wall seconds and peak RSS (KiB) of one command, "<seconds> <kib>"; fails with it.
measured() { # out-file command...
    local out="$1"
    shift
    /usr/bin/time -o "$work/time" -f '%e %M' "$@" >"$out" 2>"$out.err" \
        || { echo "bench-consume: $* failed:" >&2; cat "$out" "$out.err" >&2; exit 1; }
    tail -1 "$work/time"
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# One round of one binary on one store; sets CONSUME_S, RECONCILE_S, RECONCILE_KIB.
round() { # binary campaign store
    local bin="$1" campaign="$2" store="$3" consume reconcile
    rewind "$store"
    consume="$(measured "$work/consume.out" "$bin" -c "$work/$campaign.yaml" consume --drain \
        --batch "$batch" --orders-db "$(store_url "$store")")"
    reconcile="$(measured "$work/reconcile.out" "$bin" -c "$work/$campaign.yaml" reconcile \
        --orders-db "$(store_url "$store")")"
    CONSUME_S="${consume% *}"
    RECONCILE_S="${reconcile% *}"
    RECONCILE_KIB="${reconcile#* }"
}

echo "bench-consume: $orders orders, batch $batch, $rounds round(s), commit $commit, $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
sell_out benchdrain "$orders"
binaries=("$seckill")
[ -z "$baseline" ] || binaries+=("$baseline")
for store in sqlite mariadb; do
    for ((r = 1; r <= rounds; r++)); do
        for b in "${!binaries[@]}"; do
            # Alternate which binary goes first, so neither always meets a warmer machine.
            ((r % 2 == 0)) && b=$(( ${#binaries[@]} - 1 - b ))
            round "${binaries[b]}" benchdrain "$store"
            echo "$store $b $CONSUME_S $RECONCILE_S" >>"$work/rounds"
            echo "  round $r $store $([ "$b" = 0 ] && echo this || echo baseline): consume $CONSUME_S s, reconcile $RECONCILE_S s" >&2
        done
    done
done

printf '\n%-8s %-9s %18s %18s\n' store binary "consume orders/s" "reconcile orders/s"
for store in sqlite mariadb; do
    for b in "${!binaries[@]}"; do
        c="$(awk -v s="$store" -v b="$b" '$1 == s && $2 == b { print $3 }' "$work/rounds" | median)"
        s="$(awk -v s="$store" -v b="$b" '$1 == s && $2 == b { print $4 }' "$work/rounds" | median)"
        awk -v st="$store" -v who="$([ "$b" = 0 ] && echo this || echo baseline)" -v n="$orders" -v c="$c" -v s="$s" \
            'BEGIN { printf "%-8s %-9s %18.0f %18.0f   (medians: %.2f s, %.2f s)\n", st, who, n / c, n / s, c, s }'
        echo "$store $b $c $s" >>"$work/medians"
    done
    if [ -n "$baseline" ]; then
        awk -v st="$store" '$1 == st { c[$2] = $3; s[$2] = $4 } END {
            printf "%-8s ratio     consume %.2fx, reconcile %.2fx (this / baseline, orders/s)\n", st, c[1] / c[0], s[1] / s[0] }' "$work/medians"
    fi
done

if [ -n "$memory_sizes" ]; then
    printf '\n%-8s %9s %18s %14s\n' store orders "reconcile orders/s" "peak RSS MiB"
    for size in $memory_sizes; do
        redis-cli -p "$redis_port" FLUSHALL >/dev/null
        sell_out "benchmem$size" "$size"
        for store in sqlite mariadb; do
            round "$seckill" "benchmem$size" "$store"
            awk -v st="$store" -v n="$size" -v s="$RECONCILE_S" -v k="$RECONCILE_KIB" \
                'BEGIN { printf "%-8s %9d %18.0f %14.1f   (%.2f s)\n", st, n, n / s, k / 1024, s }'
        done
    done
fi

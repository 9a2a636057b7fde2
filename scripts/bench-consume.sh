#!/usr/bin/env bash
# bench-consume.sh — drain rate of `seckill consume --drain` into SQLite and MariaDB.
#
# Starts its own redis-server and mariadbd on free loopback ports (temp
# dirs, removed on exit), makes N real orders per store by running the real
# buy script (the very EVALSHA `seckill loadtest --print-command full`
# prints, so its KEYS/ARGV are the binary's, pipelined with `redis-cli
# --pipe`, so stock, buyers and the order stream agree), then times
# `seckill consume --drain` and checks the result with `seckill reconcile`
# (exit 0 or the benchmark fails).
#
# Usage: scripts/bench-consume.sh [N] [BATCH]     (defaults: 100000 1000)
# Needs: redis-server, redis-cli, mariadb-server (mariadbd, mariadb-install-db), cargo.
set -euo pipefail

orders="${1:-100000}"
batch="${2:-1000}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
. "$repo/scripts/lib.sh"
lib_workdir
work="$LIB_WORK"

lib_need redis-server "apt-get install -y redis-server"
lib_need redis-cli "apt-get install -y redis-tools"
lib_need mariadbd "apt-get install -y mariadb-server"
export PATH="$PATH:/usr/sbin"

echo "building release binary..." >&2
(cd "$repo" && cargo build --release --quiet)
seckill="$repo/target/release/seckill"

lib_start_redis bench
redis_port="$REDIS_PORT"

maria_port="$(lib_free_port)"
mariadb-install-db --no-defaults --datadir="$work/mariadb" --auth-root-authentication-method=normal \
    --user=root --skip-test-db >"$work/install.log" 2>&1
mariadbd --no-defaults --datadir="$work/mariadb" --port="$maria_port" --socket="$work/mariadb.sock" \
    --bind-address=127.0.0.1 --user=root --skip-log-bin --skip-name-resolve \
    --innodb-buffer-pool-size=256M --log-error="$work/mariadb.err" >/dev/null 2>&1 &
lib_track $!
until mariadb --no-defaults -h127.0.0.1 -P"$maria_port" -uroot -e 'SELECT 1' >/dev/null 2>&1; do sleep 0.2; done
mariadb --no-defaults -h127.0.0.1 -P"$maria_port" -uroot -e "
    CREATE DATABASE bench;
    CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY 'bench-pw';
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

run_bench() { # label campaign store-url
    local label="$1" campaign="$2" store="$3"
    cat >"$work/$campaign.yaml" <<EOF
campaign: $campaign
per_user_limit: 1
items:
  - id: "1001"
    name: Bench item
    price: "1.00"
    stock: $orders
EOF
    "$seckill" -c "$work/$campaign.yaml" preheat >/dev/null
    buy_words "$work/$campaign.yaml" "$work/$campaign.words"
    make_buys "$work/$campaign.words" "$orders" | redis-cli -p "$redis_port" --pipe >"$work/pipe.log"
    local left
    left="$(redis-cli -p "$redis_port" GET "$STOCK_KEY")"
    [ "$left" = 0 ] || { echo "bench-consume: buys left stock $left, expected 0" >&2; cat "$work/pipe.log" >&2; exit 1; }
    local start end cpu checked
    start="$(date +%s.%N)"
    # CPU seconds of the consume process (user + sys) next to its wall time
    # tell whether the single consume thread or something else is the limit.
    cpu="$( { TIMEFORMAT='%U %S'; time "$seckill" -c "$work/$campaign.yaml" consume --drain --batch "$batch" \
        --orders-db "$store" >/dev/null 2>"$work/$campaign.err"; } 2>&1 )"
    end="$(date +%s.%N)"
    "$seckill" -c "$work/$campaign.yaml" reconcile --orders-db "$store" >/dev/null \
        || { echo "bench-consume: reconcile after $label drain did not balance" >&2; exit 1; }
    checked="$(date +%s.%N)"
    awk -v l="$label" -v n="$orders" -v s="$start" -v e="$end" -v c="$checked" -v b="$batch" -v cpu="$cpu" \
        'BEGIN { split(cpu, t, " "); printf "%-8s %d orders drained in %.2f s = %.0f orders/s (batch %d, whole process incl. start-up; consume CPU %.2f s); reconcile 0 in %.2f s\n", l, n, e - s, n / (e - s), b, t[1] + t[2], c - e }'
    grep -o 'in [0-9.]*s ([0-9]*/s' "$work/$campaign.err" | sed "s/^/$label consume's own figure: /" >&2
}

run_bench sqlite benchsqlite "sqlite://$work/orders.db"
run_bench mariadb benchmaria "mysql://bench:bench-pw@127.0.0.1:$maria_port/bench"

#!/usr/bin/env bash
# bench-consume.sh — drain rate of `seckill consume --drain` into SQLite and MariaDB.
#
# Starts its own redis-server and mariadbd on free loopback ports (temp
# dirs, removed on exit), makes N real orders per store by running the real
# buy script (EVALSHA, pipelined with `redis-cli --pipe`, so stock, buyers and
# the order stream agree), then times `seckill consume --drain` and checks
# the result with `seckill reconcile` (exit 0 or the benchmark fails).
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
buy_sha="$(sha1sum "$repo/lua/buy.lua" | cut -d' ' -f1)"

# One RESP-encoded EVALSHA of the buy script per order, for `redis-cli --pipe`.
make_buys() { # campaign item count
    awk -v sha="$buy_sha" -v c="$1" -v item="$2" -v n="$3" 'BEGIN {
        base = "seckill:{" c ":" item "}:"
        for (i = 0; i < n; i++) {
            user = sprintf("u%07d", i)
            order = sprintf("B%s%07d", c, i)
            split(sha " 7 " base "meta " base "stock " base "buyers " base "buyer_orders " base "requests " base "orders " base "rate:" user " " user " 1", a, " ")
            printf "*16\r\n$7\r\nEVALSHA\r\n"
            for (k = 1; k <= 11; k++) printf "$%d\r\n%s\r\n", length(a[k]), a[k]
            printf "$0\r\n\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(order), order, length(c), c, length(item), item
        }
    }'
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
    make_buys "$campaign" 1001 "$orders" | redis-cli -p "$redis_port" --pipe >"$work/pipe.log"
    local left
    left="$(redis-cli -p "$redis_port" GET "seckill:{$campaign:1001}:stock")"
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

# scripts/lib.sh — what the shell scripts share, sourced, never run:
#
#   . "$(dirname "$0")/lib.sh"
#   lib_workdir              # $LIB_WORK: a temp dir; on exit every process
#                            # started through lib_track is killed and it is removed
#   lib_free_port            # prints a free loopback TCP port
#   lib_start_redis NAME [redis-server args...]
#                            # a throwaway redis-server (no persistence) on a free
#                            # port; sets REDIS_PORT and REDIS_URL
#   lib_track PID            # kill PID on exit too (e.g. a mariadbd started by hand)
#   lib_need TOOL HINT       # exit 1 with HINT unless TOOL is on PATH (or in /usr/sbin)
#   lib_cargo                # make rustup's cargo reachable from a non-login shell
#
# One way to find a port and start a Redis, so a fix (a race, a slow start)
# is made once for every script.

LIB_PIDS=()
LIB_WORK=""

lib_cleanup() {
    local pid
    for pid in "${LIB_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${LIB_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ -n "$LIB_WORK" ]; then rm -rf "$LIB_WORK"; fi
}

lib_workdir() {
    LIB_WORK="$(mktemp -d)"
    trap lib_cleanup EXIT
}

lib_track() {
    LIB_PIDS+=("$1")
}

lib_need() {
    command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || {
        echo "$(basename "$0"): $1 not found ($2)" >&2
        exit 1
    }
}

# Nothing listens on the port (a connect fails); the window until the caller
# binds it is tolerable: lib_start_redis retries on another port.
lib_free_port() {
    local port
    while :; do
        port=$((20000 + RANDOM % 30000))
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
    done
}

lib_start_redis() {
    local name="$1" port pid attempt i
    shift
    [ -n "$LIB_WORK" ] || lib_workdir
    mkdir -p "$LIB_WORK/$name"
    for attempt in 1 2 3 4 5; do
        port="$(lib_free_port)"
        redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
            --dir "$LIB_WORK/$name" "$@" >"$LIB_WORK/$name/redis.log" 2>&1 &
        pid=$!
        for i in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            if redis-cli -p "$port" ping >/dev/null 2>&1; then
                lib_track "$pid"
                REDIS_PORT="$port"
                REDIS_URL="redis://127.0.0.1:$port/0"
                return 0
            fi
            sleep 0.1
        done
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    echo "$(basename "$0"): could not start redis-server $name (see $LIB_WORK/$name/redis.log)" >&2
    exit 1
}

lib_cargo() {
    if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
        . "$HOME/.cargo/env"
    fi
    command -v cargo >/dev/null 2>&1 || {
        echo "cargo not found: install Rust 1.88+ with rustup" >&2
        exit 1
    }
}

# lib_evalsha_usec: usec_per_call of EVALSHA on $REDIS_PORT since the last
# CONFIG RESETSTAT (INFO commandstats), or "failed" when any call failed.
lib_evalsha_usec() {
    redis-cli -p "$REDIS_PORT" INFO commandstats | tr -d '\r' | awk -F'[:,=]' '$1 == "cmdstat_evalsha" {
        for (i = 2; i < NF; i += 2) { if ($i == "usec_per_call") u = $(i + 1); if ($i == "failed_calls") f = $(i + 1) }
    } END { if (f > 0) { print "failed"; exit } print u + 0 }'
}

# lib_bench_header: the line that says what a bench measured on.
lib_bench_header() {
    echo "seckill $(git rev-parse --short HEAD 2>/dev/null || echo '?'), release build; redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# The awk function median(list): the median of the numbers of a
# space-separated list; prepend it to a bench's awk program.
LIB_AWK_MEDIAN='
    function median(list,    a, k, i, j, t) {
        k = split(list, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }'

# lib_resolved_lua FILE [LUA_DIR]: lua/FILE with its includes resolved as
# build.rs resolves them: each `--- @include "lib/NAME"` line replaced by
# lua/lib/NAME.lua (its own includes first), each library once per script.
# LUA_DIR defaults to the repository's lua/ (this file's ../lua).
lib_resolved_lua() {
    local root=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../lua" && pwd)}
    LC_ALL=C awk -v root="$root" '
        function paste(file,    line, name) {
            while ((getline line < file) > 0) {
                if (line ~ /^--- @include "lib\/[a-z0-9_]+"$/) {
                    name = substr(line, 15, length(line) - 15)
                    if (!(name in seen)) { seen[name] = 1; paste(root "/" name ".lua") }
                } else {
                    print line
                }
            }
            close(file)
        }
        BEGIN { paste(ARGV[1]); exit }' "$root/$1"
}

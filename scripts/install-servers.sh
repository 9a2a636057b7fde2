#!/usr/bin/env bash
# Install the servers seckill's tests and demos start themselves, when missing:
# redis-server + redis-cli (+ redis-benchmark), promtool (Debian's prometheus
# package: the tests check the metrics text, the alert rules and their unit
# tests with it), tmux (the tests read what a terminal shows), curl (the
# README's serve session buys with it) and, with --mariadb, mariadbd; with
# --bench also what scripts/bench-all.sh drives the benches with (mariadbd,
# wrk for bench-serve, GNU time).
# Debian/Ubuntu only (apt-get); uses sudo when not root.
#   scripts/install-servers.sh [--mariadb] [--bench]
set -euo pipefail
mariadb=0
bench=0
for arg in "$@"; do
  case "$arg" in
    --mariadb) mariadb=1 ;;
    --bench) mariadb=1 bench=1 ;;
    *) echo "install-servers.sh: unknown option $arg (expected --mariadb, --bench)" >&2; exit 2 ;;
  esac
done
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ "$bench" = 1 ]; then
  command -v wrk >/dev/null 2>&1 || need+=(wrk)
  [ -x /usr/bin/time ] || need+=(time)
fi
if [ "$mariadb" = 1 ] && ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  need+=(mariadb-server)
fi
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
echo "installing ${need[*]} ..." >&2
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null

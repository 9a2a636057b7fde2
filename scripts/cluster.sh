#!/usr/bin/env bash
# A local Redis Cluster for trying bucketed items (docs/buckets.md):
# 3 masters + 3 replicas on loopback, made by `redis-cli --cluster create`.
#
#   scripts/cluster.sh up       start it (idempotent) and print the env to use
#   scripts/cluster.sh status   CLUSTER INFO summary and which node owns which slots
#   scripts/cluster.sh down     stop the six servers it started and delete their data
#
# Ports: SECKILL_CLUSTER_PORT (default 21001) .. +5; each node's bus is port+10000,
# so ports must stay below 55536. The default keeps both the ports and their buses
# (31001..31006) below Linux's ephemeral range (32768..60999): an outgoing
# connection of any other program can hold a port in that range and make a
# node fail to bind its bus. Data and pid files: SECKILL_CLUSTER_DIR
# (default /tmp/seckill-cluster). `down` stops only the pids it recorded.
# Persistence: SECKILL_CLUSTER_AOF=everysec (default: an append-only file
# fsynced every second, what `seckill doctor` and `preheat --require-durable`
# ask of a sale's Redis), always, or no (the benches: they measure the
# scripts, not the disk).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${SECKILL_CLUSTER_PORT:-21001}
dir=${SECKILL_CLUSTER_DIR:-/tmp/seckill-cluster}
ports=$(seq "$base" $((base + 5)))
if [ $((base + 5)) -gt 55535 ]; then
  echo "SECKILL_CLUSTER_PORT must be at most 55530 (the cluster bus uses port + 10000)" >&2
  exit 2
fi
aof=${SECKILL_CLUSTER_AOF:-everysec}
case "$aof" in
  no) persistence=(--appendonly no) ;;
  everysec|always) persistence=(--appendonly yes --appendfsync "$aof") ;;
  *) echo "SECKILL_CLUSTER_AOF must be everysec, always or no (got $aof)" >&2; exit 2 ;;
esac
seeds() { local s=""; for p in $base $((base + 1)) $((base + 2)); do s="$s${s:+,}redis://127.0.0.1:$p"; done; echo "$s"; }

up() {
  scripts/install-servers.sh
  mkdir -p "$dir"
  for p in $ports; do
    if redis-cli -p "$p" ping >/dev/null 2>&1; then continue; fi
    mkdir -p "$dir/$p"
    redis-server --port "$p" --bind 127.0.0.1 --save "" "${persistence[@]}" \
      --cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" --cluster-node-timeout 5000 \
      --dir "$dir/$p" --daemonize yes --pidfile "$dir/$p/redis.pid" --logfile "$dir/$p/redis.log"
  done
  for p in $ports; do
    for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$p" ping >/dev/null || {
      echo "node $p did not start: $(tail -1 "$dir/$p/redis.log" 2>/dev/null)" >&2
      down >/dev/null
      exit 1
    }
  done
  if ! redis-cli -p "$base" cluster info | grep -q cluster_state:ok; then
    # shellcheck disable=SC2046
    redis-cli --cluster create $(for p in $ports; do echo "127.0.0.1:$p"; done) \
      --cluster-replicas 1 --cluster-yes >/dev/null
  fi
  for p in $ports; do
    for _ in $(seq 300); do redis-cli -p "$p" cluster info | grep -q cluster_state:ok && break; sleep 0.1; done
    redis-cli -p "$p" cluster info | grep -q cluster_state:ok || { echo "node $p: cluster not ok" >&2; exit 1; }
  done
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$base" cluster nodes | grep -c slave)" = 3 ] && break; sleep 0.1
  done
  echo "cluster up: 3 masters + 3 replicas on 127.0.0.1:$base-$((base + 5)) (data in $dir)"
  echo "export SECKILL_REDIS_URL=$(seeds) SECKILL_REDIS_CLUSTER=true"
}

status() {
  redis-cli -p "$base" cluster info | grep -E 'cluster_state|cluster_known_nodes|cluster_size'
  redis-cli -p "$base" cluster nodes | awk '{ role = ($3 ~ /slave/) ? "replica" : "master";
    slots = ""; for (i = 9; i <= NF; i++) slots = slots " " $i;
    print $2, role, (role == "master" ? "slots" slots : "of " $4) }' | sort
}

down() {
  for p in $ports; do
    if [ -f "$dir/$p/redis.pid" ]; then
      pid=$(cat "$dir/$p/redis.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
  rm -rf "$dir"
  echo "cluster down"
}

case "${1:-}" in
  up) up ;;
  status) status ;;
  down) down ;;
  *) echo "usage: scripts/cluster.sh up|status|down" >&2; exit 2 ;;
esac

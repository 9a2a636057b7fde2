#!/usr/bin/env bash
# The whole test suite. Installs redis-server, redis-cli and mariadb-server when
# missing (the tests start their own private servers on free ports), then runs
# every unit, integration and doc test of the workspace (seckill and its
# load-test engine, crates/loadgen) against them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-servers.sh --mariadb
export PATH="$PATH:/usr/sbin"
. scripts/lib.sh
# rustup's cargo, also from a non-login shell (Debian's own rustc is too old for edition 2024).
lib_cargo
cargo test --workspace --locked "$@"

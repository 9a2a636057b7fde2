#!/usr/bin/env bash
# The whole test suite. Installs redis-server, redis-cli and mariadb-server when
# missing (the tests start their own private servers on free ports), then runs
# every unit, integration and doc test against them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-servers.sh --mariadb
export PATH="$PATH:/usr/sbin"
# rustup's cargo, also from a non-login shell (Debian's own rustc is too old for edition 2024).
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  . "$HOME/.cargo/env"
fi
command -v cargo >/dev/null 2>&1 || { echo "cargo not found: install Rust 1.88+ with rustup" >&2; exit 1; }
cargo test --locked "$@"

#!/usr/bin/env bash
# Regenerate completions/ and man/ from the clap definition (tests/it/completions.rs
# and tests/it/man.rs check they are current).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
bin=target/debug/seckill
"$bin" completions bash > completions/seckill.bash
"$bin" completions zsh > completions/_seckill
"$bin" completions fish > completions/seckill.fish
rm -f man/*.1
mkdir -p man
"$bin" man --out man
echo "completions/ and man/ updated"

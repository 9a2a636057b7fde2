#!/usr/bin/env bash
# Regenerate completions/ from the clap definition (tests/it/completions.rs checks they are current).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
bin=target/debug/seckill
"$bin" completions bash > completions/seckill.bash
"$bin" completions zsh > completions/_seckill
"$bin" completions fish > completions/seckill.fish
echo "completions/ updated"

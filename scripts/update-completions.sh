#!/usr/bin/env bash
# Regenerate what is generated from the binary: completions/ and man/ from the
# clap definition (tests/it/completions.rs and tests/it/man.rs check they are
# current), and the `seckill acl` output shown in docs/security.md
# (tests/it/security.rs checks it).
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
# Each `$ seckill ...` line of docs/security.md is followed by what it prints, up to the block's end.
doc=docs/security.md
tmp="$(mktemp)"
while IFS= read -r line; do
    if [ -n "${skipping:-}" ]; then
        case "$line" in '```'*) skipping="" ;; *) continue ;; esac
    fi
    printf '%s\n' "$line" >>"$tmp"
    case "$line" in
        '$ seckill '*) "$bin" ${line#\$ seckill } >>"$tmp"; skipping=1 ;;
    esac
done <"$doc"
mv "$tmp" "$doc"
echo "completions/, man/ and the acl lines of docs/security.md updated"

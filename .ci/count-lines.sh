#!/usr/bin/env bash
# Counts the code lines (not blank, not comments) of each marked block of Examples/Ceremony/main.swift: what a
# user writes for the README counter and a two-store waitFor feature, before and after the closure stores.
set -euo pipefail
cd "$(dirname "$0")/.."
for block in counter-before counter-after waitfor-before waitfor-after; do
  lines=$(sed -n "/BEGIN $block\$/,/END $block\$/p" Examples/Ceremony/main.swift | sed '1d;$d' \
    | grep -v '^[[:space:]]*$' | grep -cv '^[[:space:]]*//')
  echo "$block: $lines"
done

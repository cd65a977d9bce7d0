#!/usr/bin/env bash
# Instructions per inserted object, ManagedStore beside raw SQLite, counted by callgrind.
# Instruction counts do not move with the machine's load, so this is the steady measure to
# work against; the wall-clock ratio comes from `make bench`.
#
#   Benchmarks/scripts/insert-instructions.sh [COUNT]     (default 20000; needs valgrind)
#
# KEEP=dir keeps the two callgrind files there (dir/ms, dir/raw) for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-20000}"
swift build -c release --product managedstore-bench >/dev/null
binary=.build/release/managedstore-bench
if [[ -n "${KEEP:-}" ]]; then out="$KEEP"; mkdir -p "$out"; else out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
# The closures that run each side's insert loop (symbol names of InsertBenchmark).
nm "$binary" >"$out/symbols"
ms=$(awk '/InsertBenchmarkO12managedStore.*yyKXEfU_yyKXEfU_$/ {print $3; exit}' "$out/symbols")
raw=$(awk '/InsertBenchmarkO9rawSQLite.*yyKXEfU_$/ {print $3; exit}' "$out/symbols")
for side in ms raw; do
    symbol=${!side}
    valgrind --tool=callgrind --callgrind-out-file="$out/$side" "--toggle-collect=$symbol" \
        "$binary" --count "$count" --insert-only >/dev/null 2>"$out/$side.log"
done
per_object() { grep -m1 '^summary:' "$out/$1" | awk -v n="$count" '{printf "%.1f", $2 / n / 1000}'; }
m=$(per_object ms); r=$(per_object raw)
echo "instructions per object: ManagedStore ${m}k, raw SQLite ${r}k, ratio $(awk -v m="$m" -v r="$r" 'BEGIN {printf "%.2f", r / m}')"

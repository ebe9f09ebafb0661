#!/usr/bin/env bash
# Loading N CSV rows (4 columns) with `reseed package` versus `sqlite3 .import` into the same table,
# both measured in this one run; prints the ratio. Usage: Benchmarks/csv-import.sh [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
swift build -c release --product reseed >/dev/null
bin=$(swift build -c release --show-bin-path)/reseed
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/Migrations"
schema='CREATE TABLE reading (id INTEGER PRIMARY KEY, station TEXT NOT NULL, value REAL, note TEXT);'
echo "$schema" > "$work/Migrations/0001_schema.sql"
python3 - "$rows" "$work/Migrations/0002_reading.csv" <<'PY'
import random, sys
rows, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(42)
with open(path, "w") as f:
    f.write("id,station,value,note\n")
    for i in range(1, rows + 1):
        note = "" if i % 10 == 0 else f"\"note {i}, checked\""
        f.write(f"{i},ST{rng.randrange(1000):04d},{rng.uniform(-50, 50):.3f},{note}\n")
PY
tail -n +2 "$work/Migrations/0002_reading.csv" > "$work/body.csv"

best() { sort -n | head -1; }
ours=(); theirs=()
for run in 1 2 3; do
  rm -rf "$work/out" "$work/ref.sqlite"
  start=$(date +%s.%N)
  "$bin" package --migrations "$work/Migrations" --output "$work/out" --name bench --version 1.0.0 >/dev/null
  ours+=("$(echo "$(date +%s.%N) - $start" | bc)")
  start=$(date +%s.%N)
  sqlite3 "$work/ref.sqlite" "$schema" ".mode csv" ".import $work/body.csv reading"
  theirs+=("$(echo "$(date +%s.%N) - $start" | bc)")
done
o=$(printf '%s\n' "${ours[@]}" | best); t=$(printf '%s\n' "${theirs[@]}" | best)
count=$(sqlite3 "$work/out/bench.sqlite" "SELECT count(*) FROM reading")
[ "$count" = "$rows" ] || { echo "loaded $count rows, expected $rows" >&2; exit 1; }
printf 'rows %d  reseed package %.3f s  sqlite3 .import %.3f s  ratio %.2f (best of 3 each)\n' "$rows" "$o" "$t" "$(echo "$o / $t" | bc -l)"

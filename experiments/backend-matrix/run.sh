#!/bin/sh
# Backend matrix (DESIGN.md, experiment 4, in-process half): every map backend × threads × update %
# × distribution with kvlab bench, one JSON per cell plus a merged CSV.
# Usage: experiments/backend-matrix/run.sh [--quick] [extra kvlab bench flags...]
# Environment overrides: KVLAB (the CLI), KEYS, DURATION, REPS, THREADS (e.g. 1,2,4).
# Outputs: experiments/results/backend-matrix/<UTC timestamp>/{*.json,*.csv,matrix.csv}
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
kvlab="${KVLAB:-$root/build/tools/cli/kvlab}"
[ -x "$kvlab" ] || kvlab="$root/kvlab"
keys=1000000 duration=2s reps=5
if [ "${1:-}" = "--quick" ]; then
  shift
  keys=100000 duration=500ms reps=3
fi
keys=${KEYS:-$keys} duration=${DURATION:-$duration} reps=${REPS:-$reps}
nproc=$(nproc)
threads=1
t=2
while [ "$t" -le "$nproc" ]; do threads="$threads,$t"; t=$((t * 2)); done
[ "${threads##*,}" = "$nproc" ] || threads="$threads,$nproc"
threads=${THREADS:-$threads}
out="$root/experiments/results/backend-matrix/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
for update in 0 10 50; do
  for dist in uniform zipf:0.99; do
    cell="u${update}-$(echo "$dist" | tr ':.' '__')"
    echo "== update=$update% dist=$dist threads=$threads" >&2
    "$kvlab" bench --backend map --threads "$threads" --keys "$keys" --update "$update" \
      --dist "$dist" --duration "$duration" --reps "$reps" --format json --out "$out/$cell.json" "$@" \
      || echo "cell $cell: some measurement failed validation (see $out/$cell.json)" >&2
  done
done
# Merge: one CSV with a header, from the JSON files (python3 when present).
if command -v python3 >/dev/null; then
  python3 - "$out" <<'PY'
import csv, glob, json, os, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    doc = json.load(open(path))
    floor = {f["threads"]: f["mops"] for f in doc.get("floor", [])}
    for r in doc["results"]:
        w = r["workload"]
        rows.append({"cell": os.path.basename(path)[:-5], "backend": r["backend"],
                     "threads": r["threads"], "update_pct": w.get("update_pct"),
                     "dist": w.get("dist"), "mops": r["mops"], "mops_min": r["mops_min"],
                     "mops_max": r["mops_max"], "valid": r["valid"], "note": r.get("note", ""),
                     "floor_mops": floor.get(r["threads"])})
with open(os.path.join(out, "matrix.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["cell"])
    w.writeheader()
    w.writerows(rows)
print(os.path.join(out, "matrix.csv"))
PY
fi
echo "results in $out" >&2

#!/bin/sh
# The issue-3 targets of kvlab's own structures, side by side with every wrapped backend of the
# same family in one `kvlab bench` run per workload, repeated ROUNDS times; summary.py prints the
# ratio table (median over rounds of each round's ratio). See README.md.
# Usage: experiments/own-structures/run.sh [ROUNDS] [extra kvlab bench flags...]
# Environment: KVLAB (the CLI), DURATION (1s), REPS (3).
# Output: experiments/results/own-structures/<UTC timestamp>/{<workload>-r<round>.json,table.md}
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kvlab="${KVLAB:-$root/build/tools/cli/kvlab}"
[ -x "$kvlab" ] || { echo "build kvlab first ($kvlab)" >&2; exit 2; }
rounds=${1:-3}
[ $# -gt 0 ] && shift
extra="$*"  # extra kvlab bench flags (no spaces inside a flag)
duration=${DURATION:-1s} reps=${REPS:-3}
out="$root/experiments/results/own-structures/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
common="--threads 2 --keys 1000000 --duration $duration --reps $reps --format json --quiet"
run() {  # $1 = workload name, rest = kvlab bench flags
  name=$1; shift
  echo "== round $r: $name" >&2
  # shellcheck disable=SC2086
  "$kvlab" bench "$@" --out "$out/$name-r$r.json" $common $extra >/dev/null
}
for r in $(seq 1 "$rounds"); do
  run hash-90-uniform --backend hash --update 10
  run hash-90-zipf --backend hash --update 10 --dist zipf:0.99
  run hash-50 --backend hash --update 50 --no-floor
  run hash-find --backend hash --update 0
  run hash-16-256 --backend hash --update 10 --key-size 16 --value-size 256 --no-floor
  run skiplist-90 --backend skiplist --update 10 --no-floor
  run hash-90-uniform-b16 --backend hash --update 10 --batch 16 --no-floor
  run hash-find-b16 --backend hash --update 0 --batch 16
  "$kvlab" bench --family queue --producers 1 --consumers 1 --items 2000000 --reps "$reps" \
    --format json --quiet --out "$out/queue-1-1-r$r.json" $extra >/dev/null
  "$kvlab" bench --family queue --producers 2 --consumers 2 --items 2000000 --reps "$reps" \
    --format json --quiet --out "$out/queue-2-2-r$r.json" $extra >/dev/null
done
uptime > "$out/load.txt"
python3 "$here/summary.py" "$out" | tee "$out/table.md"
echo "results: $out"

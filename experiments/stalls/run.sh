#!/usr/bin/env bash
# Stalls: how long a keyspace-wide or long command stops another client's SETs (README.md).
#   experiments/stalls/run.sh [ROUNDS] [KEYS]        defaults: 3 rounds, 1,000,000 keys
# Runs stalls.py against kvlab-server (--threads 2) and redis-server, alternating servers round by
# round, and writes experiments/results/stalls/TIMESTAMP/: results.csv (one row per server,
# round and victim command), command.txt, manifest.txt (commit, versions, CPU, load averages
# before and after), then prints the summary (summary.py).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${1:-3}"
keys="${2:-1000000}"
server="${KVLAB_SERVER:-$root/build/server/kvlab-server}"
redis="$(command -v redis-server || true)"
[ -x "$server" ] || { echo "needs $server (meson compile -C build server/kvlab-server)" >&2; exit 1; }
[ -n "$redis" ] || { echo "needs redis-server" >&2; exit 1; }
out="$root/experiments/results/stalls/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
{
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "kvlab-server: $("$server" --version 2>&1 | head -1)"
  echo "redis-server: $("$redis" --version)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/manifest.txt"
for ((r = 0; r < rounds; r++)); do
  for s in kvlab redis; do
    bin="$server"; [ "$s" = redis ] && bin="$redis"
    cmd=(python3 "$root/experiments/stalls/stalls.py" --server "$s" --binary "$bin" --keys "$keys"
         --rounds 1 --out "$out/results.csv")
    echo "${cmd[*]}" >>"$out/command.txt"
    "${cmd[@]}" | sed "s/round 0/round $r/"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/manifest.txt"
python3 "$root/experiments/stalls/summary.py" "$out/results.csv" | tee "$out/summary.txt"

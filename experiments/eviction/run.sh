#!/bin/sh
# Hit ratio vs cache size under each maxmemory policy, kvlab-server beside redis-server's
# allkeys-lru/lfu (experiments/eviction/README.md). Usage: experiments/eviction/run.sh [extra
# hitratio.py flags]; writes experiments/results/eviction/<UTC>/ and copies the figure and table
# to papers/results/eviction/.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kvlab=${KVLAB_SERVER:-$root/build/server/kvlab-server}
redis=$(command -v redis-server || true)
out=$root/experiments/results/eviction/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out" "$root/papers/results/eviction"
{
  echo "command: $0 $*"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "machine: $(nproc) CPUs, $(uname -sr)"
  echo "load: $(cat /proc/loadavg)"
} > "$out/manifest.txt"
/usr/bin/python3 "$here/hitratio.py" --kvlab "$kvlab" ${redis:+--redis "$redis"} --out "$out" "$@"
echo "load after: $(cat /proc/loadavg)" >> "$out/manifest.txt"
cp "$out/results.csv" "$out/hitratio.png" "$out/hitratio.svg" "$out/manifest.txt" \
   "$root/papers/results/eviction/"
echo "results: $out"

#!/usr/bin/env bash
# What a live migration costs without a per-slot key index (server/README.md "Cluster"): the
# source walks its whole keyspace, filtering by slot, at least twice per migration. Two nodes
# (--cluster-mode yes, --threads 2); node A is loaded with KEYS keys spread over its slots; then `kvlab cluster reshard` moves 1, 16, 256 and 2048 of A's slots
# to B, one migration each, and reports the time until the source finished streaming.
#
#   experiments/cluster/migration_cost.sh [KEYS]        default 1,000,000
#
# Output: experiments/results/cluster/TIMESTAMP-migration/results.csv (slots, keys on the source
# before, keys moved, seconds streaming as the tool reports it, the source's CPU seconds during the
# reshard: scans, dumps, deletes and the idle workers' share).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
keys="${1:-1000000}"
server="$root/build/server/kvlab-server"
kvlab="$root/build/tools/cli/kvlab"
out="$root/experiments/results/cluster/$(date -u +%Y%m%dT%H%M%SZ)-migration"
mkdir -p "$out"
. "$root/experiments/common.sh"  # free_port, cpu_ticks, wait_ping
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
ports=()
for _ in 1 2; do
  port=$(free_port)
  "$server" --port "$port" --threads 2 --cluster-mode yes >/dev/null 2>&1 &
  pids+=($!)
  ports+=("$port")
  wait_ping "$port" 5
done
"$kvlab" cluster create "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" >/dev/null
a_id=$(redis-cli -p "${ports[0]}" cluster myid)
b_id=$(redis-cli -p "${ports[1]}" cluster myid)
# KEYS keys of A's slots (0-8191), 16-byte values, loaded with redis-cli --pipe. (redis-benchmark
# --cluster puts all its keys in one slot per node, so it cannot load a spread keyspace.)
/usr/bin/python3 - "$keys" <<'PY' | redis-cli -p "${ports[0]}" --pipe >/dev/null
import sys
from redis.crc import key_slot
n, i, out = int(sys.argv[1]), 0, sys.stdout.buffer
while n > 0:
    k = b"k:%d" % i
    i += 1
    if key_slot(k) <= 8191:
        out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$16\r\n0123456789abcdef\r\n" % (len(k), k))
        n -= 1
PY
hz=$(getconf CLK_TCK)
echo "slots,source_keys,keys_moved,seconds,source_cpu_s" > "$out/results.csv"
end=8191  # A owns 0-8191: move its highest slots first
for n in 1 16 256 2048; do
  before=$(redis-cli -p "${ports[0]}" dbsize)
  c0=$(cpu_ticks "${pids[0]}")
  line=$("$kvlab" cluster reshard "127.0.0.1:${ports[0]}" --from "$a_id" --to "$b_id" \
         --slots "$((end - n + 1))-$end" | grep '^streamed')
  moved=$(echo "$line" | awk '{print $2}')
  secs=$(echo "$line" | awk '{print $5}')
  c1=$(cpu_ticks "${pids[0]}")
  cpu=$(awk -v d=$((c1 - c0)) -v hz="$hz" 'BEGIN{printf "%.2f", d/hz}')
  echo "$n,$before,$moved,$secs,$cpu" | tee -a "$out/results.csv"
  end=$((end - n))
done

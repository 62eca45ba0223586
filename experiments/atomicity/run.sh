#!/usr/bin/env bash
# The cost of whole-command atomicity (issue 19): requests/s and requests per server CPU-second of
# single-key SET, a 10-key MSET and a one-key EVALSHA, with many keys (little contention) and few
# (much), for kvlab-server under each --atomicity scheme and for redis-server, measured back to
# back in alternating rounds with the same redis-benchmark command lines.
#
#   experiments/atomicity/run.sh [ROUNDS] [REQUESTS]      (defaults: 3 rounds, 200000 requests)
#
# Output: experiments/results/atomicity/TIMESTAMP/results.csv (one row per round, server and
# workload) and summary.txt (medians over the rounds). kvlab-server runs with --threads 2 on this
# machine's CPUs, shared with the client (see experiments/server-vs-redis/README.md for why the
# ratios, not the absolute rates, are the result).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${1:-3}"
requests="${2:-200000}"
server="${KVLAB_SERVER:-$root/build/server/kvlab-server}"
out="$root/experiments/results/atomicity/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
command -v redis-benchmark >/dev/null || { echo "needs redis-benchmark (redis-tools)" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

start() {  # name port -> pid
  case "$1" in
    kvlab-key-locks) "$server" --port "$2" --threads 2 --atomicity key-locks >/dev/null 2>&1 & ;;
    kvlab-global) "$server" --port "$2" --threads 2 --atomicity global >/dev/null 2>&1 & ;;
    redis) redis-server --port "$2" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 & ;;
  esac
  local pid=$!
  for _ in $(seq 100); do redis-cli -p "$2" ping >/dev/null 2>&1 && break; sleep 0.05; done
  echo "$pid"
}

mset_args() {  # 10 random keys out of the -r range
  local a=(MSET)
  for i in $(seq 10); do a+=("k$i:__rand_int__" v); done
  echo "${a[@]}"
}

echo "round,server,workload,keys,requests_per_s,server_cpu_s,requests_per_cpu_s" >"$out/results.csv"
{
  echo "command lines (each against a fresh server, -n $requests, -c 50, --threads 2):"
  echo "  SET:     redis-benchmark -t set -P 30 -d 256 -r KEYS"
  echo "  MSET:    redis-benchmark -P 1 -r KEYS $(mset_args)"
  echo "  EVALSHA: redis-benchmark -P 1 -r KEYS EVALSHA <sha of return redis.call('INCR', KEYS[1])> 1 key:__rand_int__"
} >"$out/command.txt"
for round in $(seq "$rounds"); do
  for name in kvlab-key-locks kvlab-global redis; do
    for keys in 1000000 100; do
      for workload in set mset evalsha; do
        port=$(free_port)
        pid=$(start "$name" "$port")
        sha=$(redis-cli -p "$port" SCRIPT LOAD "return redis.call('INCR', KEYS[1])")
        case $workload in
          set) args=(-t set -P 30 -d 256) ;;
          mset) read -ra args <<<"-P 1 $(mset_args)" ;;
          evalsha) args=(-P 1 EVALSHA "$sha" 1 "key:__rand_int__") ;;
        esac
        c0=$(cpu_ticks "$pid")
        t0=$(date +%s.%N)
        redis-benchmark -p "$port" -n "$requests" -c 50 --threads 2 -r "$keys" -q "${args[@]}" >/dev/null 2>&1
        t1=$(date +%s.%N)
        c1=$(cpu_ticks "$pid")
        kill "$pid"; wait "$pid" 2>/dev/null || true
        python3 - "$round" "$name" "$workload" "$keys" "$requests" "$t0" "$t1" "$c0" "$c1" >>"$out/results.csv" <<'PY'
import os, sys
r, name, w, keys, n, t0, t1, c0, c1 = sys.argv[1:]
hz = os.sysconf("SC_CLK_TCK")
secs = float(t1) - float(t0)
cpu = (int(c1) - int(c0)) / hz
print("%s,%s,%s,%s,%.0f,%.2f,%.0f" % (r, name, w, keys, int(n) / secs, cpu,
                                       int(n) / cpu if cpu > 0 else 0))
PY
        tail -1 "$out/results.csv"
      done
    done
  done
done
python3 - "$out/results.csv" >"$out/summary.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keyed = {}
for r in rows:
    keyed.setdefault((r["workload"], r["keys"], r["server"]), []).append(r)
print("%-8s %8s %-16s %12s %14s %10s" % ("workload", "keys", "server", "req/s", "req/CPU-s",
                                         "vs redis"))
for (w, k, s), rs in sorted(keyed.items()):
    rps = statistics.median(float(x["requests_per_s"]) for x in rs)
    cps = statistics.median(float(x["requests_per_cpu_s"]) for x in rs)
    red = keyed.get((w, k, "redis"))
    ratio = cps / statistics.median(float(x["requests_per_cpu_s"]) for x in red) if red else 0
    print("%-8s %8s %-16s %12.0f %14.0f %9.2fx" % (w, k, s, rps, cps, ratio))
PY
cat "$out/summary.txt"
echo "results: $out"

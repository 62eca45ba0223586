#!/usr/bin/env bash
# The cost of whole-command atomicity (issue 19): requests/s and requests per server CPU-second of
# single-key SET and GET, a 10-key MSET, a MULTI/EXEC of five INCRs and a one-key EVALSHA, with
# keys drawn uniformly from 1,000,000 (little contention) and Zipf 0.99 over 1,000 (much), for
# kvlab-server under each --atomicity scheme (global, key-locks, stripes) and for redis-server, measured back to back in
# alternating rounds with the same client command lines.
#
#   experiments/atomicity/run.sh [ROUNDS] [SECONDS] [CLIENT]
#       defaults: 3 rounds, 3 s per measurement, CLIENT kvlab-load
#       CLIENT redis-benchmark: SET, GET, MSET and EVALSHA with uniform keys only (it can send
#       neither a transaction block nor Zipf-distributed keys); a second client for the same rows.
#
# Output: experiments/results/atomicity/TIMESTAMP/results.csv (one row per round, server,
# workload and key distribution), command.txt (the exact client command lines) and summary.txt
# (medians over the rounds; req/CPU-s relative to redis-server in the same rows). kvlab-server
# runs with --threads 2 on this machine's CPUs, shared with the client: read the ratios, not the
# absolute rates.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${1:-3}"
seconds="${2:-3}"
client="${3:-kvlab-load}"
server="${KVLAB_SERVER:-$root/build/server/kvlab-server}"
kvlab="${KVLAB_CLI:-$root/build/tools/cli/kvlab}"
out="$root/experiments/results/atomicity/$(date -u +%Y%m%dT%H%M%SZ)-$client"
mkdir -p "$out"
command -v redis-server >/dev/null || { echo "needs redis-server" >&2; exit 1; }
case "$client" in
  kvlab-load) [ -x "$kvlab" ] || { echo "needs $kvlab (meson compile -C build)" >&2; exit 1; } ;;
  redis-benchmark) command -v redis-benchmark >/dev/null || { echo "needs redis-benchmark" >&2; exit 1; } ;;
  *) echo "CLIENT is kvlab-load or redis-benchmark" >&2; exit 2 ;;
esac

. "$root/experiments/common.sh"  # free_port, cpu_ticks, wait_ping
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

start() {  # name port -> pid
  case "$1" in
    kvlab-key-locks) "$server" --port "$2" --threads 2 --atomicity key-locks >/dev/null 2>&1 & ;;
    kvlab-global) "$server" --port "$2" --threads 2 --atomicity global >/dev/null 2>&1 & ;;
    kvlab-stripes) "$server" --port "$2" --threads 2 --atomicity stripes >/dev/null 2>&1 & ;;
    redis) redis-server --port "$2" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 & ;;
  esac
  local pid=$!
  wait_ping "$2" 5
  echo "$pid"
}

script="return redis.call('INCR', KEYS[1])"
# kvlab load templates: 50 connections on 2 threads, closed loop.
load_args() {  # workload sha -> args
  case "$1" in
    set) echo "--pipeline 30 --command 'SET __key__ __data__' --data-size 256" ;;
    get) echo "--pipeline 30 --command 'GET __key__' --prefill --data-size 256" ;;
    mset) echo "--pipeline 1 --command 'MSET __key__ v __key1__ v __key2__ v __key3__ v __key4__ v __key5__ v __key6__ v __key7__ v __key8__ v __key9__ v'" ;;
    multi) echo "--pipeline 1 --command 'MULTI ; INCR __key1__ ; INCR __key2__ ; INCR __key3__ ; INCR __key4__ ; INCR __key5__ ; EXEC'" ;;
    evalsha) echo "--pipeline 1 --command 'EVALSHA $2 1 __key__'" ;;
  esac
}
bench_args() {  # workload sha keys -> redis-benchmark args (uniform keys in -r range)
  case "$1" in
    set) echo "-t set -P 30 -d 256" ;;
    get) echo "-t get -P 30 -d 256" ;;
    mset) local a="-P 1 MSET"; for i in $(seq 10); do a+=" k$i:__rand_int__ v"; done; echo "$a" ;;
    evalsha) echo "-P 1 EVALSHA $2 1 key:__rand_int__" ;;
  esac
}

if [ "$client" = kvlab-load ]; then
  workloads=(set get mset multi evalsha)
  dists=("uniform:1000000" "zipf:1000")
else
  workloads=(set get mset evalsha)
  dists=("uniform:1000000")
fi

{
  echo "servers: kvlab-server --threads 2 --atomicity key-locks|global|stripes; redis-server --save '' --appendonly no"
  echo "EVALSHA script: $script"
  for w in "${workloads[@]}"; do
    for d in "${dists[@]}"; do
      keys=${d#*:}
      if [ "$client" = kvlab-load ]; then
        pat=uniform; [ "${d%%:*}" = zipf ] && pat=zipf:0.99
        echo "$w $d: kvlab load --port P --threads 2 --connections 25 --duration ${seconds}s --keys $keys --key-pattern $pat $(load_args "$w" SHA)"
      else
        echo "$w $d: redis-benchmark -p P -c 50 --threads 2 -r $keys -n N $(bench_args "$w" SHA)"
      fi
    done
  done
} >"$out/command.txt"

echo "round,server,workload,dist,requests,seconds,requests_per_s,server_cpu_s,requests_per_cpu_s" >"$out/results.csv"
for round in $(seq "$rounds"); do
  for name in kvlab-key-locks kvlab-global kvlab-stripes redis; do
    for d in "${dists[@]}"; do
      keys=${d#*:}
      for workload in "${workloads[@]}"; do
        port=$(free_port)
        pid=$(start "$name" "$port")
        pids+=("$pid")
        sha=$(redis-cli -p "$port" SCRIPT LOAD "$script")
        if [ "$client" = kvlab-load ]; then
          pat=uniform; [ "${d%%:*}" = zipf ] && pat=zipf:0.99
          if [ "$workload" = get ]; then  # prefill outside the measured CPU time
            eval "\"$kvlab\" load --port $port --threads 2 --connections 25 --requests 1 --keys $keys \
                  --key-pattern $pat $(load_args get "$sha") -q" >/dev/null 2>&1
          fi
          c0=$(cpu_ticks "$pid"); t0=$(date +%s.%N)
          eval "\"$kvlab\" load --port $port --threads 2 --connections 25 --duration ${seconds}s \
                --keys $keys --key-pattern $pat $(load_args "$workload" "$sha" | sed 's/--prefill//') \
                --format csv --out \"$out/load.csv\" -q" >/dev/null 2>&1
          t1=$(date +%s.%N); c1=$(cpu_ticks "$pid")
          n=$(python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[-1]["requests"] if r and int(r[-1]["errors"])==0 else -1)' "$out/load.csv")
        else
          n=$((200000 * seconds))
          [ "$workload" = set ] || [ "$workload" = get ] && n=$((1000000 * seconds))
          c0=$(cpu_ticks "$pid"); t0=$(date +%s.%N)
          # shellcheck disable=SC2046
          redis-benchmark -p "$port" -n "$n" -c 50 --threads 2 -r "$keys" -q $(bench_args "$workload" "$sha" "$keys") >/dev/null 2>&1
          t1=$(date +%s.%N); c1=$(cpu_ticks "$pid")
        fi
        kill "$pid"; wait "$pid" 2>/dev/null || true
        if [ "$n" -lt 0 ]; then echo "error replies or no result: $name $workload $d" >&2; exit 1; fi
        python3 - "$round" "$name" "$workload" "$d" "$n" "$t0" "$t1" "$c0" "$c1" >>"$out/results.csv" <<'PY'
import os, sys
r, name, w, d, n, t0, t1, c0, c1 = sys.argv[1:]
hz = os.sysconf("SC_CLK_TCK")
secs = float(t1) - float(t0)
cpu = (int(c1) - int(c0)) / hz
print("%s,%s,%s,%s,%s,%.2f,%.0f,%.2f,%.0f" % (r, name, w, d, n, secs, int(n) / secs, cpu,
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
    keyed.setdefault((r["workload"], r["dist"], r["server"]), []).append(r)
print("%-8s %-16s %-16s %12s %14s %10s" % ("workload", "keys", "server", "req/s", "req/CPU-s",
                                          "vs redis"))
for (w, d, s), rs in sorted(keyed.items()):
    rps = statistics.median(float(x["requests_per_s"]) for x in rs)
    cps = statistics.median(float(x["requests_per_cpu_s"]) for x in rs)
    red = keyed.get((w, d, "redis"))
    ratio = cps / statistics.median(float(x["requests_per_cpu_s"]) for x in red) if red else 0
    print("%-8s %-16s %-16s %12.0f %14.0f %9.2fx" % (w, d, s, rps, cps, ratio))
PY
cat "$out/summary.txt"
echo "results: $out"

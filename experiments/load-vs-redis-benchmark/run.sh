#!/usr/bin/env bash
# kvlab load vs redis-benchmark: how fast does each drive Debian's redis-server at pipeline 1,
# 50 connections, GET? Both are closed loop here (redis-benchmark can only do that), same request
# bytes (GET key:__rand_int__), run alternately, median of RUNS. See README.md.
#
# Usage: experiments/load-vs-redis-benchmark/run.sh [--runs N] [--requests N] [--kvlab PATH]
#                                                    [--threads T] [--out DIR]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
runs=5
requests=300000
threads=1
kvlab=""
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --kvlab) kvlab="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [[ -z "$kvlab" ]]; then
  for c in "$root/build/tools/cli/kvlab" "$root/build-load/tools/cli/kvlab"; do
    if [[ -x "$c" ]] && "$c" load --help 2>&1 | grep -q -- --rate; then kvlab="$c"; break; fi
  done
fi
for tool in redis-server redis-benchmark python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install redis-server redis-tools python3)" >&2; exit 1; }
done
[[ -x "$kvlab" ]] || { echo "kvlab not built: meson setup build && meson compile -C build" >&2; exit 1; }
[[ -n "$out" ]] || out="$root/experiments/results/load-vs-redis-benchmark/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"

# A free loopback port (the kernel picks it), then redis-server on it; stopped by pid on exit.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --logfile "$out/redis.log" &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -p "$port" info server > "$out/server-info.txt"

conns=$((50 / threads))
{
  echo "kvlab: $kvlab ($(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown))"
  echo "redis-server: $(redis-server --version)"
  echo "redis-benchmark -p $port -c 50 -n $requests -t get -P 1 --csv"
  echo "kvlab load --port $port --threads $threads --connections $conns --pipeline 1 --requests $requests --command 'GET key:__rand_int__' --format csv"
  echo "nproc: $(nproc); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/setup.txt"

echo "run,tool,requests_per_s,cpu_user_s,cpu_sys_s,p50_ms,p99_ms" > "$out/runs.csv"
for i in $(seq "$runs"); do
  # Alternate the order so that drifting background load hits both tools alike.
  order=(rb kv); (( i % 2 == 0 )) && order=(kv rb)
  for t in "${order[@]}"; do
    if [[ "$t" == rb ]]; then
      /usr/bin/time -f "%U %S" -o "$out/time.txt" \
        redis-benchmark -p "$port" -c 50 -n "$requests" -t get -P 1 --csv > "$out/rb-$i.csv" 2>/dev/null
      line="$(grep '^"GET"' "$out/rb-$i.csv" | tr -d '"')"
      rps="$(cut -d, -f2 <<<"$line")"; p50="$(cut -d, -f5 <<<"$line")"; p99="$(cut -d, -f7 <<<"$line")"
      name=redis-benchmark
    else
      /usr/bin/time -f "%U %S" -o "$out/time.txt" \
        "$kvlab" load --port "$port" --threads "$threads" --connections "$conns" --pipeline 1 \
          --requests "$requests" --command 'GET key:__rand_int__' --format csv -q \
          --out "$out/kv-$i.csv" > /dev/null
      line="$(sed -n 2p "$out/kv-$i.csv")"
      rps="$(cut -d, -f2 <<<"$line")"
      p50="$(awk -F, '{printf "%.3f", $11/1000}' <<<"$line")"
      p99="$(awk -F, '{printf "%.3f", $13/1000}' <<<"$line")"
      name=kvlab-load
    fi
    read -r user sys < <(tail -1 "$out/time.txt")
    echo "$i,$name,$rps,$user,$sys,$p50,$p99" >> "$out/runs.csv"
    echo "run $i $name: $rps req/s (cpu ${user}s user ${sys}s sys, p50 ${p50} ms, p99 ${p99} ms)" >&2
  done
done

python3 - "$out/runs.csv" "$requests" > "$out/summary.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
requests = float(sys.argv[2])
print("| tool | runs | median req/s | min–max req/s | median CPU s (user+sys) | requests per CPU-second | median p50 ms | median p99 ms |")
print("|---|---|---|---|---|---|---|---|")
for tool in ("redis-benchmark", "kvlab-load"):
    r = [x for x in rows if x["tool"] == tool]
    rps = [float(x["requests_per_s"]) for x in r]
    cpu = [float(x["cpu_user_s"]) + float(x["cpu_sys_s"]) for x in r]
    med = lambda key: statistics.median(float(x[key]) for x in r)
    print(f"| {tool} | {len(r)} | {statistics.median(rps):,.0f} | {min(rps):,.0f}–{max(rps):,.0f} | "
          f"{statistics.median(cpu):.2f} | {requests / max(statistics.median(cpu), 1e-9):,.0f} | "
          f"{med('p50_ms'):.3f} | {med('p99_ms'):.3f} |")
PY
echo "results in $out" >&2
cat "$out/summary.md"

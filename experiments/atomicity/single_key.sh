#!/usr/bin/env bash
# What whole-command atomicity costs single-key commands (issue 19's "≤ 5 %" target): requests per
# server CPU-second of redis-benchmark SET and GET at pipeline 30 against a kvlab-server built
# before atomicity existed (BASE, e.g. commit a5d36c1) and against this tree's server under each
# --atomicity scheme, in alternating rounds with the same client command line.
#
#   experiments/atomicity/single_key.sh BASE_SERVER [ROUNDS] [REQUESTS] [THREADS]
#       defaults: 5 rounds, 2,000,000 requests per measurement, --threads 2
#   GATELESS=PATH adds a server built from this tree with Atomicity::begin_single() returning at
#   once (no gate on single-key commands): it separates the gate's cost from that of everything
#   else added since BASE.
#
# Output: experiments/results/atomicity/TIMESTAMP-single-key/results.csv (one row per round,
# server and command) and summary.txt (medians over the rounds; req/CPU-s relative to BASE).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
base="${1:?usage: single_key.sh BASE_SERVER [ROUNDS] [REQUESTS] [THREADS]}"
rounds="${2:-5}"
requests="${3:-2000000}"
threads="${4:-2}"
server="${KVLAB_SERVER:-$root/build/server/kvlab-server}"
out="$root/experiments/results/atomicity/$(date -u +%Y%m%dT%H%M%SZ)-single-key"
mkdir -p "$out"
command -v redis-benchmark >/dev/null || { echo "needs redis-benchmark (redis-tools)" >&2; exit 1; }

. "$root/experiments/common.sh"  # free_port, cpu_ticks, wait_ping
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null || true' EXIT

bench=(-c 50 -P 30 -d 256 -r 1000000 -n "$requests" --csv)
echo "redis-benchmark ${bench[*]} -t set|get -p PORT; servers: --threads $threads" > "$out/command.txt"
echo "round,server,command,requests,seconds,req_per_s,cpu_s,req_per_cpu_s" > "$out/results.csv"
hz=$(getconf CLK_TCK)
for r in $(seq "$rounds"); do
  servers=(base)
  [ -n "${GATELESS:-}" ] && servers+=(gateless)
  for s in "${servers[@]}" key-locks global stripes; do
    port=$(free_port)
    if [ "$s" = base ]; then "$base" --port "$port" --threads "$threads" >/dev/null 2>&1 &
    elif [ "$s" = gateless ]; then "$GATELESS" --port "$port" --threads "$threads" >/dev/null 2>&1 &
    else "$server" --port "$port" --threads "$threads" --atomicity "$s" >/dev/null 2>&1 &
    fi
    pid=$!
    wait_ping "$port" 5
    for c in set get; do
      t0=$(cpu_ticks "$pid"); s0=$(date +%s.%N)
      redis-benchmark -p "$port" "${bench[@]}" -t "$c" >/dev/null
      s1=$(date +%s.%N); t1=$(cpu_ticks "$pid")
      awk -v r="$r" -v s="$s" -v c="$c" -v n="$requests" -v a="$s0" -v b="$s1" -v t="$((t1 - t0))" \
        -v hz="$hz" 'BEGIN { cpu = t / hz; printf "%s,%s,%s,%d,%.2f,%.0f,%.2f,%.0f\n",
          r, s, c, n, b - a, n / (b - a), cpu, n / cpu }' >> "$out/results.csv"
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  done
done
/usr/bin/env python3 - "$out" <<'PY' > "$out/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
med = {}
for key in {(r["server"], r["command"]) for r in rows}:
    sel = [r for r in rows if (r["server"], r["command"]) == key]
    med[key] = (statistics.median(float(r["req_per_s"]) for r in sel),
                statistics.median(float(r["req_per_cpu_s"]) for r in sel))
# Per-round ratios to a reference server, then their median (pairs measured minutes apart at most).
def ratio(s, c, ref="base"):
    rs = []
    for rnd in {r["round"] for r in rows}:
        get = lambda srv: [float(r["req_per_cpu_s"]) for r in rows
                           if r["round"] == rnd and r["server"] == srv and r["command"] == c][0]
        rs.append(get(s) / get(ref))
    return statistics.median(rs)
gateless = any(r["server"] == "gateless" for r in rows)
print(f"{'command':8}{'server':12}{'req/s':>12}{'req/CPU-s':>12}{'vs base':>10}"
      + (f"{'vs gateless':>13}" if gateless else ""))
for c in ("set", "get"):
    for s in ("base",) + (("gateless",) if gateless else ()) + ("key-locks", "global", "stripes"):
        q, e = med[(s, c)]
        line = f"{c:8}{s:12}{q:12.0f}{e:12.0f}{ratio(s, c):9.2f}x"
        if gateless:
            line += f"{ratio(s, c, 'gateless'):12.2f}x"
        print(line)
PY
cat "$out/summary.txt"

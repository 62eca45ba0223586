#!/usr/bin/env bash
# Does cluster support cost the single-node fast path? (issue 22: "the per-slot key index must
# not cost the single-node fast path more than 3 % requests per CPU-second".) kvlab keeps no
# per-slot index (migration scans the keyspace, server/README.md "Cluster"); what remains on the
# path of every command with cluster mode off is one predictable branch in dispatch() and one
# thread_local load in invoke(). This measures it: redis-benchmark SET and GET at -P 30 against
# the baseline binary (A, e.g. main) and this branch (B), both --cluster-mode no, in alternating
# rounds (A B, then B A, ...); per run requests/s and requests per server CPU-second (utime+stime from /proc).
#
#   experiments/cluster/fastpath_ab.sh BASELINE_SERVER [ROUNDS] [REQUESTS]
#       defaults: 5 rounds, 2,000,000 requests per test; B is build/server/kvlab-server
#
# Output: experiments/results/cluster/TIMESTAMP-fastpath/results.csv and summary.txt (medians;
# B/A ratios). Both servers run --threads 2 on this machine's CPUs, shared with the client.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
a="${1:?BASELINE_SERVER}"
rounds="${2:-5}"
n="${3:-2000000}"
b="$root/build/server/kvlab-server"
out="$root/experiments/results/cluster/$(date -u +%Y%m%dT%H%M%SZ)-fastpath"
mkdir -p "$out"
. "$root/experiments/common.sh"  # free_port, cpu_ticks, wait_ping
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null || true' EXIT
hz=$(getconf CLK_TCK)
echo "round,server,test,rps,cpu_s,req_per_cpu_s" > "$out/results.csv"
cmd="redis-benchmark -p PORT -t set,get -P 30 -c 50 -n $n -r 1000000 -d 64 --csv"
echo "$cmd" > "$out/command.txt"
for r in $(seq "$rounds"); do
  order="A B"; [ $((r % 2)) -eq 0 ] && order="B A"  # ABBA: no fixed position in a round
  for which in $order; do
    bin="$a"; [ "$which" = B ] && bin="$b"
    port=$(free_port)
    "$bin" --port "$port" --threads 2 --cluster-mode no >/dev/null 2>&1 &
    pid=$!
    wait_ping "$port" 5
    for t in set get; do
      c0=$(cpu_ticks "$pid")
      rps=$(redis-benchmark -p "$port" -t "$t" -P 30 -c 50 -n "$n" -r 1000000 -d 64 --csv \
            | awk -F'"' 'NR==2{print $4}')
      c1=$(cpu_ticks "$pid")
      cpu=$(awk -v d=$((c1 - c0)) -v hz="$hz" 'BEGIN{printf "%.2f", d/hz}')
      rpc=$(awk -v n="$n" -v c="$cpu" 'BEGIN{printf "%.0f", n/c}')
      echo "$r,$which,$t,$rps,$cpu,$rpc" | tee -a "$out/results.csv"
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  done
done
/usr/bin/python3 - "$out" <<'PY' | tee "$out/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
for t in ("set", "get"):
    med = {}
    for s in ("A", "B"):
        sel = [r for r in rows if r["server"] == s and r["test"] == t]
        med[s] = (statistics.median(float(r["rps"]) for r in sel),
                  statistics.median(float(r["req_per_cpu_s"]) for r in sel))
    print("%s: A %.0f req/s %.0f req/CPU-s | B %.0f req/s %.0f req/CPU-s | B/A req/s %.3f, "
          "req/CPU-s %.3f" % (t.upper(), med["A"][0], med["A"][1], med["B"][0], med["B"][1],
                               med["B"][0] / med["A"][0], med["B"][1] / med["A"][1]))
PY

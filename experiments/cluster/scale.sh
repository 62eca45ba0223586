#!/usr/bin/env bash
# Aggregate throughput of 1, 2 and 3 kvlab-server nodes on loopback, and the cost of a stale slot
# map (issue 22, "Performance"). Nodes run --cluster-mode yes --threads 1 and get their map from
# `kvlab cluster create` (slots split evenly). The client is cluster-aware redis-benchmark
# (--cluster: it reads CLUSTER SLOTS and sends each key to its owner; it refuses a one-node
# cluster with "Invalid cluster: 1 node(s)", so one node is driven without --cluster, where every
# key is the node's own anyway): SET and GET, -P 30,
# -c 50, random keys over 1,000,000, 64-byte values. Per node, CPU seconds are utime+stime from
# /proc/PID/stat over the test; requests per CPU-second = requests / summed CPU of all nodes.
# ROUNDS rounds (node counts in a fixed order 1 2 3 per round; medians reported).
#
# Stale map: two nodes; a client sends GET of keys owned by node B. "right": straight to B.
# "stale": to A first, which answers -MOVED, then to B (what a client with an old map does before
# it refreshes; a redis-cli -c style follow). One request per round trip, one connection per node,
# redis-py (Debian) raw connections: the ratio is round trips plus MOVED parsing, not server cost
# alone; node A's CPU over the stale run is its cost of refusing. (redis-benchmark cannot measure
# MOVED replies: without --cluster it exits at the first error reply.)
#
#   experiments/cluster/scale.sh [ROUNDS] [REQUESTS]       defaults 3, 2000000
#   SERVER=/path/kvlab-server KVLAB=/path/kvlab  override the build's binaries
#
# Output: experiments/results/cluster/TIMESTAMP-scale/{scale.csv,stale.csv,summary.txt,loadavg.txt}.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${1:-3}"
n="${2:-2000000}"
server="${SERVER:-$root/build/server/kvlab-server}"
kvlab="${KVLAB:-$root/build/tools/cli/kvlab}"
out="$root/experiments/results/cluster/$(date -u +%Y%m%dT%H%M%SZ)-scale"
mkdir -p "$out"
hz=$(getconf CLK_TCK)
. "$root/experiments/common.sh"  # free_port, cpu_ticks, wait_ping
pids=()
ports=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
start_nodes() {  # $1 = node count
  pids=(); ports=()
  for _ in $(seq "$1"); do
    local port; port=$(free_port)
    "$server" --port "$port" --threads 1 --cluster-mode yes >/dev/null 2>&1 &
    pids+=($!); ports+=("$port")
    wait_ping "$port" 5
  done
  local addrs=(); for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
  "$kvlab" cluster create "${addrs[@]}" >/dev/null
}
stop_nodes() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=(); ports=()
}
echo "redis-benchmark [--cluster if nodes > 1] -p PORT -t {set|get} -P 30 -c 50 -n $n -r 1000000 -d 64 --csv" \
  > "$out/command.txt"
echo "round,nodes,test,rps,cpu_s_per_node,cpu_s_total,req_per_cpu_s,loadavg1" > "$out/scale.csv"
for r in $(seq "$rounds"); do
  for nodes in 1 2 3; do
    start_nodes "$nodes"
    for t in set get; do
      c0=(); for p in "${pids[@]}"; do c0+=("$(cpu_ticks "$p")"); done
 cl=--cluster; [ "$nodes" = 1 ] && cl=""  # redis-benchmark refuses a one-node cluster
      rps=$(redis-benchmark $cl -p "${ports[0]}" -t "$t" -P 30 -c 50 -n "$n" -r 1000000 \
            -d 64 --csv 2>/dev/null | awk -F'"' '/^"(SET|GET)"/{print $4}')
      per=(); tot=0
      for i in "${!pids[@]}"; do
        d=$(( $(cpu_ticks "${pids[$i]}") - c0[i] )); tot=$((tot + d))
        per+=("$(awk -v d="$d" -v hz="$hz" 'BEGIN{printf "%.2f", d/hz}')")
      done
      cpu=$(awk -v d="$tot" -v hz="$hz" 'BEGIN{printf "%.2f", d/hz}')
      rpc=$(awk -v n="$n" -v c="$cpu" 'BEGIN{printf "%.0f", n/c}')
      la=$(cut -d' ' -f1 /proc/loadavg)
      echo "$r,$nodes,$t,$rps,$(IFS=/; echo "${per[*]}"),$cpu,$rpc,$la" | tee -a "$out/scale.csv"
    done
    stop_nodes
  done
done
# Stale map.
echo "round,client,requests,seconds,rps,round_trips,node_a_cpu_s,node_b_cpu_s" > "$out/stale.csv"
for r in $(seq "$rounds"); do
  start_nodes 2
  PYTHONPATH="$root/experiments" /usr/bin/python3 - "${ports[0]}" "${ports[1]}" "${pids[0]}" \
    "${pids[1]}" "$r" "$hz" >> "$out/stale.csv" <<'PY'
import sys, time, redis
from redis.crc import key_slot
from common import cpu_ticks as ticks
pa, pb, pida, pidb, rnd, hz = sys.argv[1:7]
a = redis.Redis(port=int(pa)); b = redis.Redis(port=int(pb))
slots = b.execute_command("CLUSTER", "SLOTS")
mine = [(s[0], s[1]) for s in slots if int(s[2][1]) == int(pb)]
keys = []
i = 0
while len(keys) < 1000:
    k = "key:%d" % i; i += 1
    s = key_slot(k.encode())
    if any(lo <= s <= hi for lo, hi in mine):
        keys.append(k)
for k in keys:
    b.set(k, "v" * 64)
N = 20000
for client in ("right", "stale"):
    ca, cb = ticks(pida), ticks(pidb)
    trips = 0
    t0 = time.perf_counter()
    for j in range(N):
        k = keys[j % len(keys)]
        if client == "stale":
            trips += 1
            try:
                a.execute_command("GET", k)
                raise SystemExit("node A served a key of node B")
            except redis.ResponseError as e:
                host_port = str(e).split()[2]
                assert int(host_port.rsplit(":", 1)[1]) == int(pb), e
        trips += 1
        assert b.execute_command("GET", k) is not None
    dt = time.perf_counter() - t0
    print("%s,%s,%d,%.3f,%.0f,%d,%.2f,%.2f" % (rnd, client, N, dt, N / dt, trips,
          (ticks(pida) - ca) / int(hz), (ticks(pidb) - cb) / int(hz)))
PY
  stop_nodes
done
cut -d' ' -f1-3 /proc/loadavg > "$out/loadavg.txt"
/usr/bin/python3 - "$out" <<'PY' | tee "$out/summary.txt"
import csv, statistics as st, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/scale.csv")))
print("nodes test  median_req/s  median_req/CPU-s  median_CPU_s_per_node  loadavg1")
for t in ("set", "get"):
    for nodes in ("1", "2", "3"):
        sel = [r for r in rows if r["nodes"] == nodes and r["test"] == t]
        per = [[float(x) for x in r["cpu_s_per_node"].split("/")] for r in sel]
        pn = "/".join("%.2f" % st.median(p[i] for p in per) for i in range(len(per[0])))
        print("%s     %s   %12.0f  %16.0f  %s  %s" % (nodes, t, st.median(float(r["rps"]) for r in sel),
              st.median(float(r["req_per_cpu_s"]) for r in sel), pn,
              "-".join(sorted({r["loadavg1"] for r in sel}))))
rows = list(csv.DictReader(open(d + "/stale.csv")))
for c in ("right", "stale"):
    sel = [r for r in rows if r["client"] == c]
    line = "%-11s median req/s %.0f" % (c, st.median(float(r["rps"]) for r in sel))
    line += ", round trips per request %.1f" % (int(sel[0]["round_trips"]) / int(sel[0]["requests"]))
    line += ", CPU s node A %.2f, node B %.2f" % (st.median(float(r["node_a_cpu_s"]) for r in sel),
                                                 st.median(float(r["node_b_cpu_s"]) for r in sel))
    print(line)
PY

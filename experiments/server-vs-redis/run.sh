#!/bin/sh
# kvlab-server vs Debian's redis-server, same client (redis-benchmark), same machine, same run.
# See README.md for the question and how to read the table.
#
# Usage: experiments/server-vs-redis/run.sh [-n REQUESTS] [-r RUNS] [-b BACKEND] [--server PATH]
#                                          [--client redis-benchmark|kvlab-load]
# --client kvlab-load drives the same requests with `kvlab load` (closed loop, 50 connections,
# a window of P requests in flight per connection, 256-byte values over 100,000 keys).
# Output: experiments/results/server-vs-redis/<timestamp>/{results.csv,table.md,*.log}
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=2000000
runs=3
backend=
server="$root/build/server/kvlab-server"
client=redis-benchmark
kvlab_cli="$root/build/tools/cli/kvlab"
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift 2 ;;
    -r) runs=$2; shift 2 ;;
    -b) backend=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --client) client=$2; shift 2 ;;
    *) echo "usage: $0 [-n REQUESTS] [-r RUNS] [-b BACKEND] [--server PATH] [--client redis-benchmark|kvlab-load]" >&2; exit 2 ;;
  esac
done
for p in redis-server redis-benchmark redis-cli; do
  command -v $p >/dev/null || { echo "needs $p (apt-get install redis-server redis-tools)" >&2; exit 77; }
done
[ -x "$server" ] || { echo "build kvlab-server first ($server)" >&2; exit 2; }
case $client in
  redis-benchmark) ;;
  kvlab-load) [ -x "$kvlab_cli" ] || { echo "build kvlab first ($kvlab_cli)" >&2; exit 2; } ;;
  *) echo "--client: redis-benchmark or kvlab-load, not '$client'" >&2; exit 2 ;;
esac

out="$root/experiments/results/server-vs-redis/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
csv="$out/results.csv"
echo "server,threads,pipeline,test,run,requests,seconds,rps,server_cpu_s,req_per_cpu_s" > "$csv"
tck=$(getconf CLK_TCK)
. "$root/experiments/common.sh"  # free_port, cpu_ticks, wait_ping

# All three servers run side by side on their own ports (idle ones sleep in epoll), and every run
# visits them in turn, so that background load on a shared machine hits all of them alike.
labels="redis kvlab-1 kvlab-2"
pids=
start_server() {  # $1 = label, $2 = port
  case $1 in
    redis) redis-server --port "$2" --save '' --appendonly no --daemonize no \
             --io-threads 1 >"$out/redis.log" 2>&1 & ;;
    kvlab-*) "$server" --port "$2" --threads "${1#kvlab-}" ${backend:+--backend "$backend"} \
               >"$out/$1.log" 2>&1 & ;;
  esac
  pid=$!
  pids="$pids $pid"
  wait_ping "$2" 10 || { echo "server $1 did not start" >&2; exit 1; }
}
stop_servers() {
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  for p in $pids; do wait "$p" 2>/dev/null || true; done
  pids=
}
trap 'stop_servers' EXIT INT TERM

for label in $labels; do
  port=$(free_port)
  start_server "$label" "$port"
  eval "port_$(echo "$label" | tr - _)=$port pid_$(echo "$label" | tr - _)=$pid"
done

for run in $(seq 1 "$runs"); do
  # Rotate the visiting order every run, so that no server always goes first (or last).
  set -- $labels
  case $((run % 3)) in
    0) order="$1 $2 $3" ;;
    1) order="$2 $3 $1" ;;
    2) order="$3 $1 $2" ;;
  esac
  for pipeline in 30 1; do
    reqs=$n
    [ "$pipeline" = 1 ] && reqs=$((n / 4))   # P=1 costs ~10x more per request; keep runs short
    for test in set get; do
      for label in $order; do
        v=$(echo "$label" | tr - _)
        eval "port=\$port_$v pid=\$pid_$v"
        threads=1; [ "$label" = kvlab-2 ] && threads=2
        c0=$(cpu_ticks "$pid")
        t0=$(date +%s.%N)
        if [ "$client" = redis-benchmark ]; then
          line=$(redis-benchmark -p "$port" -P "$pipeline" -d 256 -r 100000 -c 50 -n "$reqs" \
                   -t "$test" --csv 2>/dev/null | tail -1)
          rps=$(echo "$line" | awk -F'","' '{ gsub(/"/, "", $2); print $2 }')
        else
          cmd="GET __key__"; [ "$test" = set ] && cmd="SET __key__ __data__"
          # The CSV's second field is the achieved rate.
          rps=$("$kvlab_cli" load --port "$port" -c 50 --pipeline "$pipeline" --data-size 256 \
                  --keys 100000 --requests "$reqs" --command "$cmd" -q --format csv 2>/dev/null |
                tail -1 | cut -d, -f2)
        fi
        t1=$(date +%s.%N)
        c1=$(cpu_ticks "$pid")
        case $rps in
          ''|*[!0-9.]*) echo "$client against $label (port $port) gave no rate: '$rps'" >&2; exit 1 ;;
        esac
        awk -v s="$label" -v th="$threads" -v p="$pipeline" -v t="$test" -v r="$run" \
            -v n="$reqs" -v t0="$t0" -v t1="$t1" -v rps="$rps" -v c0="$c0" -v c1="$c1" \
            -v tck="$tck" 'BEGIN {
              cpu = (c1 - c0) / tck
              printf "%s,%s,%s,%s,%s,%d,%.3f,%.0f,%.2f,%.0f\n", s, th, p, t, r, n, t1 - t0, rps,
                     cpu, (cpu > 0 ? n / cpu : 0) }' >> "$csv"
        tail -1 "$csv"
      done
    done
  done
done
stop_servers
uptime > "$out/load.txt"

# Medians over runs; ratios paired per run (see summary.py).
python3 "$here/summary.py" "$csv" | tee "$out/table.md"
echo
if [ "$client" = redis-benchmark ]; then
  cmd="redis-benchmark -P {30,1} -d 256 -r 100000 -c 50 -n $n (P=1: n/4) -t {set,get}"
else
  cmd="kvlab load -c 50 --pipeline {30,1} --data-size 256 --keys 100000 --requests $n (P=1: n/4) --command {SET,GET}"
fi
echo "command: $cmd; $runs runs; medians, paired ratios (range)" | tee "$out/command.txt"
echo "results: $out"

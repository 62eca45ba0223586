#!/usr/bin/env bash
# The stall demonstration: Debian's redis-server on a free loopback port is frozen for 1 s
# (SIGSTOP ... SIGCONT, by pid) in the middle of a run, once under kvlab load's open loop
# (fixed rate; latency from the intended send time) and once under its closed loop (like
# memtier/redis-benchmark). The open loop shows the stall in its tail; the closed loop mostly
# hides it, because it simply stops sending while the server is frozen.
#
# Usage: tools/load/demo_stall.sh [KVLAB] [RATE] [CONNECTIONS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
kvlab="${1:-}"
rate="${2:-10000}"
conns="${3:-10}"
if [[ -z "$kvlab" ]]; then
  for c in "$root/build/tools/cli/kvlab" "$root/build-load/tools/cli/kvlab"; do
    if [[ -x "$c" ]] && "$c" load --help 2>&1 | grep -q -- --rate; then kvlab="$c"; break; fi
  done
fi
[[ -x "$kvlab" ]] || { echo "kvlab with 'load' not built" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "needs redis-server" >&2; exit 1; }

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --logfile /dev/null &
pid=$!
trap 'kill -CONT "$pid" 2>/dev/null; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done

freeze() { sleep 1.5; kill -STOP "$pid"; sleep 1; kill -CONT "$pid"; }

echo "== open loop, $rate req/s, 1 thread x $conns connections, 4 s, server frozen 1 s at ~1.5 s"
freeze & f=$!
"$kvlab" load --port "$port" --rate "$rate" --connections "$conns" --duration 4s --keys 1000 -q
wait "$f"
echo
echo "== closed loop, same connections, 4 s, server frozen 1 s at ~1.5 s"
freeze & f=$!
"$kvlab" load --port "$port" --connections "$conns" --duration 4s --keys 1000 -q
wait "$f"

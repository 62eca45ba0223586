#!/bin/sh
# redis-benchmark and redis-cli against a real kvlab-server. Exit 77 (skip) when they are absent.
# Usage: redis_tools_test.sh KVLAB_SERVER REDIS_CLI REDIS_BENCHMARK
server=$1 cli=$2 bench=$3
[ -x "$cli" ] && [ -x "$bench" ] || { echo "redis-tools not installed: skipping"; exit 77; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$server" --port "$port" --threads 2 >/tmp/kvlab-tools-test.$$.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f /tmp/kvlab-tools-test.$$.log' EXIT
i=0
until "$cli" -p "$port" ping >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -gt 100 ] && { echo "server did not start"; cat /tmp/kvlab-tools-test.$$.log; exit 1; }
  sleep 0.1
done
fail() { echo "FAIL: $*"; exit 1; }

# redis-benchmark: every test reports a non-zero rate and no errors.
out=$(timeout 120 "$bench" -p "$port" -t ping_inline,ping_mbulk,set,get,incr,mset -n 20000 -P 16 -q 2>&1) \
  || fail "redis-benchmark exited with an error: $out"
echo "$out"
echo "$out" | grep -qi "error" && fail "redis-benchmark reported errors"
for t in PING_INLINE PING_MBULK SET GET INCR MSET; do
  line=$(echo "$out" | tr '\r' '\n' | grep "^$t" | tail -1)
  [ -n "$line" ] || fail "no result line for $t"
  rate=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p')
  awk -v r="$rate" 'BEGIN { exit !(r > 0) }' || fail "zero rate for $t: $line"
done

# redis-benchmark's default suite over every value type, LRANGE_100…600 included.
out=$(timeout 240 "$bench" -p "$port" \
        -t ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange,mset \
        -n 20000 -P 8 -q 2>&1) || fail "redis-benchmark (default suite) exited with an error: $out"
echo "$out"
echo "$out" | grep -qi "error" && fail "redis-benchmark reported errors in the default suite"
for t in PING_INLINE PING_MBULK SET GET INCR LPUSH RPUSH LPOP RPOP SADD HSET SPOP ZADD ZPOPMIN \
         LRANGE_100 LRANGE_300 LRANGE_500 LRANGE_600 MSET; do
  line=$(echo "$out" | tr '\r' '\n' | grep "^$t" | tail -1)
  [ -n "$line" ] || fail "no result line for $t"
  rate=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p')
  awk -v r="$rate" 'BEGIN { exit !(r > 0) }' || fail "zero rate for $t: $line"
done

# redis-cli scripted session.
[ "$("$cli" -p "$port" set a 1)" = "OK" ] || fail "set"
[ "$("$cli" -p "$port" get a)" = "1" ] || fail "get"
"$cli" -p "$port" info | grep -q "^redis_version:" || fail "info"
"$cli" -p "$port" info kvlab | grep -q "^kvlab_backend:" || fail "info kvlab"
"$cli" -p "$port" flushall >/dev/null
for i in $(seq 1 50); do echo "SET scan:$i v"; done | "$cli" -p "$port" >/dev/null
[ "$("$cli" -p "$port" dbsize)" = "50" ] || fail "dbsize after piped SETs"
n=$("$cli" -p "$port" --scan --pattern 'scan:*' | sort -u | wc -l)
[ "$n" = "50" ] || fail "--scan returned $n keys"
printf 'SET x 5\nINCR x\nGET x\n' | "$cli" -p "$port" | tail -1 | grep -q '^6$' || fail "piped session"
"$cli" -p "$port" shutdown >/dev/null 2>&1
i=0
while kill -0 $pid 2>/dev/null; do i=$((i + 1)); [ $i -gt 50 ] && fail "server did not exit after SHUTDOWN"; sleep 0.1; done
wait $pid; code=$?
[ $code = 0 ] || fail "exit status $code after SHUTDOWN"
echo "redis tools: ok"

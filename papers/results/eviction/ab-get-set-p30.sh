#!/bin/sh
# A/B: main vs evict, GET/SET P30, 3 rounds alternating, maxmemory off and on (1gb allkeys-lru).
for round in 1 2 3; do
for bin in main evict; do
for mm in off on; do
  P=$((7400 + round * 10)); extra=""
  [ $mm = on ] && extra="--maxmemory 1gb --maxmemory-policy allkeys-lru"
  [ $bin = main ] && [ $mm = on ] && extra=""   # main ignores maxmemory: same as off
  /tmp/kvlab-server-$bin --port $P --threads 1 $extra >/dev/null 2>&1 & SP=$!
  sleep 0.4
  redis-benchmark -p $P -t set,get -n 300000 -r 100000 -d 256 -P 30 -c 50 -q 2>/dev/null | tr '\r' '\n' | grep -E "^(SET|GET): [0-9]" | sed "s/^/$round $bin $mm /"
  kill $SP; wait $SP 2>/dev/null
done; done; done

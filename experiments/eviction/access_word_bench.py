#!/usr/bin/env python3
"""GET/SET cost of keeping the access word (OBJECT IDLETIME/FREQ; server/features/eviction.hpp).

Usage: BEFORE=old/kvlab-server AFTER=new/kvlab-server access_word_bench.py RUNS N
Each run starts each binary (alternating which goes first) with --threads 1 on a free loopback
port, runs redis-benchmark SET then GET (-n N, 100,000 random keys, 8 clients, pipeline 16,
16-byte values) and divides the requests by the server's CPU seconds (utime + stime from
/proc/PID/stat) for that test. Prints each run and the medians' ratio; the raw numbers go to
/tmp/bench_result.json. Kills only the servers it started.
"""
import subprocess, os, sys, statistics, json
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from common import Server, accepts, cpu_seconds  # noqa: E402
def run(binary, n):
    server=Server(binary,[binary,'--threads','1'],ready=accepts,timeout=5)
    out={}
    try:
        for t in ['set','get']:
            c0=cpu_seconds(server.pid)
            subprocess.run(['redis-benchmark','-p',str(server.port),'-t',t,'-n',str(n),'-r','100000','-c','8','-P','16','-q','-d','16'],stdout=subprocess.DEVNULL,check=True)
            c1=cpu_seconds(server.pid)
            out[t]=n/(c1-c0)
    finally:
        server.stop(timeout=None,kill=True)
    return out
runs=int(sys.argv[1]); n=int(sys.argv[2])
res={'before':{'set':[],'get':[]},'after':{'set':[],'get':[]}}
for i in range(runs):
    order=[('before',os.environ.get('BEFORE','/tmp/kvlab-before')),('after',os.environ.get('AFTER','/tmp/kvlab-after'))]
    if i%2: order.reverse()
    for name,b in order:
        r=run(b,n)
        for t in r: res[name][t].append(r[t])
    print(i, {k:{t:round(v[-1]) for t,v in res[k].items()} for k in res}, flush=True)
for t in ['set','get']:
    b=statistics.median(res['before'][t]); a=statistics.median(res['after'][t])
    print(f'{t}: before {b:.0f} req/cpu-s, after {a:.0f} req/cpu-s, ratio after/before {a/b:.4f}')
json.dump(res, open('/tmp/bench_result.json','w'))

#!/usr/bin/python3
"""Hit ratio of a look-aside cache under each maxmemory policy (experiments/eviction/README.md).

For every (server, policy, trace, cache size) it starts the server on a free loopback port with
maxmemory set so that the given fraction of the key space fits, replays the trace as a cache
would (GET; on a miss, SET the value), and counts hits over the second half of the trace (the
first half warms the cache). Pipelined batches of GETs, then the batch's SETs. Writes one CSV
line per run and, at the end, the figure.
"""
import argparse, csv, os, sys, time

import numpy as np
import redis

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import Server, free_port  # noqa: E402


def answers_redis_py(port):
    try:
        redis.Redis(port=port).ping()
        return True
    except Exception:
        return False


def start(argv, port):
    """The started server and a redis-py client on it."""
    server = Server("server " + " ".join(argv), argv, port, ready=answers_redis_py, timeout=5,
                    interval=0.02)
    return server, redis.Redis(port=port)


def zipf_trace(n_keys, n_req, theta, rng):
    ranks = np.arange(1, n_keys + 1, dtype=np.float64)
    p = ranks ** -theta
    p /= p.sum()
    keys = rng.choice(n_keys, size=n_req, p=p)
    return rng.permutation(n_keys)[keys]  # popularity not tied to key order


def scan_trace(n_keys, n_req, theta, rng):
    """zipf requests, with one-time scans of cold keys (ids >= n_keys) mixed in: every 2,000
    requests a sequential run of 1,000 keys never seen before (a third of the requests)."""
    base = zipf_trace(n_keys, n_req, theta, rng)
    out, nxt, i = [], n_keys, 0
    while len(out) < n_req:
        out.extend(base[i:i + 2000])
        i += 2000
        out.extend(range(nxt, nxt + 1000))
        nxt += 1000
    return np.array(out[:n_req])


def replay(r, trace, value, batch=200):
    hits = misses = 0
    half = len(trace) // 2
    for start_i in range(0, len(trace), batch):
        chunk = trace[start_i:start_i + batch]
        names = ["k:%d" % k for k in chunk]
        pipe = r.pipeline(transaction=False)
        for n in names:
            pipe.get(n)
        got = pipe.execute(raise_on_error=False)
        pipe = r.pipeline(transaction=False)
        for j, (n, g) in enumerate(zip(names, got)):
            hit = g is not None and not isinstance(g, Exception)
            if start_i + j >= half:
                hits += hit
                misses += not hit
            if not hit:
                pipe.set(n, value)
        pipe.execute(raise_on_error=False)
    return hits / max(1, hits + misses)


def dataset_bytes(argv, port, n_keys, value):
    """used_memory of the full key space minus the empty server's (per server: overheads differ)."""
    server, r = start(argv, port)
    try:
        base = r.info("memory")["used_memory"]
        pipe = r.pipeline(transaction=False)
        for k in range(n_keys):
            pipe.set("k:%d" % k, value)
            if k % 1000 == 999:
                pipe.execute()
        pipe.execute()
        full = r.info("memory")["used_memory"]
        return base, full - base
    finally:
        server.stop(timeout=None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvlab", required=True)
    ap.add_argument("--redis", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--keys", type=int, default=20000)
    ap.add_argument("--requests", type=int, default=120000)
    ap.add_argument("--value", type=int, default=200)
    ap.add_argument("--sizes", default="0.05,0.2,0.5")
    ap.add_argument("--thetas", default="0.99")
    ap.add_argument("--policies",
                    default="allkeys-lru,allkeys-lfu,allkeys-random,allkeys-sieve,allkeys-s3fifo")
    ap.add_argument("--queues", default="queue/kvlab")
    args = ap.parse_args()
    value = b"v" * args.value
    rng = np.random.default_rng(42)
    traces = {}
    for th in [float(t) for t in args.thetas.split(",")]:
        traces["zipf%.2f" % th] = zipf_trace(args.keys, args.requests, th, rng)
    traces["scan+zipf0.99"] = scan_trace(args.keys, args.requests, 0.99, rng)
    servers = []
    for pol in args.policies.split(","):
        queues = args.queues.split(",") if pol == "allkeys-s3fifo" else [""]
        for q in queues:
            servers.append(("kvlab", pol, q))
    if args.redis:
        servers += [("redis", "allkeys-lru", ""), ("redis", "allkeys-lfu", "")]
    rows = []
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["server", "policy", "queue", "trace", "cache_fraction", "maxmemory",
                    "hit_ratio", "seconds", "evicted_keys"])
        sizing = {}
        for srv, pol, q in servers:
            for tname, trace in traces.items():
                for frac in [float(s) for s in args.sizes.split(",")]:
                    port = free_port()
                    if srv == "kvlab":
                        argv = [args.kvlab, "--port", str(port), "--threads", "2"]
                        if q:
                            argv += ["--eviction-queue", q]
                    else:
                        argv = [args.redis, "--port", str(port), "--bind", "127.0.0.1", "--save",
                                "", "--appendonly", "no"]
                    if srv not in sizing:
                        # kvlab counts used_memory only once a maxmemory is set (before, INFO
                        # shows RSS: server/util/memory.hpp), so its sizing run sets one that never
                        # binds, to measure what the limited runs will count.
                        sizing_argv = argv + (["--maxmemory", str(1 << 40)] if srv == "kvlab"
                                              else [])
                        sizing[srv] = dataset_bytes(sizing_argv, port, args.keys, value)
                        port = free_port()
                        argv[argv.index("--port") + 1] = str(port)
                    base, data = sizing[srv]
                    mm = int(base + frac * data)
                    argv += ["--maxmemory", str(mm), "--maxmemory-policy", pol]
                    server, r = start(argv, port)
                    t0 = time.time()
                    try:
                        hr = replay(r, trace, value)
                        ev = r.info("stats")["evicted_keys"]
                    finally:
                        server.stop(timeout=None)
                    row = [srv, pol, q, tname, frac, mm, round(hr, 4), round(time.time() - t0, 2),
                           ev]
                    w.writerow(row)
                    f.flush()
                    rows.append(row)
                    print(",".join(map(str, row)), flush=True)
    plot(rows, args.out)


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tnames = sorted({r[3] for r in rows})
    fig, axes = plt.subplots(1, len(tnames), figsize=(5 * len(tnames), 4), squeeze=False)
    for ax, t in zip(axes[0], tnames):
        series = sorted({(r[0], r[1], r[2]) for r in rows if r[3] == t})
        for s in series:
            pts = sorted((r[4], r[6]) for r in rows if r[3] == t and (r[0], r[1], r[2]) == s)
            label = "%s %s%s" % (s[0], s[1], (" " + s[2]) if s[2] else "")
            ax.plot([p[0] * 100 for p in pts], [p[1] for p in pts], marker="o",
                    linestyle="--" if s[0] == "redis" else "-", label=label)
        ax.set_title(t)
        ax.set_xlabel("cache size (% of the key space's bytes)")
        ax.set_ylabel("hit ratio (second half)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "hitratio.png"), dpi=120)
    fig.savefig(os.path.join(out, "hitratio.svg"))


if __name__ == "__main__":
    main()

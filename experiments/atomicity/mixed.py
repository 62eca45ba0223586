#!/usr/bin/env python3
"""Two clients at once against one `--threads 2` kvlab-server: one pipelines 2-key MSETs, the
other GETs, so that each worker serves batches of both. A/B of server binaries, alternated.

    experiments/atomicity/mixed.py REPS NAME=BINARY NAME=BINARY [...]   (the first is the base)

Each repetition FLUSHALLs each server and runs both `kvlab load` clients for 3 s side by side
(1 thread, 25 connections, pipeline 30, 256-byte values, 100,000 keys); it reports each client's
requests/s and both clients' requests per server CPU-second (utime+stime from /proc/PID/stat),
and the medians of the paired ratios to the base. See README.md, "A kept announcement beside
single-key traffic".
"""
import csv, os, pathlib, statistics, subprocess, sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from common import CLOCK_TICKS, Server, cpu_seconds  # noqa: E402
KVLAB = os.environ.get("KVLAB", str(ROOT / "build/tools/cli/kvlab"))
PIPELINE = os.environ.get("PIPELINE", "30")

if len(sys.argv) < 4:
    raise SystemExit(__doc__)
reps = int(sys.argv[1])
bins = dict(a.split("=", 1) for a in sys.argv[2:])


def client(port, template):
    return subprocess.Popen([KVLAB, "load", "--port", str(port), "-t", "1", "-c", "25", "--pipeline", PIPELINE,
                             "--duration", "3000ms", "--keys", "100000", "--data-size", "256", "--command", template,
                             "--format", "csv", "-q"], stdout=subprocess.PIPE, text=True)


def result(proc):
    rows = list(csv.DictReader(l for l in proc.communicate(timeout=60)[0].splitlines() if l.strip()))
    return float(rows[-1]["achieved_rate"]), float(rows[-1]["requests"])


servers = {}
res = {n: [] for n in bins}
try:
    for n, b in bins.items():
        servers[n] = Server(n, [b, "--threads", "2"])
    names = list(bins)
    for rep in range(reps):
        for n in names[rep % len(names):] + names[:rep % len(names)]:
            port, pid = servers[n].port, servers[n].pid
            subprocess.run(["redis-cli", "-p", str(port), "flushall"], capture_output=True, check=True)
            c0 = cpu_seconds(pid)
            a = client(port, "MSET __rand_key__ __data__ __rand_key__ __data__")
            b = client(port, "GET __key__")
            (mset, mreq), (get, greq) = result(a), result(b)
            per_cpu = (mreq + greq) / max(cpu_seconds(pid) - c0, 1.0 / CLOCK_TICKS)
            res[n].append((mset, get, per_cpu))
            print(rep, n, f"MSET {mset:.0f}/s GET {get:.0f}/s both {per_cpu:.0f}/CPU-s", flush=True)
finally:
    for server in servers.values():
        server.stop(timeout=None, kill=True)
base = names[0]
for n in names:
    med = lambda k: statistics.median(x[k] for x in res[n])
    rat = lambda k: statistics.median(res[n][i][k] / res[base][i][k] for i in range(reps))
    print(f"{n}: MSET {med(0):.0f}/s GET {med(1):.0f}/s both {med(2):.0f}/CPU-s; "
          f"to {base}: MSET {rat(0):.2f}x GET {rat(1):.2f}x per CPU-s {rat(2):.2f}x")

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
import csv, os, pathlib, socket, statistics, subprocess, sys, time

ROOT = pathlib.Path(__file__).resolve().parents[2]
KVLAB = os.environ.get("KVLAB", str(ROOT / "build/tools/cli/kvlab"))
PIPELINE = os.environ.get("PIPELINE", "30")
TCK = os.sysconf("SC_CLK_TCK")

if len(sys.argv) < 4:
    raise SystemExit(__doc__)
reps = int(sys.argv[1])
bins = dict(a.split("=", 1) for a in sys.argv[2:])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TCK


def client(port, template):
    return subprocess.Popen([KVLAB, "load", "--port", str(port), "-t", "1", "-c", "25", "--pipeline", PIPELINE,
                             "--duration", "3000ms", "--keys", "100000", "--data-size", "256", "--command", template,
                             "--format", "csv", "-q"], stdout=subprocess.PIPE, text=True)


def result(proc):
    rows = list(csv.DictReader(l for l in proc.communicate(timeout=60)[0].splitlines() if l.strip()))
    return float(rows[-1]["achieved_rate"]), float(rows[-1]["requests"])


ports = {n: free_port() for n in bins}
procs = {n: subprocess.Popen([b, "--port", str(ports[n]), "--threads", "2"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for n, b in bins.items()}
res = {n: [] for n in bins}
try:
    time.sleep(0.7)
    names = list(bins)
    for rep in range(reps):
        for n in names[rep % len(names):] + names[:rep % len(names)]:
            subprocess.run(["redis-cli", "-p", str(ports[n]), "flushall"], capture_output=True, check=True)
            c0 = cpu_s(procs[n].pid)
            a = client(ports[n], "MSET __rand_key__ __data__ __rand_key__ __data__")
            b = client(ports[n], "GET __key__")
            (mset, mreq), (get, greq) = result(a), result(b)
            per_cpu = (mreq + greq) / max(cpu_s(procs[n].pid) - c0, 1.0 / TCK)
            res[n].append((mset, get, per_cpu))
            print(rep, n, f"MSET {mset:.0f}/s GET {get:.0f}/s both {per_cpu:.0f}/CPU-s", flush=True)
finally:
    for p in procs.values():
        p.kill()
base = names[0]
for n in names:
    med = lambda k: statistics.median(x[k] for x in res[n])
    rat = lambda k: statistics.median(res[n][i][k] / res[base][i][k] for i in range(reps))
    print(f"{n}: MSET {med(0):.0f}/s GET {med(1):.0f}/s both {med(2):.0f}/CPU-s; "
          f"to {base}: MSET {rat(0):.2f}x GET {rat(1):.2f}x per CPU-s {rat(2):.2f}x")

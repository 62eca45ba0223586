#!/usr/bin/env python3
"""The floor under PING: redis-server, kvlab-server and ping_floor (epoll and io_uring) side by side.

Each repetition measures every server once per (client, pipeline), in a rotated order; a
measurement reads the server's utime+stime from /proc/PID/stat before and after one client run.
The summary gives medians over repetitions of the paired ratios to redis-server.
See experiments/commands/README.md, "The floor under PING".
"""
import argparse, csv, datetime, pathlib, re, shutil, statistics, subprocess, sys, tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from common import CLOCK_TICKS, REDIS_FLAGS, Server, accepts, cpu_seconds, free_port  # noqa: E402
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--reps", type=int, default=7)
ap.add_argument("--clients", default="rb,load")
ap.add_argument("--pipelines", default="30,1")
ap.add_argument("--kvlab-server", default=str(ROOT / "build/server/kvlab-server"))
ap.add_argument("--kvlab", default=str(ROOT / "build/tools/cli/kvlab"))
ap.add_argument("--out", default=None, help="results directory (default experiments/results/commands-floor/<UTC>)")
args = ap.parse_args()

work = pathlib.Path(tempfile.mkdtemp(prefix="kvlab-floor-"))
floor = work / "ping_floor"
subprocess.run(["g++", "-std=c++20", "-O2", "-Wall", "-o", str(floor), str(HERE / "ping_floor.cpp"), "-luring"], check=True)

SERVERS = {
    "redis": lambda p: ["redis-server", "--port", str(p), *REDIS_FLAGS],
    "kvlab": lambda p: [args.kvlab_server, "--port", str(p), "--threads", "1"],
    "floor-epoll": lambda p: [str(floor), str(p), "epoll"],
    "floor-uring": lambda p: [str(floor), str(p), "uring"],
    "floor-uring-defer": lambda p: [str(floor), str(p), "uring-defer"],
}
servers = {}
stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
out = pathlib.Path(args.out) if args.out else ROOT / "experiments/results/commands-floor" / stamp
out.mkdir(parents=True, exist_ok=True)

def measure(name, client, pipeline):
    port = servers[name].port
    c0 = cpu_seconds(servers[name].pid)
    if client == "rb":
        n = 5_000_000 if pipeline > 1 else 300_000
        o = subprocess.run(["redis-benchmark", "-p", str(port), "-c", "25", "-P", str(pipeline), "-n", str(n), "-q", "PING"],
                           capture_output=True, text=True, timeout=300).stdout
        rate = float(re.findall(r"PING: ([0-9.]+) requests per second", o.replace("\r", "\n"))[-1])
        reqs = n
    else:
        o = subprocess.run([args.kvlab, "load", "--port", str(port), "-t", "1", "-c", "25", "--pipeline", str(pipeline),
                            "--duration", "3000ms", "--command", "PING", "--format", "csv", "-q"],
                           capture_output=True, text=True, timeout=300).stdout
        rows = list(csv.DictReader(l for l in o.splitlines() if l.strip()))
        rate, reqs = float(rows[-1]["achieved_rate"]), float(rows[-1]["requests"])
    c1 = cpu_seconds(servers[name].pid)
    return rate, reqs / max(c1 - c0, 1.0 / CLOCK_TICKS)

rows = []
try:
    for name, argv in SERVERS.items():
        port = free_port()
        servers[name] = Server(name, argv(port), port, ready=accepts, timeout=5)
    names = list(SERVERS)
    for rep in range(args.reps):
        for client in args.clients.split(","):
            for pipeline in map(int, args.pipelines.split(",")):
                order = names[rep % len(names):] + names[:rep % len(names)]
                for name in order:
                    if servers[name].proc.poll() is not None:
                        raise SystemExit(f"{name} exited")
                    rate, per_cpu = measure(name, client, pipeline)
                    rows.append(dict(rep=rep, client=client, pipeline=pipeline, server=name, rate=rate, per_cpu_s=per_cpu))
                    print(rep, client, pipeline, name, f"{rate:.0f}", f"{per_cpu:.0f}", flush=True)
finally:
    for server in servers.values():
        server.stop(timeout=None)
    shutil.rmtree(work)

with open(out / "results.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
lines = [f"# The floor under PING, {stamp}, {args.reps} repetitions", "",
         "Medians of the paired ratios to redis-server (requests/s; requests per server CPU-second).", "",
         "| client | pipeline | " + " | ".join(n for n in SERVERS if n != "redis") + " |",
         "|---|---|" + "---|" * (len(SERVERS) - 1)]
for client in args.clients.split(","):
    for pipeline in map(int, args.pipelines.split(",")):
        cells = []
        for name in SERVERS:
            if name == "redis":
                continue
            def ratio(key):
                r = []
                for rep in range(args.reps):
                    get = lambda s: next(x[key] for x in rows if x["rep"] == rep and x["client"] == client and x["pipeline"] == pipeline and x["server"] == s)
                    r.append(get(name) / get("redis"))
                return statistics.median(r)
            cells.append(f"{ratio('rate'):.2f}; {ratio('per_cpu_s'):.2f}")
        lines.append(f"| {client} | {pipeline} | " + " | ".join(cells) + " |")
(out / "summary.md").write_text("\n".join(lines) + "\n")
(out / "command.txt").write_text(" ".join(sys.argv) + f"  # {stamp}, load average at the end "
                                 + open("/proc/loadavg").read().split()[0] + "\n")
print("\n".join(lines))
print(f"results: {out}")

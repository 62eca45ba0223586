#!/usr/bin/env bash
# One sequential client: one connection, pipeline 1, against redis-server and kvlab-server with the
# default flags (as many workers as allowed CPUs, `--yield auto`), `--threads 1` and `--threads 2`.
#
#   experiments/commands/one_client.sh [--reps N] [--seconds S] [--clients rb,load,py]
#                                      [--rates 1k,5k] [--baseline BINARY] [--busy N] [--quick]
#
# Closed loop: SET, GET, INCR and a 3-command MULTI (MULTI, INCR, INCR, INCR, EXEC sent as one
# request) with three clients of different design: redis-benchmark `-c 1` (no MULTI: it sends one
# command per request), `kvlab load -c 1`, and redis-py (Debian's python3-redis; a plain loop, one
# call at a time, MULTI as a transactional pipeline), reporting requests/s, p50 and p99. Open loop:
# `kvlab load --rate R` at the given low rates (default 1k and 5k requests/s), p50 and p99 from
# the intended send time. The servers run side by side; each repetition measures every server
# once per (client, command, rate) in a rotated order, and the result is the median of the paired
# ratios kvlab/redis (requests/s and p50). --baseline adds a second kvlab-server binary with the
# default flags ('base-default'), for an A/B of a change. --busy N runs N CPU-bound processes at
# normal priority for the whole run (a machine shared with a build or other tests): the regime where
# a worker that yields its CPU to another runnable task loses a time slice per request.
# Output: experiments/results/one-client/TIMESTAMP/results.csv and summary.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export KVLAB_ROOT="$root"
exec /usr/bin/python3 - "$@" <<'PY'
import argparse, csv, datetime, os, statistics, subprocess, sys, time

root = os.environ["KVLAB_ROOT"]
sys.path.insert(0, os.path.join(root, "experiments"))
from common import REDIS_FLAGS, Server  # noqa: E402
ap = argparse.ArgumentParser(prog="experiments/commands/one_client.sh")
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--seconds", type=float, default=2.0, help="per closed-loop measurement")
ap.add_argument("--clients", default="rb,load,py")
ap.add_argument("--commands", default="set,get,incr,multi")
ap.add_argument("--rates", default="1k,5k", help="open-loop rates for kvlab load ('' for none)")
ap.add_argument("--quick", action="store_true", help="3 repetitions of 0.5 s")
ap.add_argument("--kvlab-server", default=f"{root}/build/server/kvlab-server")
ap.add_argument("--kvlab", default=f"{root}/build/tools/cli/kvlab")
ap.add_argument("--baseline", default=None)
ap.add_argument("--busy", type=int, default=0, help="CPU-bound processes running meanwhile")
args = ap.parse_args()
if args.quick:
    args.reps, args.seconds = 3, 0.5
clients = [c for c in args.clients.split(",") if c]
commands = [c for c in args.commands.split(",") if c]
rates = []
for r in (x.strip().lower() for x in args.rates.split(",") if x.strip()):
    rates.append(int(float(r[:-1]) * 1000) if r.endswith("k") else int(r))
if "py" in clients:
    try:
        import redis  # noqa: F401
    except ImportError:
        print("redis-py (python3-redis) is not installed: skipping the py client", file=sys.stderr)
        clients.remove("py")

KEYS = 1000
DATA = "x" * 256
LOAD = {"set": "SET __key__ __data__", "get": "GET __key__", "incr": "INCR __key__",
        "multi": "MULTI ; INCR __key__ ; INCR __key__ ; INCR __key__ ; EXEC"}
RB = {"set": ["SET", "key:__rand_int__", DATA], "get": ["GET", "key:__rand_int__"],
      "incr": ["INCR", "n:__rand_int__"]}  # counters apart from the 256-byte strings


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100.0 * len(s)))]


def run_py(port, cmd):
    import random
    import redis
    r = redis.Redis(port=port)
    r.ping()
    lat = []
    rnd = random.Random(1)
    t0 = time.perf_counter()
    deadline = t0 + args.seconds
    while time.perf_counter() < deadline and len(lat) < 5_000_000:
        k = "key:%d" % rnd.randrange(KEYS)
        a = time.perf_counter()
        if cmd == "set":
            r.set(k, DATA)
        elif cmd == "get":
            r.get(k)
        elif cmd == "incr":
            r.incr("n:" + k)
        else:
            p = r.pipeline(transaction=True)
            p.incr("n:" + k)
            p.incr("n:" + k)
            p.incr("n:" + k)
            p.execute()
        lat.append(time.perf_counter() - a)
    wall = time.perf_counter() - t0
    r.close()
    return len(lat) / wall, pct(lat, 50) * 1e3, pct(lat, 99) * 1e3


def run_rb(port, cmd):
    n = max(500, int(args.seconds * 8000))
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-c", "1", "-P", "1", "-n", str(n),
                          "-r", str(KEYS), "--csv", *RB[cmd]], capture_output=True, text=True,
                         check=True).stdout
    row = list(csv.DictReader(out.strip().splitlines()))[-1]
    return float(row["rps"]), float(row["p50_latency_ms"]), float(row["p99_latency_ms"])


def run_load(port, cmd, rate=None):
    argv = [args.kvlab, "load", "--port", str(port), "-t", "1", "-c", "1", "--pipeline", "1",
            "--keys", str(KEYS), "--data-size", "256", "--command", LOAD[cmd], "--duration",
            "%dms" % int(args.seconds * 1000), "--warmup", "100ms", "--format", "csv", "-q",
            "--key-prefix", "n:" if cmd in ("incr", "multi") else "key:"]
    if rate:
        argv += ["--rate", str(rate)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    row = list(csv.DictReader(out.strip().splitlines()[-2:]))[0]
    if int(row["errors"]) + int(row["error_replies"]) + int(row["timeouts"]):
        raise SystemExit(f"kvlab load saw errors on port {port}: {row}")
    return (float(row["achieved_rate"]), float(row["p50_us"]) / 1e3,
            float(row["p99_us"]) / 1e3)


stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
outdir = f"{root}/experiments/results/one-client/{stamp}"
os.makedirs(outdir, exist_ok=True)
servers = []
rows = []
busy = []
with open("/proc/loadavg") as f:
    load_before = f.read().split()[0]
try:
    for _ in range(args.busy):
        busy.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
    servers.append(Server("redis", ["redis-server", *REDIS_FLAGS]))
    servers.append(Server("kvlab-default", [args.kvlab_server]))
    servers.append(Server("kvlab-t1", [args.kvlab_server, "--threads", "1"]))
    servers.append(Server("kvlab-t2", [args.kvlab_server, "--threads", "2"]))
    if args.baseline:
        servers.append(Server("base-default", [args.baseline]))
    cases = [(c, cmd, None) for c in clients for cmd in commands if not (c == "rb" and cmd == "multi")]
    if "load" in clients:
        cases += [("load", cmd, r) for r in rates for cmd in commands]
    with open(f"{outdir}/results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rep", "client", "command", "rate", "server", "rps", "p50_ms", "p99_ms"])
        for rep in range(args.reps):
            for ci, (client, cmd, rate) in enumerate(cases):
                k = (rep + ci) % len(servers)
                for s in servers[k:] + servers[:k]:
                    s.cli("SET", "warm", "1")
                    if client == "py":
                        got = run_py(s.port, cmd)
                    elif client == "rb":
                        got = run_rb(s.port, cmd)
                    else:
                        got = run_load(s.port, cmd, rate)
                    rows.append((rep, client, cmd, rate, s.name, got))
                    w.writerow([rep, client, cmd, rate or "closed", s.name, "%.0f" % got[0],
                                "%.4f" % got[1], "%.4f" % got[2]])
                    f.flush()
            print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
finally:
    for s in servers:
        s.stop()
    for b in busy:
        b.kill()
        b.wait()
with open("/proc/loadavg") as f:
    load_after = f.read().split()[0]


def get(rep, client, cmd, rate, name):
    for r in rows:
        if r[:5] == (rep, client, cmd, rate, name):
            return r[5]


def med_ratio(client, cmd, rate, num, den, i):
    vals = []
    for rep in range(args.reps):
        a, b = get(rep, client, cmd, rate, num), get(rep, client, cmd, rate, den)
        if a and b and b[i] > 0:
            vals.append(a[i] / b[i])
    return statistics.median(vals) if vals else float("nan")


kv = [s.name for s in servers if s.name != "redis"]
lines = [f"# One sequential client ({stamp}; {args.reps} repetitions, median of paired ratios; "
         f"{args.busy} CPU-bound processes meanwhile; load average {load_before} before, "
         f"{load_after} after)", "",
         "Ratios to redis-server: requests/s (higher is better) and p50 (lower is better).", "",
         "| client | command | rate | " + " | ".join(f"{n} req/s | {n} p50" for n in kv) +
         " | redis req/s, p50, p99 (ms) |",
         "|---" * (3 + 2 * len(kv) + 1) + "|"]
for client, cmd, rate in cases:
    cells = []
    for n in kv:
        cells.append("%.2f" % med_ratio(client, cmd, rate, n, "redis", 0))
        cells.append("%.2f" % med_ratio(client, cmd, rate, n, "redis", 1))
    rs = [get(rep, client, cmd, rate, "redis") for rep in range(args.reps)]
    absr = "%.0f, %.3f, %.3f" % tuple(statistics.median(r[i] for r in rs) for i in range(3))
    lines.append(f"| {client} | {cmd.upper()} | {rate or 'closed'} | " + " | ".join(cells) +
                 f" | {absr} |")
with open(f"{outdir}/summary.md", "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
print(f"\nraw: {outdir}/results.csv", file=sys.stderr)
PY

#!/usr/bin/env bash
# Per-command efficiency against Redis (issue 21): requests/s and requests per server CPU-second of
# twelve commands on redis-server and on kvlab-server --threads 1 and --threads 2, driven by two
# closed-loop clients of different design (redis-benchmark, and `kvlab load` with memtier-style
# --command templates), at pipeline 30 and pipeline 1.
#
#   experiments/commands/run.sh [--quick] [--reps N] [--commands set,get,...] [--clients rb,load]
#                               [--pipelines 30,1] [--kvlab-threads 1,2] [--scale X]
#                               [--baseline BINARY [--baseline-threads N]] [--grown]
#
# Method: the three servers run side by side (idle ones sleep in epoll_wait); each measurement
# empties the server (FLUSHALL), prefills the keys GET and MGET read, waits until the server's CPU
# time stops moving (deferred frees of the flushed keyspace), snapshots the server's utime+stime
# (/proc/PID/stat), runs the client, and reads the CPU again. One repetition measures
# every server once per (command, client, pipeline), the servers in a rotated order, so a slow
# moment of this shared machine falls on every server in turn. The result is the median over the
# repetitions of the paired ratios kvlab/redis (and threads-2/threads-1), never a ratio of medians.
# Every client: one thread, 25 connections, random keys over 100,000, 256-byte values.
#
# --quick: 5 repetitions of about one second each, pipeline 30 only, --threads 1 only (about 4
# minutes). Default: 5 repetitions, pipelines 30 and 1, --threads 1 and 2.
# --grown: the grown-data regime (issue 40). Instead of one short run on an emptied server, each
# measurement empties the server, prefills 100,000 keys with 256-byte strings, and runs the command
# twice back to back on the same data, a fixed number of requests each (4,000,000 x --scale at
# pipeline 30, about 10 s at 400k requests/s; the same count on every server, so every server ends
# with the same data: an APPEND value grows to about 20 KB at --scale 1, a list to about 80
# elements). The string commands (SET, GET, MGET, SETNX, APPEND, MSET) act on the prefilled keys;
# INCR and the container commands use keys of their own ("incr:...", "lpush:..."), beside the
# prefilled strings, which they would otherwise meet as WRONGTYPE or "not an integer". results.csv
# gets the columns `run` (1 or 2) and `minflt` (the server's minor page faults in the run);
# summary.md gives the ratios of the second run, then of the first.
# Defaults with --grown: pipeline 30, --threads 1.
# Output: experiments/results/commands/TIMESTAMP/results.csv (every measurement) and summary.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export KVLAB_ROOT="$root"
exec /usr/bin/python3 - "$@" <<'PY'
import argparse, csv, datetime, os, re, statistics, subprocess, sys, time

root = os.environ["KVLAB_ROOT"]
sys.path.insert(0, os.path.join(root, "experiments"))
from common import CLOCK_TICKS, REDIS_FLAGS, Server, cpu_ticks, minor_faults  # noqa: E402
ap = argparse.ArgumentParser(prog="experiments/commands/run.sh")
ap.add_argument("--quick", action="store_true")
ap.add_argument("--grown", action="store_true",
                help="prefill, then each command twice back to back on the same data (issue 40)")
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--commands", default="set,get,mget,setnx,append,incr,lpush,rpush,sadd,hset,mset,ping")
ap.add_argument("--clients", default="rb,load")
ap.add_argument("--pipelines", default=None)
ap.add_argument("--kvlab-threads", default=None)
ap.add_argument("--scale", type=float, default=1.0, help="multiplies every request count / duration")
ap.add_argument("--kvlab-server", default=os.environ.get("KVLAB_SERVER", f"{root}/build/server/kvlab-server"))
ap.add_argument("--kvlab", default=f"{root}/build/tools/cli/kvlab")
ap.add_argument("--from", dest="from_csv", default=None,
                help="summarize an earlier results.csv instead of measuring")
ap.add_argument("--baseline", default=None,
                help="a second kvlab-server binary measured as 'base' for A/B ratios")
ap.add_argument("--baseline-threads", type=int, default=1,
                help="--threads of the baseline; it is compared with kvlab-server at the same count")
args = ap.parse_args()
short = args.quick or args.grown
pipelines = [int(p) for p in (args.pipelines or ("30" if short else "30,1")).split(",")]
kthreads = [int(t) for t in (args.kvlab_threads or ("1" if short else "1,2")).split(",")]
commands = args.commands.split(",")
clients = args.clients.split(",")

KEYS = 100000
DATA = "x" * 256
# (redis-benchmark arguments, kvlab load template); the same command shape for both clients:
# redis-benchmark draws every __rand_int__ separately, and so does kvlab load for __rand_key__
# (a key) and __rand_int__ (a member or field); __key__ is one key per request, as in memtier.
R = "__rand_int__"
TEMPLATES = {
    "set": (["SET", f"key:{R}", DATA], "SET __key__ __data__"),
    "get": (["GET", f"key:{R}"], "GET __key__"),
    "mget": (["MGET"] + [f"key:{R}"] * 4, "MGET __rand_key__ __rand_key__ __rand_key__ __rand_key__"),
    "setnx": (["SETNX", f"key:{R}", DATA], "SETNX __key__ __data__"),
    "append": (["APPEND", f"key:{R}", DATA], "APPEND __key__ __data__"),
    "incr": (["INCR", f"key:{R}"], "INCR __key__"),
    "lpush": (["LPUSH", f"key:{R}", DATA], "LPUSH __key__ __data__"),
    "rpush": (["RPUSH", f"key:{R}", DATA], "RPUSH __key__ __data__"),
    "sadd": (["SADD", f"key:{R}", f"m:{R}"], "SADD __key__ __rand_int__"),
    "hset": (["HSET", f"key:{R}", f"f:{R}", DATA], "HSET __key__ __rand_int__ __data__"),
    "mset": (["MSET", f"key:{R}", DATA, f"key:{R}", DATA], "MSET __rand_key__ __data__ __rand_key__ __data__"),
    "ping": (["PING"], "PING"),
}
PREFILL = {"get", "mget"}
# --grown: commands that would meet the prefilled strings as the wrong type or as non-integers get
# keys of their own (the prefix replaces "key:").
OWN_KEYS = {"incr", "lpush", "rpush", "sadd", "hset"}


def grown_templates(cmd):
    """(redis-benchmark arguments, kvlab load template, kvlab load --key-prefix) for --grown."""
    rb_args, template = TEMPLATES[cmd]
    if cmd not in OWN_KEYS:
        return rb_args, template, "key:"
    return [a.replace("key:", f"{cmd}:") for a in rb_args], template, f"{cmd}:"


def rb_requests(pipeline):
    base = 400000 if pipeline >= 30 else 60000
    return max(1000, int(base * args.scale * (1 if args.quick else 2)))


def load_seconds():
    return max(0.3, args.scale * (1.0 if args.quick else 2.0))


def prefill(server, client):
    if client == "rb":
        subprocess.run(["redis-benchmark", "-p", str(server.port), "-c", "25", "-P", "30", "-n",
                        str(3 * KEYS), "-r", str(KEYS), "-q", "SET", f"key:{R}", DATA],
                       capture_output=True, check=True)
    else:
        subprocess.run([args.kvlab, "load", "--port", str(server.port), "-c", "25", "--pipeline",
                        "30", "--keys", str(KEYS), "--data-size", "256", "--prefill", "--requests",
                        "1", "-q"], capture_output=True, check=True)


def grown_requests(pipeline):
    return max(1000, int((4000000 if pipeline >= 30 else 400000) * args.scale))


def run_fixed(server, cmd, client, pipeline, n):
    """One client run of exactly n requests (--grown), with the server's CPU time around it."""
    rb_args, template, prefix = grown_templates(cmd)
    faults = minor_faults(server.proc.pid)
    before = cpu_ticks(server.proc.pid)
    t0 = time.monotonic()
    if client == "rb":
        out = subprocess.run(["redis-benchmark", "-p", str(server.port), "-c", "25", "-P",
                              str(pipeline), "-n", str(n), "-r", str(KEYS), "-q", *rb_args],
                             capture_output=True, text=True, check=True).stdout
        last = out.replace("\r", "\n").strip().splitlines()[-1]
        m = re.search(r"([0-9.]+) requests per second", last)
        if not m:
            raise SystemExit(f"cannot parse redis-benchmark output: {last!r}")
        rps, requests = float(m.group(1)), n
    else:
        out = subprocess.run([args.kvlab, "load", "--port", str(server.port), "-t", "1", "-c",
                              "25", "--pipeline", str(pipeline), "--requests", str(n),
                              "--keys", str(KEYS), "--key-prefix", prefix, "--data-size", "256",
                              "--command", template, "--format", "csv", "-q"],
                             capture_output=True, text=True, check=True).stdout
        rows = list(csv.DictReader(out.strip().splitlines()[-2:]))
        rps, requests = float(rows[0]["served_rate"]), int(rows[0]["requests"])
        bad = int(rows[0]["errors"]) + int(rows[0]["error_replies"]) + int(rows[0]["timeouts"])
        if bad:
            print(f"warning: {server.name} {cmd} P{pipeline}: {bad} errors/timeouts", file=sys.stderr)
    wall = time.monotonic() - t0
    cpu = (cpu_ticks(server.proc.pid) - before) / CLOCK_TICKS
    return {"rps": rps, "requests": requests, "cpu_s": cpu, "wall_s": wall,
            "per_cpu_s": requests / cpu if cpu > 0 else float("nan"),
            "minflt": minor_faults(server.proc.pid) - faults}


def measure_grown(server, cmd, client, pipeline):
    """--grown: empty, prefill 100,000 strings, then two runs back to back; returns both."""
    server.cli("FLUSHALL")
    server.settle()
    prefill(server, client)
    server.settle()
    n = grown_requests(pipeline)
    return [run_fixed(server, cmd, client, pipeline, n) for _ in range(2)]


def measure(server, cmd, client, pipeline):
    server.cli("FLUSHALL")
    if cmd in PREFILL:
        prefill(server, client)
    server.settle()
    rb_args, template = TEMPLATES[cmd]
    before = cpu_ticks(server.proc.pid)
    t0 = time.monotonic()
    if client == "rb":
        n = rb_requests(pipeline)
        out = subprocess.run(["redis-benchmark", "-p", str(server.port), "-c", "25", "-P",
                              str(pipeline), "-n", str(n), "-r", str(KEYS), "-q", *rb_args],
                             capture_output=True, text=True, check=True).stdout
        last = out.replace("\r", "\n").strip().splitlines()[-1]
        m = re.search(r"([0-9.]+) requests per second", last)
        if not m:
            raise SystemExit(f"cannot parse redis-benchmark output: {last!r}")
        rps, requests = float(m.group(1)), n
    else:
        out = subprocess.run([args.kvlab, "load", "--port", str(server.port), "-t", "1", "-c",
                              "25", "--pipeline", str(pipeline), "--duration",
                              f"{int(load_seconds() * 1000)}ms", "--keys", str(KEYS),
                              "--data-size", "256", "--command", template, "--format", "csv",
                              "-q"], capture_output=True, text=True, check=True).stdout
        rows = list(csv.DictReader(out.strip().splitlines()[-2:]))
        rps, requests = float(rows[0]["served_rate"]), int(rows[0]["requests"])
        bad = int(rows[0]["errors"]) + int(rows[0]["error_replies"]) + int(rows[0]["timeouts"])
        if bad:  # kept, and flagged: a loaded machine can time out a request in the drain
            print(f"warning: {server.name} {cmd} P{pipeline}: {bad} errors/timeouts", file=sys.stderr)
    wall = time.monotonic() - t0
    cpu = (cpu_ticks(server.proc.pid) - before) / CLOCK_TICKS
    return {"rps": rps, "requests": requests, "cpu_s": cpu, "wall_s": wall,
            "per_cpu_s": requests / cpu if cpu > 0 else float("nan")}


class Named:
    def __init__(self, name):
        self.name = name


def load_rows(path):
    """The rows of an earlier results.csv, by run (1 and 2 for --grown, else 1 only)."""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            cpu = float(r["cpu_s"])
            out.setdefault(int(r.get("run") or 1), []).append(
                (int(r["rep"]), r["command"], r["client"], int(r["pipeline"]), r["server"],
                 {"rps": float(r["rps"]), "requests": int(r["requests"]), "cpu_s": cpu,
                  "per_cpu_s": int(r["requests"]) / cpu if cpu > 0 else float("nan"),
                  "minflt": int(r["minflt"]) if r.get("minflt") else None}))
    return out


stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
outdir = f"{root}/experiments/results/commands/{stamp}"
servers = []
runs = {}  # run number -> rows; fresh mode has run 1 only
if args.from_csv:
    runs = load_rows(args.from_csv)
    args.grown = 2 in runs
    rows = runs[max(runs)]
    outdir = os.path.dirname(os.path.abspath(args.from_csv))
    names = list(dict.fromkeys(r[4] for r in rows))
    servers = [Named(n) for n in names]
    commands = list(dict.fromkeys(r[1] for r in rows))
    clients = list(dict.fromkeys(r[2] for r in rows))
    pipelines = list(dict.fromkeys(r[3] for r in rows))
    kthreads = sorted(int(n[len("kvlab-t"):]) for n in names if n.startswith("kvlab-t"))
    args.reps = max(r[0] for r in rows) + 1
    base_names = [n for n in names if n.startswith("base-t")]
    args.baseline = args.baseline or bool(base_names)
    if base_names:
        args.baseline_threads = int(base_names[0][len("base-t"):])
os.makedirs(outdir, exist_ok=True)
try:
  if not args.from_csv:
      servers.append(Server("redis", ["redis-server", *REDIS_FLAGS]))
      for t in kthreads:
          servers.append(Server(f"kvlab-t{t}", [args.kvlab_server, "--threads", str(t)]))
      if args.baseline:
          bt = args.baseline_threads
          servers.append(Server(f"base-t{bt}", [args.baseline, "--threads", str(bt)]))
      runs = {1: [], 2: []} if args.grown else {1: []}
      with open(f"{outdir}/results.csv", "w", newline="") as f:
          w = csv.writer(f)
          w.writerow(["rep", "command", "client", "pipeline", "server", "rps", "requests", "cpu_s",
                      "requests_per_cpu_s"] + (["run", "minflt"] if args.grown else []))
          for rep in range(args.reps):
              for ci, cmd in enumerate(commands):
                  for client in clients:
                      for pipeline in pipelines:
                          k = (rep + ci) % len(servers)
                          for s in servers[k:] + servers[:k]:  # rotated order
                              if args.grown:
                                  results = measure_grown(s, cmd, client, pipeline)
                              else:
                                  results = [measure(s, cmd, client, pipeline)]
                              for run, r in enumerate(results, 1):
                                  runs[run].append((rep, cmd, client, pipeline, s.name, r))
                                  w.writerow([rep, cmd, client, pipeline, s.name,
                                              f"{r['rps']:.0f}", r["requests"],
                                              f"{r['cpu_s']:.2f}", f"{r['per_cpu_s']:.0f}"]
                                             + ([run, r["minflt"]] if args.grown else []))
                              f.flush()
              print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
finally:
    for s in servers:
        if isinstance(s, Server):
            s.stop()

# Paired ratios per repetition, then medians.
def get(rep, cmd, client, pipeline, name):
    for r in rows:
        if r[:5] == (rep, cmd, client, pipeline, name):
            return r[5]
    return None


def med_ratio(cmd, client, pipeline, num, den, key):
    vals = []
    for rep in range(args.reps):
        a, b = get(rep, cmd, client, pipeline, num), get(rep, cmd, client, pipeline, den)
        if a and b and b[key] > 0:
            vals.append(a[key] / b[key])
    return statistics.median(vals) if vals else float("nan")


def geomean(xs):
    xs = [x for x in xs if x == x and x > 0]
    return statistics.geometric_mean(xs) if xs else float("nan")


def summarize(heading):
    """The ratio table and the absolute medians of `rows` (one run of each measurement)."""
    lines = [f"# {heading}", ""]
    cols = []
    for client in clients:
        for pipeline in pipelines:
            for t in kthreads:
                cols.append((client, pipeline, f"kvlab-t{t}", "redis", "per_cpu_s", f"{client} P{pipeline} t{t}/redis req/CPU-s"))
                cols.append((client, pipeline, f"kvlab-t{t}", "redis", "rps", f"{client} P{pipeline} t{t}/redis req/s"))
            if len(kthreads) > 1:
                cols.append((client, pipeline, f"kvlab-t{kthreads[1]}", f"kvlab-t{kthreads[0]}", "rps", f"{client} P{pipeline} t{kthreads[1]}/t{kthreads[0]} req/s"))
            if args.baseline:
                bt = args.baseline_threads
                cols.append((client, pipeline, f"kvlab-t{bt}", f"base-t{bt}", "per_cpu_s", f"{client} P{pipeline} new/base t{bt} req/CPU-s"))
                cols.append((client, pipeline, f"kvlab-t{bt}", f"base-t{bt}", "rps", f"{client} P{pipeline} new/base t{bt} req/s"))
    lines.append("| command | " + " | ".join(c[5] for c in cols) + " |")
    lines.append("|---" * (len(cols) + 1) + "|")
    table = {c: [] for c in range(len(cols))}
    for cmd in commands:
        cells = []
        for i, (client, pipeline, num, den, key, _) in enumerate(cols):
            v = med_ratio(cmd, client, pipeline, num, den, key)
            table[i].append(v)
            cells.append(f"{v:.2f}")
        lines.append(f"| {cmd.upper()} | " + " | ".join(cells) + " |")
    lines.append("| geomean | " + " | ".join(f"{geomean(table[i]):.2f}" for i in range(len(cols))) + " |")
    lines.append("")
    faults = args.grown and all(r[5].get("minflt") is not None for r in rows)
    lines.append("Absolute medians (requests/s; requests per server CPU-second"
                 + ("; the server's minor page faults per request):" if faults else "):"))
    lines.append("")
    for client in clients:
        for pipeline in pipelines:
            for cmd in commands:
                parts = []
                for s in servers:
                    rs = [get(rep, cmd, client, pipeline, s.name) for rep in range(args.reps)]
                    rs = [r for r in rs if r]
                    parts.append(f"{s.name} {statistics.median(r['rps'] for r in rs):.0f} / "
                                 f"{statistics.median(r['per_cpu_s'] for r in rs):.0f}"
                                 + (" / %.3f" % statistics.median(r["minflt"] / r["requests"]
                                                                  for r in rs) if faults else ""))
                lines.append(f"- {client} P{pipeline} {cmd.upper()}: " + "; ".join(parts))
    return lines


title = (f"kvlab-server vs redis-server per command ({stamp}; {args.reps} repetitions, "
         f"median of paired ratios)")
if args.grown:
    lines = []
    for run in (2, 1):
        rows = runs[run]
        lines += summarize(f"{title}, grown data, run {run} of 2") + [""]
else:
    rows = runs[1]
    lines = summarize(title)
with open(f"{outdir}/summary.md", "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
print(f"\nraw: {outdir}/results.csv", file=sys.stderr)
PY

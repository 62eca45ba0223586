#!/usr/bin/env bash
# APPEND's server CPU per operation as the value grows from 256 B to 1 MB (issue 40: "flat within
# 20 %"), kvlab-server `--threads 1` against redis-server, side by side.
#
#   experiments/commands/append_sizes.sh [--reps N] [--keys K] [--max-size 1m] [--baseline BINARY]
#
# Every server is flushed and filled with K keys (default 1,024) of 256 bytes; then values grow by
# doubling windows: in the window that starts at size S, `kvlab load` sends K * S / 256 APPENDs of
# 256 bytes over the keys in sequence (one connection, pipeline 30), so that every value grows
# from S to 2 S; the last window ends at --max-size. The key count stays the same in every window,
# so only the value size changes. The server's CPU time in the window (the sum of its threads'
# run time from /proc/PID/task/*/schedstat, in ns, so that the small windows are measurable),
# less the server's idle CPU rate (measured over 2 s before the windows: timers, cron) times the
# window's wall time, divided by the APPENDs, is the cost per operation at size S, reallocations
# included. Each
# repetition runs every server once, in rotated order; the result is the median over repetitions
# per window and, per server, the ratio of the largest to the smallest of those medians (1.20 =
# "flat within 20 %").
# The floor: an APPEND adds 256 bytes that no server has touched before, and the first touch of a
# page costs the kernel (and a hypervisor, in a VM) far more than writing to it again. The script
# measures that cost on the machine (a 256 MiB anonymous mapping touched page by page, less a
# second pass over the same pages; median of 3); 256 / 4096 of it is what no server can save per
# APPEND once the values outgrow the memory it freed before. The smallest window (1,024
# APPENDs, about a millisecond) is below the method's resolution and is left out of the ratios.
# In the small windows freed blocks are reused and no page is new, so the floor applies to the
# rise, not to the cost: a server whose last window costs its first plus the floor grows in
# place and touches each page once.
# Output: experiments/results/append-sizes/TIMESTAMP/results.csv and summary.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export KVLAB_ROOT="$root"
exec /usr/bin/python3 - "$@" <<'PY'
import argparse, csv, datetime, mmap, os, statistics, subprocess, sys, time

root = os.environ["KVLAB_ROOT"]
sys.path.insert(0, os.path.join(root, "experiments"))
from common import REDIS_FLAGS, Server, sched_cpu_seconds  # noqa: E402
ap = argparse.ArgumentParser(prog="experiments/commands/append_sizes.sh")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--keys", type=int, default=1024)
ap.add_argument("--max-size", default="1m", help="the size the last window ends at")
ap.add_argument("--kvlab-server", default=f"{root}/build/server/kvlab-server")
ap.add_argument("--kvlab", default=f"{root}/build/tools/cli/kvlab")
ap.add_argument("--baseline", default=None, help="a second kvlab-server binary ('base')")
args = ap.parse_args()


def size_of(text):
    t = text.strip().lower()
    mult = {"k": 1024, "m": 1024 * 1024}.get(t[-1:], 1)
    return int(t[:-1] if t[-1:] in "km" else t) * mult


sizes = []
s = 256
while s * 2 <= size_of(args.max_size):
    sizes.append(s)
    s *= 2


def first_touch_us():
    """The cost of touching a fresh anonymous page, in µs: median of 3 passes over 256 MiB, each
    less a second pass over the same (now present) pages, which is the loop's own cost."""
    n, page, runs = 256 << 20, mmap.PAGESIZE, []
    for _ in range(3):
        m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        t0 = time.perf_counter()
        for i in range(0, n, page):
            m[i] = 1
        t1 = time.perf_counter()
        for i in range(0, n, page):
            m[i] = 2
        t2 = time.perf_counter()
        m.close()
        runs.append(((t1 - t0) - (t2 - t1)) / (n // page) * 1e6 * 4096 / page)
    return statistics.median(runs)


# settle() on the clock the windows are read with (schedstat), so that "stopped moving" holds at
# the resolution the measurement sees.
SETTLE = {"read": sched_cpu_seconds, "interval": 0.2, "timeout": 10}


def load(server, *extra):
    subprocess.run([args.kvlab, "load", "--port", str(server.port), "-t", "1", "-c", "1",
                    "--pipeline", "30", "-q", *extra], capture_output=True, check=True)


servers = []
try:
    servers.append(Server("redis", ["redis-server", *REDIS_FLAGS]))
    servers.append(Server("kvlab-t1", [args.kvlab_server, "--threads", "1"]))
    if args.baseline:
        servers.append(Server("base-t1", [args.baseline, "--threads", "1"]))
    stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    out_dir = os.path.join(root, "experiments", "results", "append-sizes", stamp)
    os.makedirs(out_dir, exist_ok=True)
    load_before = os.getloadavg()[0]
    page_us = first_touch_us()
    floor = page_us * 256 / 4096
    rows = []
    keys = args.keys
    for rep in range(args.reps):
        order = servers[rep % len(servers):] + servers[:rep % len(servers)]
        for srv in order:
            srv.cli("FLUSHALL")
            srv.settle(**SETTLE)
            load(srv, "--keys", str(keys), "--data-size", "256", "--prefill", "--requests", "1")
            srv.settle(**SETTLE)
            idle0, t0 = sched_cpu_seconds(srv.proc.pid), time.monotonic()
            time.sleep(2)
            idle_rate = (sched_cpu_seconds(srv.proc.pid) - idle0) / (time.monotonic() - t0)
            for size in sizes:
                appends = keys * size // 256
                before, t0 = sched_cpu_seconds(srv.proc.pid), time.monotonic()
                load(srv, "--keys", str(keys), "--key-pattern", "sequential", "--data-size", "256",
                     "--requests", str(appends), "--command", "APPEND __key__ __data__")
                cpu = sched_cpu_seconds(srv.proc.pid) - before - idle_rate * (time.monotonic() - t0)
                rows.append({"rep": rep, "size": size, "keys": keys, "appends": appends,
                             "server": srv.name, "cpu_s": round(cpu, 6),
                             "us_per_append": round(cpu / appends * 1e6, 4)})
                print(f"rep {rep} size {size} {srv.name}: {rows[-1]['us_per_append']} us/APPEND",
                      flush=True)
            srv.cli("FLUSHALL")
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    lines = [f"# APPEND's server CPU per operation by value size ({stamp}; {args.reps} repetitions, "
             f"medians; {args.keys} keys, values growing from each size to twice it; load average "
             f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after)", "",
             f"First touch of a fresh 4 KiB page on this machine: {page_us:.2f} µs, so the floor "
             f"of an APPEND of 256 new bytes is {floor:.3f} µs.", "",
             "| size | keys | APPENDs | " + " | ".join(f"{s.name} µs/APPEND" for s in servers)
             + " |", "|---|---|---|" + "---|" * len(servers)]
    med = {}
    for size in sizes:
        cells = []
        for srv in servers:
            v = [r["us_per_append"] for r in rows if r["size"] == size and r["server"] == srv.name]
            med[(size, srv.name)] = statistics.median(v)
            cells.append(f"{med[(size, srv.name)]:.3f}")
        r0 = next(r for r in rows if r["size"] == size)
        lines.append(f"| {size} | {r0['keys']} | {r0['appends']} | " + " | ".join(cells) + " |")
    lines.append("")
    measured = [s for s in sizes if s > 256] or sizes  # the 256 window: see the header
    for srv in servers:
        vals = [med[(s, srv.name)] for s in measured]
        lines.append(f"- {srv.name}: largest / smallest median {max(vals) / min(vals):.2f} "
                     f"(from {measured[0]} B); the last window costs "
                     f"{vals[-1] - vals[0]:+.3f} µs against the first, the floor being "
                     f"{floor:.3f} µs")
    open(os.path.join(out_dir, "summary.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nraw: {out_dir}/results.csv")
finally:
    for s in servers:
        s.stop(timeout=20)
PY

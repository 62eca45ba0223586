#!/usr/bin/env python3
"""Paired A/B of two kvlab-server binaries on pipelined SETs (or GETs) of a given value size.

  experiments/audit/set_ab.py NEW OLD [--reps 15] [--threads 2] [--sizes 1024,600]
                              [--test set|get] [--server-args "--cluster-mode emulated"]

For the shared-mode audit (papers/execution-models-plan.md §5): a change that removes a store to
a line every worker writes shows only with two or more workers, and only on the path it is on
(row 11, the pool's large-block count: values above 512 bytes). Each repetition starts each
binary afresh on a free port (`--threads T`), runs redis-benchmark SET (-P 30 -c 25, 1,500,000
requests, keys over 100,000) and reads the server's CPU time from its threads' schedstat; the
order alternates per repetition. --test get fills the 100,000 keys first (unmeasured), then
measures GET; --server-args adds flags to both servers (row 8, the cluster configuration, is on
the path of keyed commands only in cluster mode). Output: the median and every paired ratio NEW/OLD per server
CPU-second and per requests/s, on stdout and in experiments/results/audit-set-ab/TIMESTAMP/.
"""
import argparse, csv, datetime, os, statistics, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import Server, sched_cpu_seconds  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("new")
ap.add_argument("old")
ap.add_argument("--reps", type=int, default=15)
ap.add_argument("--threads", default="2")
ap.add_argument("--sizes", default="1024,600")
ap.add_argument("--test", choices=["set", "get"], default="set")
ap.add_argument("--server-args", default="")
args = ap.parse_args()
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REQUESTS = 1500000


stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
out_dir = os.path.join(root, "experiments", "results", "audit-set-ab", stamp)
os.makedirs(out_dir, exist_ok=True)
rows, lines = [], [f"# {args.test.upper()} A/B {stamp}: new={args.new} old={args.old}, "
                   f"--threads {args.threads} {args.server_args}, "
                   f"{args.reps} reps, load average {os.getloadavg()[0]:.2f} before"]
for size in [int(s) for s in args.sizes.split(",")]:
    for rep in range(args.reps):
        pair = [("new", args.new), ("old", args.old)]
        for name, binary in (pair if rep % 2 == 0 else pair[::-1]):
            server = Server(binary, [binary, "--bind", "127.0.0.1", "--threads", args.threads]
                            + args.server_args.split())
            try:
                bench = ["redis-benchmark", "-p", str(server.port), "-d", str(size), "-P", "30",
                         "-c", "25", "-r", "100000", "-q"]
                if args.test == "get":  # every key present, so that GETs find values
                    subprocess.run(bench + ["-t", "set", "-n", "400000"], capture_output=True,
                                   check=True)
                c0 = sched_cpu_seconds(server.pid)
                out = subprocess.run(bench + ["-t", args.test, "-n", str(REQUESTS)],
                                     capture_output=True, text=True, check=True).stdout
                cpu = sched_cpu_seconds(server.pid) - c0
            finally:
                server.stop(timeout=20)
            rps = float(out.strip().split(args.test.upper() + ": ")[-1].split(" requests")[0])
            rows.append({"size": size, "rep": rep, "server": name, "cpu_s": round(cpu, 4),
                         "per_cpu_s": round(REQUESTS / cpu), "rps": rps})
    new = [r for r in rows if r["size"] == size and r["server"] == "new"]
    old = [r for r in rows if r["size"] == size and r["server"] == "old"]
    cpu_r = [a["per_cpu_s"] / b["per_cpu_s"] for a, b in zip(new, old)]
    rps_r = [a["rps"] / b["rps"] for a, b in zip(new, old)]
    lines.append(f"- {args.test.upper()} -d {size}: new/old per CPU-second median {statistics.median(cpu_r):.3f} "
                 f"({sum(r > 1 for r in cpu_r)} of {len(cpu_r)} above 1; "
                 f"{', '.join(f'{r:.2f}' for r in cpu_r)}), requests/s median "
                 f"{statistics.median(rps_r):.3f}")
    print(lines[-1], flush=True)
lines.append(f"- load average after: {os.getloadavg()[0]:.2f}")
with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
open(os.path.join(out_dir, "summary.md"), "w").write("\n".join(lines) + "\n")
print(f"raw: {out_dir}")

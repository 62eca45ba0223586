#!/usr/bin/env python3
"""Table of a server-vs-redis run (results.csv): per pipeline depth and test, each server's median
requests/s and requests per server CPU-second, and its ratios against redis-server.

The ratios are paired: within one run the three servers are measured back to back (seconds
apart), so each run gives one ratio per server, and the table shows the median of those per-run
ratios with their range. On a shared host whose speed drifts over minutes, that is steadier than
a ratio of medians. The last column pairs kvlab --threads 2 with kvlab --threads 1 the same way
(issue 5's oversubscription target)."""
import csv
import statistics
import sys
from collections import defaultdict


def fmt(ratios):
    if not ratios:
        return "–"
    return f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f})"


def main(path):
    rows = defaultdict(dict)  # (pipeline, test, run) -> server -> (rps, req_per_cpu_s)
    for r in csv.DictReader(open(path)):
        rows[(int(r["pipeline"]), r["test"], int(r["run"]))][r["server"]] = (
            float(r["rps"]), float(r["req_per_cpu_s"]))
    print("| pipeline | test | server | requests/s (median) | vs redis, paired | "
          "requests per server CPU-s | vs redis, paired | vs kvlab --threads 1, paired |")
    print("|---|---|---|---:|---|---:|---|---|")
    for pipeline in (30, 1):
        for test in ("set", "get"):
            runs = [v for (p, t, _), v in sorted(rows.items()) if p == pipeline and t == test]
            for server in ("redis", "kvlab-1", "kvlab-2"):
                have = [v for v in runs if server in v]
                if not have:
                    continue
                rps = statistics.median(v[server][0] for v in have)
                cps = statistics.median(v[server][1] for v in have)
                if server == "redis":
                    vs_rps = vs_cpu = "1.00×"
                else:
                    vs_rps = fmt([v[server][0] / v["redis"][0] for v in have
                                  if v.get("redis", (0,))[0] > 0])
                    vs_cpu = fmt([v[server][1] / v["redis"][1] for v in have
                                  if v.get("redis", (0, 0))[1] > 0])
                vs_one = "–"
                if server == "kvlab-2":
                    vs_one = fmt([v[server][0] / v["kvlab-1"][0] for v in have
                                  if v.get("kvlab-1", (0,))[0] > 0])
                print(f"| {pipeline} | {test.upper()} | {server} | {rps:.0f} | {vs_rps} | "
                      f"{cps:.0f} | {vs_cpu} | {vs_one} |")


if __name__ == "__main__":
    main(sys.argv[1])

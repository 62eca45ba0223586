#!/usr/bin/env python3
"""Medians (and ranges) per server and victim of a stalls results.csv: the victim's time inside
the server, and the longest SET another client waited meanwhile.

  summary.py RESULTS.csv
"""
import csv
import statistics
import sys
from collections import defaultdict


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    by = defaultdict(list)
    order = []
    for r in rows:
        key = (r["victim"], r["server"])
        if key not in by:
            order.append(key)
        by[key].append(r)
    victims = []
    for v, _ in order:
        if v not in victims:
            victims.append(v)

    def cell(rs, field):
        xs = [float(r[field]) for r in rs]
        return "%.0f (%.0f-%.0f)" % (statistics.median(xs), min(xs), max(xs))

    print("| victim | server | in server, ms | longest SET meanwhile, ms | quiet longest SET, ms |")
    print("|---|---|---|---|---|")
    for v in victims:
        for s in ("kvlab", "redis"):
            rs = by.get((v, s))
            if not rs:
                continue
            inside = cell(rs, "server_ms")
            if v.startswith("SCAN"):
                inside += " in %d calls" % round(float(rs[0]["server_ms"]) /
                                                 max(float(rs[0]["server_ms_per_call"]), 1e-9))
            print("| %s | %s | %s | %s | %s |" % (v, s, inside, cell(rs, "stall_ms"),
                                                  cell(rs, "quiet_max_ms")))
    print("\n%d rows, %d rounds per server" % (len(rows), len(by[order[0]])))


if __name__ == "__main__":
    main()

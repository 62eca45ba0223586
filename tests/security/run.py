#!/usr/bin/env python3
"""Runs tests/security: every case of the given areas (cases_<area>.py) against one kvlab-server
(and a redis-server 7.0 oracle when installed), checking after each that the server still answers.

  run.py KVLAB_SERVER AREA [AREA …] [--case NAME] [--timeout S]
  run.py --check-readme           every case appears in README.md's table, and nothing else
"""
import argparse
import importlib
import os
import re
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import seccommon  # noqa: E402


def areas_on_disk():
    return sorted(f[len("cases_"):-3] for f in os.listdir(HERE)
                  if f.startswith("cases_") and f.endswith(".py"))


def cases_of(area):
    mod = importlib.import_module("cases_" + area)
    return [(n, f) for n, f in sorted(vars(mod).items())
            if n.startswith("case_") and callable(f)]


def check_readme():
    text = open(os.path.join(HERE, "README.md")).read()
    listed = set(re.findall(r"`(case_[a-z0-9_]+)`", text))
    defined = {n for a in areas_on_disk() for n, _ in cases_of(a)}
    missing, stale = defined - listed, listed - defined
    for n in sorted(missing):
        print("FAIL %s is not in README.md's table" % n)
    for n in sorted(stale):
        print("FAIL README.md lists %s, which no cases_*.py defines" % n)
    if missing or stale:
        return 1
    print("ok   README.md lists all %d cases" % len(defined))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server", nargs="?")
    ap.add_argument("areas", nargs="*")
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--check-readme", action="store_true")
    args = ap.parse_args()
    if args.check_readme:
        return check_readme()
    areas = args.areas or areas_on_disk()
    failed, ran = [], 0
    kv = seccommon.start_kvlab(args.server)
    redis = seccommon.start_redis()
    try:
        for area in areas:
            for name, fn in cases_of(area):
                if args.case and name not in args.case:
                    continue
                ran += 1
                t0 = time.time()
                ctx = seccommon.Context(kv, redis, args.timeout)
                what = "%s (%s)" % (name, getattr(fn, "advisory", "?"))
                try:
                    fn(ctx)
                    err = None
                except seccommon.CaseFailed as e:
                    err = str(e)
                except Exception as e:  # a dead or frozen server shows up as a socket error
                    err = "%s: %s" % (type(e).__name__, e)
                    traceback.print_exc()
                finally:
                    try:
                        ctx.close()
                    except OSError:
                        pass
                if err is None and not kv.alive():
                    err = "kvlab-server no longer answers PING"
                print(("ok   " if err is None else "FAIL ") + what +
                      " %.2f s" % (time.time() - t0) + ("" if err is None else ": " + err),
                      flush=True)
                if err is not None:
                    failed.append(name)
                    if not kv.alive():  # start again so the other cases still run
                        kv.stop()
                        kv = seccommon.start_kvlab(args.server)
    finally:
        kv.stop()
        if redis:
            redis.stop()
    if failed:
        print("%d of %d case(s) failed: %s" % (len(failed), ran, " ".join(failed)))
        return 1
    print("all %d cases passed" % ran)
    return 0


if __name__ == "__main__":
    sys.exit(main())

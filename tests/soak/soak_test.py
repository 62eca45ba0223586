#!/usr/bin/python3
# Soak: mixed load on a real kvlab-server for --seconds per backend, over the default backend and
# two others. The load, all at once:
#   - `kvlab load`, pipelined (4 connections, window 16, 6,000 requests/s open loop) and
#     unpipelined (4 connections, 1,500 requests/s): every value type (strings, counters, lists,
#     hashes, sets, sorted sets, streams, HyperLogLogs), reads and writes, TTLs (SET EX, EXPIRE NX
#     on every container, so the data set reaches a steady state), deletions;
#   - `kvlab load --pubsub`: 2 publishers, 8 subscribers on 4 channels, 500 messages/s;
#   - churning clients (this script): connect, send 1 to 10 commands pipelined or one by one,
#     check every reply, disconnect; about 30 connections a second.
# Checks, per backend:
#   - no error reply anywhere (kvlab load's error_replies and timeouts, the churners' replies,
#     INFO total_error_replies);
#   - RSS flat after warm-up (the first third): the least-squares slope over the rest, projected
#     over that window, at most max(16 MiB, 25 % of the RSS at the end of warm-up);
#   - reclamation lag bounded: INFO kvlab_epoch_retired_unfreed at most 1,000,000 objects at every
#     sample, and back under 1,000 one second after the load stops (idle workers are offline);
#   - latency percentiles per interval (5 s, or 60 s for runs of 5 minutes and more) in the report.
# Usage: soak_test.py KVLAB_SERVER KVLAB_CLI [--seconds S] [--backends a,b,c] [--report FILE]
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soakcommon import Checks, Client, Error, Server, info, percentile, slope  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("server")
ap.add_argument("cli")
ap.add_argument("--seconds", type=int, default=20)
ap.add_argument("--backends", default="hash/kvlab,skiplist/kvlab,hash/cds-splitlist")
ap.add_argument("--report", default="")
args = ap.parse_args()

KEYS = 2000
TEMPLATES = [
    "SET s:__rand_int__ __data__ EX 3", "GET s:__rand_int__", "DEL s:__rand_int__",
    "INCR n:__rand_int__", "EXPIRE n:__rand_int__ 5 NX",
    "LPUSH l:__rand_int__ __data__", "RPOP l:__rand_int__", "LRANGE l:__rand_int__ 0 9",
    "EXPIRE l:__rand_int__ 5 NX",
    "HSET h:__rand_int__ f__rand_int__ __data__", "HGET h:__rand_int__ f__rand_int__",
    "EXPIRE h:__rand_int__ 5 NX",
    "SADD t:__rand_int__ __rand_int__", "SISMEMBER t:__rand_int__ __rand_int__",
    "EXPIRE t:__rand_int__ 5 NX",
    "ZADD z:__rand_int__ __rand_int__ m__rand_int__", "ZRANGE z:__rand_int__ 0 4 WITHSCORES",
    "EXPIRE z:__rand_int__ 5 NX",
    "XADD x:__rand_int__ MAXLEN ~ 50 * f __data__", "XLEN x:__rand_int__",
    "EXPIRE x:__rand_int__ 5 NX",
    "PFADD p:__rand_int__ __rand_int__", "PFCOUNT p:__rand_int__", "EXPIRE p:__rand_int__ 5 NX",
]
INTERVAL_LINE = re.compile(r"\[\s*(\d+)s\]\s+(\d+)/s\s+p50\s+([\d.]+) ms\s+p99\s+([\d.]+) ms"
                           r"\s+errors (\d+)")
checks = Checks()
report = []


def say(line=""):
    print(line, flush=True)
    report.append(line)


def load_cmd(port, seconds, conns, pipeline, rate, out):
    cmd = [args.cli, "load", "--port", str(port), "-t", "1", "-c", str(conns), "--pipeline",
           str(pipeline), "--rate", str(rate), "--duration", "%ds" % seconds, "--keys", str(KEYS),
           "--data-size", "64", "--format", "json", "--out", out, "--drain-timeout", "5s"]
    for t in TEMPLATES:
        cmd += ["--command", t]
    return cmd


def churner(port, stop, stats):
    """Short-lived clients: connect, a few commands, check the replies, disconnect."""
    rnd = random.Random(7)
    while not stop.is_set():
        try:
            c = Client(port, timeout=10)
            k = rnd.randrange(KEYS)
            cmds = [("SET", "cs:%d" % k, "v%d" % k, "PX", 2000), ("GET", "cs:%d" % k),
                    ("RPUSH", "cl:%d" % k, "a", "b"), ("LLEN", "cl:%d" % k),
                    ("PEXPIRE", "cl:%d" % k, 2000), ("HSET", "ch:%d" % k, "f", 1),
                    ("HINCRBY", "ch:%d" % k, "f", 1), ("PEXPIRE", "ch:%d" % k, 2000),
                    ("PUBLISH", "churn", "x"), ("PING",)]
            batch = cmds[:rnd.randint(1, len(cmds))]
            if rnd.random() < 0.5:
                c.send(*batch)
                replies = c.read(len(batch))
            else:
                replies = [c.cmd(*b) for b in batch]
            c.close()
            stats["connections"] += 1
            bad = [r for r in replies if isinstance(r, Error)]
            if bad:
                stats["errors"].append(bad[0])
        except Exception as e:  # noqa: BLE001 — any failure of a churner is a finding
            stats["errors"].append(repr(e))
        time.sleep(0.03)


def soak(backend, seconds):
    say("## backend %s, %d s" % (backend, seconds))
    tmp = tempfile.mkdtemp(prefix="kvlab-soak-")
    with Server(args.server, ["--threads", "2", "--backend", backend],
                log=os.path.join(tmp, "server.log")) as srv:
        outs = {n: os.path.join(tmp, n + ".json") for n in ("pipelined", "unpipelined", "pubsub")}
        errs = {n: open(os.path.join(tmp, n + ".err"), "w+") for n in outs}
        procs = {
            "pipelined": load_cmd(srv.port, seconds, 4, 16, 6000, outs["pipelined"]),
            "unpipelined": load_cmd(srv.port, seconds, 4, 1, 1500, outs["unpipelined"]),
            "pubsub": [args.cli, "load", "--port", str(srv.port), "--pubsub", "--publishers", "2",
                       "--subscribers", "8", "--channels", "4", "--rate", "500", "--duration",
                       "%ds" % seconds, "--format", "json", "--out", outs["pubsub"]],
        }
        procs = {n: subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=errs[n])
                 for n, c in procs.items()}
        stop = threading.Event()
        cstats = {"connections": 0, "errors": []}
        th = threading.Thread(target=churner, args=(srv.port, stop, cstats))
        th.start()
        samples = []  # (t, rss, retired_unfreed, epoch_lag)
        t0 = time.time()
        while any(p.poll() is None for p in procs.values()) and time.time() - t0 < seconds + 60:
            i = info(srv.port, "kvlab")
            samples.append((time.time() - t0, srv.rss(), int(i.get("kvlab_epoch_retired_unfreed", 0)),
                            int(i.get("kvlab_epoch_lag", 0))))
            time.sleep(1)
        stop.set()
        th.join(30)
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        time.sleep(1)
        after = int(info(srv.port, "kvlab").get("kvlab_epoch_retired_unfreed", 0))
        server_errors = int(info(srv.port, "stats").get("total_error_replies", -1))
        errorstats = {k: v for k, v in info(srv.port, "errorstats").items()}

        # Errors.
        for n in outs:
            try:
                with open(outs[n]) as f:
                    steps = json.load(f)["steps"]
            except (OSError, ValueError) as e:
                checks.check(False, "%s: kvlab load %s wrote no result (%s)" % (backend, n, e))
                continue
            s = steps[0]
            kinds = s.get("errors_by_kind", {})
            lat = s.get("latency_us", {})
            checks.check(s.get("errors", 1) == 0,
                         "%s: kvlab load %s: %d requests, %s errors %s; p50 %.3f p99 %.3f p99.9 "
                         "%.3f ms" % (backend, n, s.get("requests", 0), s.get("errors"), kinds,
                                      lat.get("p50", 0) / 1e3, lat.get("p99", 0) / 1e3,
                                      lat.get("p999", 0) / 1e3))
        checks.check(not cstats["errors"] and cstats["connections"] > seconds * 5,
                     "%s: %d churning connections, errors %s" % (backend, cstats["connections"],
                                                                  cstats["errors"][:3]))
        checks.check(server_errors == 0, "%s: INFO total_error_replies %d %s"
                     % (backend, server_errors, errorstats))

        # RSS after warm-up.
        warm = max(5, seconds // 3)
        tail = [(t, r) for t, r, _, _ in samples if t >= warm]
        rss_warm = tail[0][1] if tail else 0
        window = (tail[-1][0] - tail[0][0]) if len(tail) > 1 else 0
        sl = slope(tail)  # bytes per second
        bound = max(16 << 20, rss_warm // 4)
        checks.check(len(tail) >= 3 and sl * window <= bound,
                     "%s: RSS %.1f MiB at warm-up end, %.1f MiB at the end, slope %.1f KiB/s "
                     "(%.2f MiB/min); projected over %.0f s: %.1f MiB (bound %.1f MiB)"
                     % (backend, rss_warm / 2**20, (tail[-1][1] if tail else 0) / 2**20,
                        sl / 1024, sl * 60 / 2**20, window, sl * window / 2**20, bound / 2**20))

        # Reclamation.
        worst = max((u for _, _, u, _ in samples), default=0)
        worst_lag = max((lag for _, _, _, lag in samples), default=0)
        checks.check(worst <= 1000000 and after <= 1000,
                     "%s: epoch retired-but-unfreed at most %d objects (bound 1,000,000), %d one "
                     "second after the load (bound 1,000); epoch lag at most %d"
                     % (backend, worst, after, worst_lag))

        # Latency per interval, from kvlab load's one-second lines.
        per = 60 if seconds >= 300 else 5
        say("latency per %d s interval (kvlab load's per-second p50/p99, ms; open loop):" % per)
        say("| interval | pipelined req/s | p50 | worst p99 | unpipelined req/s | p50 | worst p99 |"
            " RSS MiB | retired-unfreed |")
        say("|---|---|---|---|---|---|---|---|---|")
        rows = {}
        for n in ("pipelined", "unpipelined"):
            errs[n].seek(0)
            for line in errs[n]:
                m = INTERVAL_LINE.search(line)
                if m:
                    sec = int(m.group(1))
                    rows.setdefault((sec - 1) // per, {}).setdefault(n, []).append(
                        (int(m.group(2)), float(m.group(3)), float(m.group(4))))
        for k in sorted(rows):
            cells = []
            for n in ("pipelined", "unpipelined"):
                v = rows[k].get(n, [])
                cells += ["%.0f" % (sum(x[0] for x in v) / len(v)) if v else "-",
                          "%.3f" % percentile([x[1] for x in v], 50) if v else "-",
                          "%.3f" % max(x[2] for x in v) if v else "-"]
            smp = [s for s in samples if k * per <= s[0] < (k + 1) * per]
            cells.append("%.1f" % (max(s[1] for s in smp) / 2**20) if smp else "-")
            cells.append("%d" % max(s[2] for s in smp) if smp else "-")
            say("| %d-%d s | %s |" % (k * per, (k + 1) * per, " | ".join(cells)))
        code = srv.stop()
        checks.check(code == 0, "%s: the server exits 0 on SIGTERM (%r)" % (backend, code))
        for f in errs.values():
            f.close()
        say()


for b in args.backends.split(","):
    soak(b, args.seconds)
if args.report:
    with open(args.report, "w") as f:
        f.write("\n".join(report) + "\n")
checks.finish()

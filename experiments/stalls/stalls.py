#!/usr/bin/env python3
"""How long does a keyspace-wide or long command stop other clients' single-key writes?

Starts one server (kvlab-server --threads 2, or redis-server) on a free loopback port, fills it
with DEBUG POPULATE (1,000,000 keys by default) and a list of as many random numbers, then, for
each victim command, runs it on one connection while a probe connection SETs one key in a closed
loop (one request in flight). For kvlab the probe's connection is on the other worker than the
victim's (CLIENT INFO's kvlab-worker), so its waits are what the victim imposes on *other*
workers. Per victim and round it records the victim's own wall time and the longest probe SET
whose round trip overlapped the victim (the stall), and the probe's longest round trip in a quiet
window before (the noise floor).

  stalls.py --server kvlab|redis [--binary PATH] [--keys N] [--rounds R] [--out FILE.csv]

Victims: KEYS * ; KEYS with a slow linear pattern (a 270-byte class after a '*', so every key
costs about (length + 1) x 270 steps); a whole SCAN iteration (COUNT 1000); SORT of the list
(LIMIT 0 10: the sort, not the reply); DEBUG SLEEP 0.5; DEBUG RELOAD; FLUSHALL (last, the data is
loaded again for the next round). Python standard library only; servers are stopped by pid.
"""
import argparse
import csv
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "soak"))
from common import REDIS_FLAGS, Server, accepts  # noqa: E402
from soakcommon import Client  # noqa: E402

SLOW_PATTERN = "*[" + "".join(chr(c) for c in range(0x21, 0x7f) if c not in b"]\\^-") * 3 + "]#"


def start(kind, binary, workdir):
    if kind == "kvlab":
        argv = [binary, "--threads", "2", "--enable-debug-command", "yes"]
    else:
        # DEBUG RELOAD writes dump.rdb into --dir, which a later start would load: a scratch dir.
        argv = [binary, *REDIS_FLAGS, "--enable-debug-command", "yes", "--dir", workdir]
    return Server("server", argv, ready=lambda port: accepts(port, timeout=0.5), timeout=10)


def worker_of(client):
    info = client.cmd("CLIENT", "INFO").decode()
    for field in info.split():
        if field.startswith("kvlab-worker="):
            return int(field.split("=")[1])
    return None


def probe_client(port, avoid):
    """A connection on another worker than `avoid` (kvlab); any connection when avoid is None."""
    for _ in range(50):
        client = Client(port, timeout=600)
        if avoid is None or worker_of(client) != avoid:
            return client
        client.close()
    raise SystemExit("could not place the probe on another worker")


def probe_loop(port, avoid, ready, stop, out):
    """SETs in a closed loop on its own connection (on another worker than the victim's); sends
    back (start, end) of every request. A process of its own, so that the victim's reply parsing
    (a million keys for KEYS *) does not hold the interpreter lock while a probe reply waits to
    be timed."""
    client = probe_client(port, avoid)
    ready.set()
    samples = []
    n = 0
    while not stop.is_set():
        t0 = time.monotonic()
        client.cmd("SET", "probe", str(n))
        samples.append((t0, time.monotonic()))
        n += 1
    out.put(samples)


class Probe:
    """The probe process (CLOCK_MONOTONIC is shared by processes on Linux)."""

    def __init__(self, port, avoid):
        self.stop = multiprocessing.Event()
        ready = multiprocessing.Event()
        self.out = multiprocessing.Queue()
        self.proc = multiprocessing.Process(target=probe_loop,
                                            args=(port, avoid, ready, self.stop, self.out))
        self.proc.start()
        if not ready.wait(30):
            raise SystemExit("the probe did not connect")
        self.samples = None

    def finish(self):
        self.stop.set()
        self.samples = self.out.get(timeout=600)
        self.proc.join(60)

    def longest(self, a, b):
        """The longest round trip that overlapped [a, b]."""
        return max((e - s for s, e in self.samples if e >= a and s <= b), default=0.0)


def load(client, keys):
    client.cmd("FLUSHALL")
    client.cmd("DEBUG", "POPULATE", str(keys))
    rng = random.Random(1)
    batch = 10000
    for i in range(0, keys, batch):
        client.cmd("RPUSH", "biglist", *[str(rng.randrange(1 << 30)) for _ in range(batch)])


def scan_all(client):
    cursor = b"0"
    while True:
        cursor, _ = client.cmd("SCAN", cursor, "COUNT", "1000")
        if cursor == b"0":
            return


# (name, the command's INFO commandstats name, how to run it)
VICTIMS = [
    ("KEYS *", "keys", lambda c: c.cmd("KEYS", "*")),
    ("KEYS slow pattern", "keys", lambda c: c.cmd("KEYS", SLOW_PATTERN)),
    ("SCAN full iteration", "scan", scan_all),
    ("SORT list LIMIT 0 10", "sort", lambda c: c.cmd("SORT", "biglist", "LIMIT", "0", "10")),
    ("DEBUG SLEEP 0.5", "debug", lambda c: c.cmd("DEBUG", "SLEEP", "0.5")),
    ("DEBUG RELOAD", "debug", lambda c: c.cmd("DEBUG", "RELOAD")),
    ("FLUSHALL", "flushall", lambda c: c.cmd("FLUSHALL")),
]


def command_usec(client, name):
    """(calls, usec) of INFO commandstats for one command: its time inside the server."""
    for line in client.cmd("INFO", "commandstats").decode().split("\r\n"):
        if line.startswith("cmdstat_%s:" % name):
            fields = dict(f.split("=") for f in line.split(":", 1)[1].split(","))
            return int(fields["calls"]), int(fields["usec"])
    return 0, 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", choices=["kvlab", "redis"], required=True)
    ap.add_argument("--binary")
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    opts = ap.parse_args()
    binary = opts.binary or (shutil.which("redis-server") if opts.server == "redis" else
                             "build/server/kvlab-server")
    workdir = tempfile.mkdtemp(prefix="kvlab-stalls-")
    server = start(opts.server, binary, workdir)
    port = server.port
    rows = []
    try:
        victim = Client(port, timeout=600)
        avoid = worker_of(victim) if opts.server == "kvlab" else None
        for rnd in range(opts.rounds):
            load(victim, opts.keys)
            probe = Probe(port, avoid)
            runs = []
            for name, stat, run in VICTIMS:
                time.sleep(0.5)
                q0 = time.monotonic()
                time.sleep(0.5)
                calls0, usec0 = command_usec(victim, stat)
                a = time.monotonic()
                run(victim)
                b = time.monotonic()
                calls1, usec1 = command_usec(victim, stat)
                runs.append((name, q0, a, b, calls1 - calls0, usec1 - usec0))
            time.sleep(0.05)
            probe.finish()
            for name, q0, a, b, calls, usec in runs:
                calls = max(1, calls)
                row = {"server": opts.server, "keys": opts.keys, "round": rnd, "victim": name,
                       "wall_s": round(b - a, 4),
                       "server_ms": round(usec / 1000, 2),
                       "server_ms_per_call": round(usec / 1000 / calls, 2),
                       "stall_ms": round(1000 * probe.longest(a, b), 2),
                       "quiet_max_ms": round(1000 * probe.longest(q0, a - 0.02), 2)}
                rows.append(row)
                print("%-6s round %d  %-22s wall %7.3f s  in server %9.2f ms (%8.2f per call)  "
                      "longest SET %9.2f ms  (quiet %.2f ms)"
                      % (opts.server, rnd, name, row["wall_s"], row["server_ms"],
                         row["server_ms_per_call"], row["stall_ms"], row["quiet_max_ms"]),
                      flush=True)
    finally:
        server.stop(timeout=None, kill=True)
        shutil.rmtree(workdir, ignore_errors=True)
    if opts.out:
        with open(opts.out, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            if f.tell() == 0:
                w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()

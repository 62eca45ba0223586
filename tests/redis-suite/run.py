#!/usr/bin/env python3
"""Redis 7.0's own Tcl test suite against kvlab-server, compared test by test with redis-server.

  run.py KVLAB_SERVER [--units fast|all|U1,U2…] [--jobs N] [--out DIR] [--update-readme]
  run.py --readme-from DIR      rewrite the README tables from a finished run's summary.csv
  run.py --list                 the units, with the fast subset marked

For every unit (tests/unit/*.tcl, tests/unit/type/*.tcl of the Redis source) a fresh redis-server
and a fresh kvlab-server start on free loopback ports and the unit runs against both at once
(Redis's `--host/--port` external mode, `--singledb`), so that both runs share the machine's load.
Every test Redis passes must pass on kvlab-server, unless an entry of allowlist.txt (a Redis
behaviour kvlab does not model) or pending.txt (a failure other work will fix) names it. A test
fails on kvlab when it fails, raises, hangs, crashes the server, does not run (an earlier error
ended its block), or takes more than --slow-factor times its time on Redis (see slow()).

The Redis source comes from Debian's source package `redis` (fetch.sh puts it in
/var/cache/kvlab-redis-src); without it the run is skipped (exit 77). Exit 0: no kvlab-only
failure and every list entry still needed; 1 otherwise.
"""
import argparse
import concurrent.futures
import csv
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.environ.get("KVLAB_REDIS_SRC", "/var/cache/kvlab-redis-src/src")

# `./kvlab test` runs these (about a third of the suite's time); CI runs every unit.
FAST = ["type/string", "keyspace", "expire", "type/list", "type/hash", "type/set", "type/zset",
        "pubsub", "multi", "scripting"]

# Tags excluded on both servers (README.md says why). `external:skip` is excluded by the framework
# itself in external mode, `singledb:skip` by --singledb, `large-memory` unless --large-memory.
DENY_TAGS = ["needs:repl", "needs:save"]

# How the Tcl client reports a server that went away.
CONN_ERROR = re.compile(r"I/O error|connection refused|broken pipe|connection reset|couldn't open "
                        r"socket|connection abort", re.I)


# --------------------------------------------------------------------------------------------
# Allow-list and pending list

class Entry:
    def __init__(self, path, lineno, unit, test, reason, flags):
        self.path, self.lineno, self.unit, self.test, self.reason = path, lineno, unit, test, reason
        self.skip = "skip" in flags
        self.flaky = "flaky" in flags
        # /regex/ (Python's re, searched); the framework's own convention is the leading slash.
        self.pattern = test[1:-1] if len(test) > 1 and test.startswith("/") and \
            test.endswith("/") else None
        self.rx = re.compile(self.pattern) if self.pattern is not None else None
        self.used = self.passes = False

    def matches(self, unit, name):
        if self.unit != unit:
            return False
        return bool(self.rx.search(name)) if self.rx else name == self.test

    def where(self):
        return "%s:%d" % (os.path.basename(self.path), self.lineno)


def load_list(path):
    """`unit | test name, or /regex/ | reason [| flags]` per line; # comments and blank lines
    ignored. Flags, space-separated: `skip`, not run on kvlab-server at all, because it leaves the
    server in a state that fails the tests after it (a script still running, maxmemory at one
    byte); `flaky`, an entry whose test also passes at times (it depends on the worker a
    connection lands on), which is then not reported stale."""
    entries = []
    if not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in line.split(" | ")]
            flags = parts[3].split() if len(parts) == 4 else []
            if len(parts) not in (3, 4) or not all(parts) or \
                    any(f not in ("skip", "flaky") for f in flags):
                raise SystemExit("%s:%d: expected `unit | test | reason [| skip flaky]`" % (path, n))
            entries.append(Entry(path, n, parts[0], parts[1], parts[2], flags))
    return entries


# --------------------------------------------------------------------------------------------
# The Redis source and a work directory for one run of the framework

def units_of(src):
    """The units of tests/test_helper.tcl's ::all_tests under unit/ and unit/type/, in its order
    (it omits helpers such as list-common.tcl)."""
    text = open(os.path.join(src, "tests", "test_helper.tcl"), encoding="utf-8").read()
    m = re.search(r"set ::all_tests \{(.*?)\}", text, re.S)
    out = []
    for word in m.group(1).split():
        if re.fullmatch(r"unit/(type/)?[a-z0-9-]+", word):
            out.append(word[len("unit/"):])
    return out


def make_workdir(src, parent):
    """A directory the framework can run in: tests/ mirrors the source's (symlinks) with its own
    tmp/, and tests/support/util.tcl also loads record.tcl. src/ holds Debian's binaries, where a
    few tests look for redis-cli."""
    wd = tempfile.mkdtemp(prefix="wd-", dir=parent)
    st = os.path.join(src, "tests")
    os.makedirs(os.path.join(wd, "tests", "tmp"))
    os.makedirs(os.path.join(wd, "tests", "support"))
    os.makedirs(os.path.join(wd, "src"))
    for name in os.listdir(st):
        if name not in ("tmp", "support"):
            os.symlink(os.path.join(st, name), os.path.join(wd, "tests", name))
    for name in os.listdir(os.path.join(st, "support")):
        if name != "util.tcl":
            os.symlink(os.path.join(st, "support", name), os.path.join(wd, "tests", "support", name))
    with open(os.path.join(wd, "tests", "support", "util.tcl"), "w") as f:
        f.write("source {%s}\nsource {%s}\n" % (os.path.join(st, "support", "util.tcl"),
                                                 os.path.join(HERE, "record.tcl")))
    for b in ("redis-server", "redis-cli", "redis-benchmark"):
        p = shutil.which(b)
        if p:
            os.symlink(p, os.path.join(wd, "src", b))
    return wd


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------------
# Servers

# Every server and framework run started and not yet stopped, so that an interrupted run.py stops
# them (by pid, or by the framework's own process group) before it exits.
_live = set()
_live_lock = threading.Lock()


def track(obj, alive):
    with _live_lock:
        (_live.add if alive else _live.discard)(obj)


def stop_everything():
    with _live_lock:
        objs = list(_live)
    for o in objs:
        try:
            o.kill() if isinstance(o, Run) else o.stop()
        except Exception:  # noqa: BLE001 -- best effort while exiting
            pass


class Server:
    def __init__(self, label, argv_fn, logpath, cwd):
        self.label, self.argv_fn, self.logpath, self.cwd = label, argv_fn, logpath, cwd
        self.proc, self.port = None, None

    def start(self):
        for _ in range(5):
            self.port = free_port()
            log = open(self.logpath, "ab")
            self.proc = subprocess.Popen(self.argv_fn(self.port), cwd=self.cwd, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            track(self, True)
            log.close()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1) as c:
                        c.sendall(b"PING\r\n")
                        if c.recv(64).startswith(b"+PONG"):
                            return
                except OSError:
                    time.sleep(0.05)
            self.stop()  # exited (port taken in between?) or did not answer: another port
        raise RuntimeError("%s did not start (log: %s)" % (self.label, self.logpath))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        track(self, False)
        self.proc = None


# --------------------------------------------------------------------------------------------
# One run of one unit against one server

_baseport_lock = threading.Lock()
_baseport = [random.randrange(0, 250)]


def next_baseport():
    """The framework's own test server listens on a free port in [baseport - 32, baseport) whose
    +10000 is free too. Runs in parallel get different ranges, below Linux's ephemeral ports
    (32768-60999), where a client socket could take the port between its check and its bind."""
    with _baseport_lock:
        _baseport[0] = (_baseport[0] + 1) % 250
        return 20100 + 40 * _baseport[0]


def unescape(s):
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), s)


class Run:
    """The framework (tclsh test_helper.tcl) running one unit against one server, and the records
    record.tcl writes. Tests are keyed by (name, occurrence): a unit may repeat a name."""

    def __init__(self, opts, wd, unit, server, outbase, skip):
        self.records_path = outbase + ".records"
        self.out_path = outbase + ".out"
        args = [opts.tclsh, "tests/test_helper.tcl", "--host", "127.0.0.1",
                "--port", str(server.port), "--singledb", "--durable", "--clients", "1",
                "--timeout", str(int(opts.unit_timeout)),
                "--baseport", str(next_baseport()), "--single", "unit/" + unit,
                "--tags", " ".join("-" + t for t in DENY_TAGS)]
        skip_path = ""
        if skip:
            skip_path = outbase + ".skip"
            with open(skip_path, "w", encoding="utf-8") as f:
                for name, occ in sorted(skip, key=str):
                    f.write("%s\t%s\n" % (occ, name))
        env = dict(os.environ, KVLAB_RS_RECORDS=self.records_path, KVLAB_RS_SKIP=skip_path,
                   TERM="dumb")
        self.out = open(self.out_path, "ab")
        # Its own session: the test server and the client it spawns are stopped together by pgid.
        self.proc = subprocess.Popen(args, cwd=wd, stdout=self.out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        track(self, True)
        self.started = time.monotonic()
        self.progress = self.started  # when the last record arrived
        self.ended = None
        self.offset = 0
        self.partial = ""
        self.counts = {}
        self.current = None  # (key, monotonic time its start record was read)
        self.results = {}    # key -> (status, us, message)
        self.order = []
        self.block = 0       # the start_server block running now (record.tcl numbers them)
        self.blocks = {}     # key -> its block
        self.raises = []     # (block, error) for blocks that raised outside any test

    def poll_records(self):
        try:
            with open(self.records_path, encoding="utf-8", errors="replace") as f:
                f.seek(self.offset)
                data = f.read()
                self.offset = f.tell()
        except FileNotFoundError:
            return
        data = self.partial + data
        lines = data.split("\n")
        self.partial = lines.pop()
        if lines:
            self.progress = time.monotonic()
        for line in lines:
            parts = line.split("\t")
            if len(parts) < 3:
                continue
            status, us, name = parts[0], parts[1], unescape(parts[2])
            msg = unescape(parts[3]) if len(parts) > 3 else ""
            if status == "block":
                self.block = int(us)
                continue
            if status == "raise":
                self.raises.append((int(us), msg))
                continue
            if status == "start":
                occ = self.counts.get(name, 0) + 1
                self.current = ((name, occ), time.monotonic())
                continue
            self.counts[name] = self.counts.get(name, 0) + 1
            key = (name, self.counts[name])
            self.current = None
            self.blocks[key] = self.block
            if key not in self.results:
                self.order.append(key)
            self.results[key] = (status, int(us), msg)

    def done(self):
        if self.ended is None and self.proc.poll() is not None:
            track(self, False)
            self.ended = time.monotonic()
            self.poll_records()
        return self.ended is not None

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        track(self, False)
        if self.ended is None:
            self.ended = time.monotonic()
        self.poll_records()

    def abort(self, why):
        """Stops the run after a hang or a crash of the server, and returns the key of the test to
        blame. A hang is the test running now. After a crash the test running now may be a later
        one (each test after the crash fails at once on the closed socket): the first test whose
        failure is a connection error is blamed, and the results after it are dropped so that
        the rerun, which skips the blamed test, decides them."""
        current = self.current
        self.kill()
        blamed = current[0] if current else None
        if why == "hang" and current is None:
            # Stuck between tests, in a block's own code: most likely on what the last test left
            # behind (a script still running, a client still blocked). It keeps its outcome; the
            # rerun skips it.
            return self.order[-1] if self.order else None
        if why == "crash":
            for n, key in enumerate(self.order):
                st = self.results[key]
                if st[0] in ("err", "exception") and CONN_ERROR.search(st[2]):
                    blamed = key
                    for later in self.order[n:]:
                        del self.results[later]
                    self.order = self.order[:n]
                    break
        if blamed is not None:
            us = int((time.monotonic() - current[1]) * 1e6) if current and current[0] == blamed else 0
            self.results[blamed] = (why, us, "")
            self.blocks.setdefault(blamed, self.block)
            if blamed not in self.order:
                self.order.append(blamed)
        return blamed

    def close(self):
        self.out.close()

    def wall(self):
        return (self.ended or time.monotonic()) - self.started


def block_errors(out_path):
    """Errors the framework reported outside any test (a start_server block that raised: the rest
    of that block did not run). Test failures read "[err]: <name> in tests/unit/…"."""
    errs = []
    try:
        text = open(out_path, encoding="utf-8", errors="replace").read()
    except FileNotFoundError:
        return errs
    for m in re.finditer(r"^\[err\]: (.*)$", text, re.M):
        first = m.group(1)
        if not re.search(r" in tests/unit/\S+\.tcl$", first) and first not in errs:
            errs.append(first[:300])
    return errs


def ignored_count(out_path):
    try:
        text = open(out_path, encoding="utf-8", errors="replace").read()
    except FileNotFoundError:
        return 0
    return len(re.findall(r"^\[ignore\]:", text, re.M))


# --------------------------------------------------------------------------------------------
# One unit on both servers

class UnitResult:
    def __init__(self, unit):
        self.unit = unit
        self.redis = {}
        self.redis_order = []
        self.kvlab = {}
        self.redis_wall = self.kvlab_wall = 0.0
        self.notes = []
        self.ignored = 0
        self.broken = False
        self.total_s = 0.0  # reruns and confirmations included
        self.confirm = None  # set by run_unit for confirm_slow()


def kvlab_argv(opts):
    """kvlab-server as a user runs it, plus what the suite needs: DEBUG (off by default in both
    servers)."""
    return lambda p: [opts.server, "--bind", "127.0.0.1", "--port", str(p),
                      "--threads", str(opts.threads), "--enable-debug-command", "yes"] + \
        opts.kvlab_arg


def redis_argv(opts, wd):
    """Debian's redis-server with its compiled-in defaults, persistence off (as kvlab), DEBUG on."""
    return lambda p: [opts.redis_server, "--port", str(p), "--bind", "127.0.0.1", "--save", "",
                      "--appendonly", "no", "--daemonize", "no", "--dir", wd,
                      "--enable-debug-command", "yes"]


def start_run(opts, wd, unit, server, outbase, skip):
    """A Run whose framework came up (its client said [ready]); retried on another base port when
    the framework's test server could not listen."""
    for attempt in range(4):
        run = Run(opts, wd, unit, server, outbase + ("-retry%d" % attempt if attempt else ""), skip)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with open(run.out_path, encoding="utf-8", errors="replace") as f:
                    if "[ready]:" in f.read():
                        return run
            except FileNotFoundError:
                pass
            if run.proc.poll() is not None:
                break
            time.sleep(0.05)
        run.kill()
        run.close()
    raise RuntimeError("the test framework did not start (see %s)" % run.out_path)


def kvlab_budget(opts, key, rrun):
    """Seconds kvlab's run of the test `key` may take before it counts as hung: slow_factor times
    Redis's time for it, at least hang_floor; test_timeout while Redis has not run it yet."""
    if key in rrun.results and rrun.results[key][0] == "ok":
        return max(opts.hang_floor, opts.slow_factor * rrun.results[key][1] / 1e6)
    if rrun.done():
        return opts.hang_floor
    return opts.test_timeout


def run_unit(opts, unit, log):
    t0 = time.monotonic()
    res = UnitResult(unit)
    udir = os.path.join(opts.out, "units", unit.replace("/", "-"))
    shutil.rmtree(udir, ignore_errors=True)
    os.makedirs(udir)
    wd_r = make_workdir(opts.src, udir)
    wd_k = make_workdir(opts.src, udir)
    redis = Server("redis-server", redis_argv(opts, wd_r), os.path.join(udir, "redis-server.log"), wd_r)
    kvlab = Server("kvlab-server", kvlab_argv(opts), os.path.join(udir, "kvlab-server.log"), wd_k)
    runs = []
    listed_skip = {k for k in opts.skip_on_kvlab.get(unit, ())}
    try:
        redis.start()
        kvlab.start()
        rrun = start_run(opts, wd_r, unit, redis, os.path.join(udir, "redis"), set())
        runs.append(rrun)
        krun = start_run(opts, wd_k, unit, kvlab, os.path.join(udir, "kvlab"), listed_skip)
        runs.append(krun)
        blamed = set()   # tests that hung or crashed kvlab-server: skipped by the reruns
        blocks = {}      # key -> start_server block, from every kvlab run so far
        reruns = 0
        k_finished = False
        deadline = time.monotonic() + opts.unit_timeout
        while not (rrun.done() and k_finished):
            time.sleep(0.1)
            rrun.poll_records()
            krun.poll_records()
            now = time.monotonic()
            if not rrun.done() and (rrun.current and now - rrun.current[1] > opts.test_timeout
                                    or now > deadline):
                res.notes.append("redis-server: %s ran past its time; the rest of the unit did "
                                 "not run on Redis" % (rrun.current[0][0] if rrun.current
                                                       else "the unit"))
                rrun.kill()
            if k_finished:
                continue
            # A crash is noticed also after the run ended: the framework may stop at once when
            # it cannot reconnect between tests.
            aborted = None
            if not kvlab.alive():
                aborted = "crash"
            elif not krun.done() and krun.current and \
                    now - krun.current[1] > kvlab_budget(opts, krun.current[0], rrun):
                aborted = "hang"
            elif not krun.done() and not krun.current and now - krun.progress > opts.idle_timeout:
                aborted = "hang"
            elif not krun.done() and now > deadline:
                krun.kill()
                res.notes.append("kvlab-server: the unit ran past %d s; stopped" % opts.unit_timeout)
            if aborted is None:
                k_finished = krun.done()
                continue
            key = krun.abort(aborted)
            if key is not None and krun.results[key][0] != aborted:
                res.notes.append("hang between tests, after: %s" % key[0])
            else:
                res.notes.append("%s: %s" % (aborted, key[0] if key else "between tests"))
            blocks.update(krun.blocks)
            merge(res.kvlab, krun)
            if key is None or reruns >= opts.max_reruns or now > deadline:
                k_finished = True
                continue
            # Again on a fresh server, skipping every test blamed so far and every test decided in
            # an earlier start_server block (each block starts with FLUSHALL); the blamed test's
            # block runs from its start again, since a test may need the keys of the tests before
            # it.
            blamed.add(key)
            block = krun.blocks[key]
            skip = blamed | listed_skip | {k for k, b in blocks.items() if b < block and k in res.kvlab}
            reruns += 1
            kvlab.stop()
            kvlab.start()
            krun = start_run(opts, wd_k, unit, kvlab, os.path.join(udir, "kvlab-rerun%d" % reruns),
                             skip)
            runs.append(krun)
        merge(res.kvlab, krun)
        blocks.update(krun.blocks)
        res.redis = dict(rrun.results)
        res.redis_order = rrun.order
        # What a later confirmation of the slow tests needs (confirm_slow()).
        res.confirm = dict(udir=udir, rrun=rrun, kblocks=dict(blocks),
                           kskip=blamed | listed_skip, wd_r=wd_r, wd_k=wd_k)
        res.redis_wall = rrun.wall()
        res.kvlab_wall = runs[1].wall()
        res.ignored = ignored_count(rrun.out_path)
        if not rrun.results and not res.ignored and rrun.proc.returncode != 0:
            res.notes.append("the framework ran nothing on Redis: see %s" % rrun.out_path)
            res.broken = True
        for block, err in runs[1].raises:
            if not any(b == block for b, _ in rrun.raises):
                res.notes.append("kvlab block %d raised outside any test: %s" % (block, err[:200]))
        for block, err in rrun.raises:
            res.notes.append("redis block %d raised outside any test: %s" % (block, err[:200]))
        redis_errs = block_errors(rrun.out_path)
        for e in block_errors(runs[1].out_path):
            if e not in redis_errs:
                res.notes.append("kvlab block error: " + e)
    except RuntimeError as e:
        res.notes.append(str(e))
        res.broken = True
    finally:
        for r in runs:
            if not r.done():
                r.kill()
            r.close()
        kvlab.stop()
        redis.stop()
        if not opts.keep and res.confirm is None:
            shutil.rmtree(wd_r, ignore_errors=True)
            shutil.rmtree(wd_k, ignore_errors=True)
    res.total_s = time.monotonic() - t0
    log("%-22s redis %6.1f s  kvlab %6.1f s  all %6.1f s  %s"
        % (unit, res.redis_wall, res.kvlab_wall, res.total_s, "; ".join(res.notes[:3])))
    return res


def confirm_slow(opts, res, log):
    """Runs the blocks of the unit's tests found slow again, on fresh servers, both at once, after
    every unit has run, one unit at a time: a test stays slow only when it is slow in both passes.
    On a shared machine a test can lose 100 ms to the scheduler or to the framework's own polls
    (wait_for_blocked_client), which one pass cannot tell from slowness, and the suite's own
    parallel units load the machine; slowness that is kvlab's shows in every pass. A test stopped
    as hung after more than slow_factor times a Redis time above hang_floor is such a verdict too
    and is run again, with twice the time; a test that takes milliseconds on Redis and hangs for
    hang_floor on kvlab is not noise, and is not run again."""
    ctx = res.confirm
    res.confirm = None
    if ctx is None:
        return
    t0 = time.monotonic()
    unit, udir, rrun, kblocks = res.unit, ctx["udir"], ctx["rrun"], ctx["kblocks"]
    wd_r, wd_k = ctx["wd_r"], ctx["wd_k"]

    def slow_key(k):
        r, kv = rrun.results[k], res.kvlab.get(k, ("", 0, ""))
        if r[0] != "ok":
            return False
        if kv[0] == "ok":
            return slow(opts, r[1], kv[1])
        return kv[0] == "hang" and opts.slow_factor * r[1] / 1e6 > opts.hang_floor

    flagged = [k for k in rrun.order if slow_key(k)]
    redis = Server("redis-server", redis_argv(opts, wd_r),
                   os.path.join(udir, "redis-server-confirm.log"), wd_r)
    kvlab = Server("kvlab-server", kvlab_argv(opts), os.path.join(udir, "kvlab-server-confirm.log"),
                   wd_k)
    runs = []
    try:
        if not flagged:
            return
        rb = {rrun.blocks[k] for k in flagged}
        kb = {kblocks.get(k) for k in flagged}
        redis.start()
        kvlab.start()
        r2 = start_run(opts, wd_r, unit, redis, os.path.join(udir, "redis-confirm"),
                       {k for k, b in rrun.blocks.items() if b not in rb})
        runs.append(r2)
        k2 = start_run(opts, wd_k, unit, kvlab, os.path.join(udir, "kvlab-confirm"),
                       ctx["kskip"] | {k for k, b in kblocks.items() if b not in kb})
        runs.append(k2)
        deadline = time.monotonic() + opts.unit_timeout
        while not (r2.done() and k2.done()):
            time.sleep(0.1)
            r2.poll_records()
            k2.poll_records()
            now = time.monotonic()
            stop = now > deadline or not (kvlab.alive() and redis.alive())
            if not r2.done() and (stop or now - r2.progress > opts.test_timeout):
                r2.kill()
            if not k2.done() and k2.current:
                key, since = k2.current
                budget = kvlab_budget(opts, key, r2)
                if key in flagged:
                    budget = max(budget, 2 * kvlab_budget(opts, key, rrun))
                stop = stop or now - since > budget
            if not k2.done() and (stop or now - k2.progress > opts.test_timeout):
                k2.kill()
        confirmed = []
        for k in flagged:
            a, b = r2.results.get(k), k2.results.get(k)
            if a and b and a[0] == "ok" and b[0] == "ok" and not slow(opts, a[1], b[1]):
                res.redis[k], res.kvlab[k] = a, b  # the pass that shows it is not slow
            else:
                confirmed.append(k[0])
                res.notes.append("slow in both passes: %s" % k[0])
        res.total_s += time.monotonic() - t0
        log("%-22s confirmed slow %d of %d in %.1f s%s" % (
            unit, len(confirmed), len(flagged), time.monotonic() - t0,
            (": " + "; ".join(confirmed[:3])) if confirmed else ""))
    except RuntimeError as e:
        res.notes.append(str(e))
    finally:
        for r in runs:
            if not r.done():
                r.kill()
            r.close()
        kvlab.stop()
        redis.stop()
        if not opts.keep:
            shutil.rmtree(wd_r, ignore_errors=True)
            shutil.rmtree(wd_k, ignore_errors=True)


def merge(into, run):
    """A key keeps the first outcome it got; a rerun fills in what the earlier runs did not reach
    (it skips the tests that hung, whose `skip` record must not replace the hang)."""
    for key in run.order:
        st = run.results[key]
        if key not in into or into[key][0] == "skip" and st[0] != "skip":
            into[key] = st
    for key, st in run.results.items():
        if key not in into:
            into[key] = st


# --------------------------------------------------------------------------------------------
# Comparison

def slow(opts, r_us, k_us):
    """A test both servers pass counts as failed on kvlab when it took more than slow_factor times
    Redis's time. Times below slow_floor_ms count as slow_floor_ms: a test of a few hundred
    microseconds is one scheduling delay away from any ratio on a shared machine. The times
    exclude the first retry delay of each wait_for_condition (record.tcl says why)."""
    floor = opts.slow_floor_ms * 1000
    return k_us > opts.slow_factor * max(r_us, floor)


def compare(opts, res, allow, pending):
    rows = []
    for key in res.redis_order:
        r = res.redis[key]
        if r[0] in ("skip", "ignore"):
            continue
        k = res.kvlab.get(key, ("not-run", 0, ""))
        if r[0] != "ok":
            outcome = "redis-fails"
        elif k[0] == "ok" and not slow(opts, r[1], k[1]):
            outcome = "pass"
        else:
            outcome = "fail"
            if k[0] == "ok":
                k = ("slow", k[1], "%.1f ms against %.1f ms on Redis" % (k[1] / 1e3, r[1] / 1e3))
            elif k[0] in ("skip", "ignore"):
                k = ("not-run", k[1], k[2])
        entry = None
        for e in allow + pending:
            if e.matches(res.unit, key[0]):
                entry = e
                break
        if entry is not None:
            entry.used = entry.used or outcome == "fail"
            if outcome == "fail":
                outcome = "allow" if entry in allow else "pending"
            elif outcome == "pass":
                entry.passes = True
        rows.append((key, r, k, outcome, entry))
    return rows


def summarize(opts, results, allow, pending):
    units = []
    tests = []
    for res in results:
        rows = compare(opts, res, allow, pending)
        c = {o: sum(1 for x in rows if x[3] == o) for o in ("pass", "fail", "allow", "pending",
                                                             "redis-fails")}
        both = [(r[1], k[1]) for _, r, k, o, _ in rows if o == "pass"]
        r_us = sum(a for a, _ in both)
        k_us = sum(b for _, b in both)
        redis_passes = c["pass"] + c["fail"] + c["allow"] + c["pending"]
        units.append(dict(unit=res.unit, redis_passes=redis_passes, passed_both=c["pass"],
                          kvlab_only=c["fail"], allow_listed=c["allow"], pending=c["pending"],
                          redis_fails=c["redis-fails"], ignored=res.ignored,
                          redis_test_s="%.3f" % (r_us / 1e6), kvlab_test_s="%.3f" % (k_us / 1e6),
                          ratio=("%.2f" % (k_us / r_us)) if r_us else "",
                          redis_wall_s="%.1f" % res.redis_wall, kvlab_wall_s="%.1f" % res.kvlab_wall,
                          unit_s="%.1f" % res.total_s,
                          notes=" ; ".join(res.notes)))
        for key, r, k, o, e in rows:
            tests.append(dict(unit=res.unit, test=key[0], occurrence=key[1], outcome=o,
                              redis=r[0], redis_ms="%.3f" % (r[1] / 1e3), kvlab=k[0],
                              kvlab_ms="%.3f" % (k[1] / 1e3),
                              list_entry=e.where() if e else "", message=k[2] if o != "pass" else ""))
    return units, tests


# --------------------------------------------------------------------------------------------
# README tables

TABLE_BEGIN = "<!-- units:begin (generated by tests/redis-suite/run.py --update-readme) -->"
TABLE_END = "<!-- units:end -->"
# In the top README's compatibility paragraph, inline (a line starting with a comment would end
# the paragraph).
COUNT_RX = re.compile(r"(<!-- redis-suite -->).*?(<!-- /redis-suite -->)")


def readme_table(units, all_units):
    by = {u["unit"]: u for u in units}
    lines = [TABLE_BEGIN,
             "| unit | Redis passes | passed on both | kvlab-only failures | allow-listed | pending "
             "| time ratio | Redis s | kvlab s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    tot = dict(redis_passes=0, passed_both=0, kvlab_only=0, allow_listed=0, pending=0)
    r_s = k_s = rw = kw = 0.0
    na = []
    for unit in all_units:
        u = by.get(unit)
        if u is None:
            continue
        if int(u["redis_passes"]) == 0 and int(u["redis_fails"]) == 0:
            na.append(unit)
            continue
        for f in tot:
            tot[f] += int(u[f])
        r_s += float(u["redis_test_s"])
        k_s += float(u["kvlab_test_s"])
        rw += float(u["redis_wall_s"])
        kw += float(u["kvlab_wall_s"])
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            unit, u["redis_passes"], u["passed_both"], u["kvlab_only"], u["allow_listed"],
            u["pending"], u["ratio"] or "–", u["redis_wall_s"], u["kvlab_wall_s"]))
    lines.append("| **all** | %d | %d | %d | %d | %d | %s | %.0f | %.0f |" % (
        tot["redis_passes"], tot["passed_both"], tot["kvlab_only"], tot["allow_listed"],
        tot["pending"], ("%.2f" % (k_s / r_s)) if r_s else "–", rw, kw))
    lines.append("")
    lines.append("Not applicable (every test needs a server the suite starts itself, "
                 "or an excluded tag): %s." % ", ".join(na))
    lines.append(TABLE_END)
    return lines, tot


def replace_block(path, begin, end, new_lines):
    text = open(path, encoding="utf-8").read().split("\n")
    try:
        i = next(n for n, l in enumerate(text) if l.startswith(begin.split(" (")[0]))
        j = next(n for n, l in enumerate(text) if n > i and l.startswith(end))
    except StopIteration:
        raise SystemExit("%s: no %s … %s block" % (path, begin, end))
    text[i:j + 1] = new_lines
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(text))


def update_readmes(units, all_units):
    table, tot = readme_table(units, all_units)
    replace_block(os.path.join(HERE, "README.md"), TABLE_BEGIN, TABLE_END, table)
    top = os.path.join(HERE, "..", "..", "README.md")
    text = open(top, encoding="utf-8").read()
    count = ("kvlab-server passes %s of the %s tests that redis-server passes (%d allow-listed, %d "
             "pending other work)" % (format(tot["passed_both"], ","),
                                      format(tot["redis_passes"], ","), tot["allow_listed"],
                                      tot["pending"]))
    if not COUNT_RX.search(text):
        raise SystemExit("%s: no <!-- redis-suite --> ... <!-- /redis-suite --> marks" % top)
    with open(top, "w", encoding="utf-8") as f:
        f.write(COUNT_RX.sub(lambda m: m.group(1) + count + m.group(2), text, count=1))


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def write_csv(path, rows):
    if not rows:
        open(path, "w").close()
        return
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


# --------------------------------------------------------------------------------------------

def fetch(opts):
    status = subprocess.call(["bash", os.path.join(HERE, "fetch.sh"),
                              os.path.dirname(os.path.abspath(opts.src))])
    return status == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("server", nargs="?", default=os.environ.get("KVLAB_SERVER"),
                    help="kvlab-server binary")
    ap.add_argument("--src", default=DEFAULT_SRC, help="the unpacked Redis source (default %(default)s)")
    ap.add_argument("--fetch", action="store_true",
                    default=os.environ.get("KVLAB_REDIS_SUITE_FETCH") == "1",
                    help="fetch the source with fetch.sh when missing (root)")
    ap.add_argument("--units", default="all", help="fast, all, or a comma list (type/string,…)")
    ap.add_argument("--jobs", type=int, default=1, help="units at once (each runs 2 servers, 2 tclsh)")
    ap.add_argument("--out", default="redis-suite-results", help="logs, records, CSVs")
    ap.add_argument("--threads", type=int, default=2, help="kvlab-server --threads")
    ap.add_argument("--kvlab-arg", action="append", default=[], help="extra kvlab-server flag")
    ap.add_argument("--slow-factor", type=float, default=3.0)
    ap.add_argument("--slow-floor-ms", type=float, default=50.0)
    ap.add_argument("--no-confirm-slow", dest="confirm_slow", action="store_false",
                    help="count a test slow after one pass (see confirm_slow())")
    ap.add_argument("--hang-floor", type=float, default=10.0,
                    help="seconds a kvlab test may run, at least, before it counts as hung")
    ap.add_argument("--test-timeout", type=float, default=180.0,
                    help="seconds a test may run when Redis's time for it is not known yet")
    ap.add_argument("--idle-timeout", type=float, default=60.0,
                    help="seconds the framework may run a block's code between two tests")
    ap.add_argument("--unit-timeout", type=float, default=1500.0)
    ap.add_argument("--max-reruns", type=int, default=12,
                    help="reruns of a unit after a hang or crash, each skipping the tests so far")
    ap.add_argument("--allowlist", default=os.path.join(HERE, "allowlist.txt"))
    ap.add_argument("--pending", default=os.path.join(HERE, "pending.txt"))
    ap.add_argument("--update-readme", action="store_true",
                    help="rewrite README.md's table and the top README's count (all units only)")
    ap.add_argument("--readme-from", metavar="DIR", help="rewrite the READMEs from DIR/summary.csv")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    ap.add_argument("--run-skipped", action="store_true",
                    help="run on kvlab-server also the list entries marked skip (to find stale ones)")
    ap.add_argument("--list", action="store_true")
    opts = ap.parse_args()

    opts.src = os.path.abspath(opts.src)
    have_src = os.path.exists(os.path.join(opts.src, "tests", "test_helper.tcl"))
    if opts.readme_from:
        units = read_csv(os.path.join(opts.readme_from, "summary.csv"))
        update_readmes(units, units_of(opts.src) if have_src else [u["unit"] for u in units])
        return 0
    if not have_src and opts.fetch:
        have_src = fetch(opts) and os.path.exists(os.path.join(opts.src, "tests", "test_helper.tcl"))
    if not have_src:
        print("redis-suite: no Redis source at %s; skipped. Fetch it once (as root) with:\n"
              "  tests/redis-suite/fetch.sh %s" % (opts.src, os.path.dirname(opts.src)))
        return 77
    all_units = units_of(opts.src)
    if opts.list:
        for u in all_units:
            print(u + ("  (fast)" if u in FAST else ""))
        return 0
    opts.redis_server = shutil.which("redis-server")
    opts.tclsh = shutil.which("tclsh8.6") or shutil.which("tclsh")
    if not opts.redis_server or not opts.tclsh:
        print("redis-suite: redis-server or tclsh not installed; skipped")
        return 77
    if not opts.server or not os.access(opts.server, os.X_OK):
        print("redis-suite: no kvlab-server (pass its path or set KVLAB_SERVER)")
        return 1
    opts.server = os.path.abspath(opts.server)
    if opts.units == "fast":
        units = [u for u in all_units if u in FAST]
    elif opts.units == "all":
        units = all_units
    else:
        units = [u.strip() for u in opts.units.split(",") if u.strip()]
        unknown = [u for u in units if u not in all_units]
        if unknown:
            raise SystemExit("redis-suite: unknown units %s (see --list)" % ", ".join(unknown))
    opts.out = os.path.abspath(opts.out)
    os.makedirs(opts.out, exist_ok=True)
    allow = load_list(opts.allowlist)
    pending = load_list(opts.pending)
    opts.skip_on_kvlab = {}
    for e in allow + pending:
        if e.unit not in all_units:
            raise SystemExit("%s: unknown unit %s" % (e.where(), e.unit))
        if e.skip and not opts.run_skipped:
            name = "/" + e.pattern if e.pattern is not None else e.test
            opts.skip_on_kvlab.setdefault(e.unit, set()).add((name, "*"))

    logf = open(os.path.join(opts.out, "redis-suite.log"), "w", encoding="utf-8")
    lock = threading.Lock()

    def log(line):
        with lock:
            print(line)
            sys.stdout.flush()
            logf.write(line + "\n")
            logf.flush()

    log("redis-suite: %s against %s (%s), units: %s, jobs %d"
        % (opts.server, subprocess.run([opts.redis_server, "--version"], capture_output=True,
                                       text=True).stdout.split()[2], opts.src, len(units), opts.jobs))
    t0 = time.monotonic()

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    ex = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs))
    try:
        results = list(ex.map(lambda u: run_unit(opts, u, log), units))
        # One unit at a time, after all of them: see confirm_slow().
        for res in results:
            if opts.confirm_slow:
                confirm_slow(opts, res, log)
            elif res.confirm is not None and not opts.keep:
                shutil.rmtree(res.confirm["wd_r"], ignore_errors=True)
                shutil.rmtree(res.confirm["wd_k"], ignore_errors=True)
    except KeyboardInterrupt:
        log("redis-suite: interrupted; stopping the servers and runs it started")
        stop_everything()
        os._exit(130)
    ex.shutdown()
    elapsed = time.monotonic() - t0

    units_rows, tests_rows = summarize(opts, results, allow, pending)
    write_csv(os.path.join(opts.out, "summary.csv"), units_rows)
    write_csv(os.path.join(opts.out, "tests.csv"), tests_rows)

    failures = [t for t in tests_rows if t["outcome"] == "fail"]
    listed = [t for t in tests_rows if t["outcome"] in ("allow", "pending")]
    ran = set(units)
    stale = [e for e in allow + pending if e.unit in ran and not e.used and not e.flaky]
    log("")
    for t in listed:
        log("listed    %-14s %-9s %s (%s)" % (t["unit"], t["kvlab"], t["test"], t["list_entry"]))
    for t in failures:
        log("FAIL      %-14s %-9s %s%s" % (t["unit"], t["kvlab"], t["test"],
                                          ": " + t["message"][:200] if t["message"] else ""))
    for e in stale:
        why = "now passes on kvlab" if e.passes else "matches no test that Redis passes"
        log("STALE     %s %s | %s: %s; remove it" % (e.where(), e.unit, e.test, why))
    tot = {k: sum(int(u[k]) for u in units_rows) for k in
           ("redis_passes", "passed_both", "kvlab_only", "allow_listed", "pending")}
    log("")
    log("redis-suite: %d units in %.0f s; kvlab-server passed %d of the %d tests redis-server "
        "passed: %d kvlab-only failures, %d allow-listed, %d pending; %d stale list entries. "
        "Summary: %s" % (len(units), elapsed, tot["passed_both"], tot["redis_passes"],
                         tot["kvlab_only"], tot["allow_listed"], tot["pending"], len(stale),
                         os.path.join(opts.out, "summary.csv")))
    if opts.update_readme:
        if set(units) != set(all_units):
            log("redis-suite: --update-readme needs every unit (--units all); READMEs unchanged")
        else:
            update_readmes(units_rows, all_units)
    broken = [r.unit for r in results if r.broken]
    if broken:
        log("redis-suite: the framework failed on Redis for %s" % ", ".join(broken))
    return 1 if failures or stale or broken else 0


if __name__ == "__main__":
    sys.exit(main())

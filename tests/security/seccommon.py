# The harness of tests/security: each `cases_<area>.py` module holds one function per public
# Redis/Valkey security advisory (or per hostile-client finding) whose class applies to kvlab. A
# case gets a Context with a fresh connection to a kvlab-server (and to a redis-server 7.0 oracle
# when one is on PATH), reproduces the advisory's trigger, and asserts what the server must answer;
# after every case the runner checks that the server still answers PING within a bound, so a crash
# or a freeze fails the case that caused it. Python's standard library only.
#
# A case declares its table row as attributes (see `advisory` below); README.md's table must list
# every case (run.py --check-readme fails otherwise), so the table cannot drift from the code.
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "soak"))
from soakcommon import Client, Error, free_port  # noqa: E402,F401

SKIP = 77


def advisory(ident, fixed_in, path):
    """Marks a case: `ident` (CVE-…, GHSA-… or a finding's name), the Redis/Valkey release that
    fixed it (or "-" for a kvlab-only finding), and kvlab's code path it exercises."""

    def mark(fn):
        fn.advisory = ident
        fn.fixed_in = fixed_in
        fn.code_path = path
        return fn

    return mark


class CaseFailed(Exception):
    pass


def expect(ok, what):
    if not ok:
        raise CaseFailed(what)


class Process:
    """A server child on a free loopback port, stopped by pid."""

    def __init__(self, argv_for_port, name):
        self.name = name
        self.proc = None
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(argv_for_port(self.port), stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
            if self._wait_ready():
                return
            self.stop()
        raise RuntimeError(name + " did not start")

    def _wait_ready(self):
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return True
            except OSError:
                time.sleep(0.02)
        return False

    def alive(self, within=5.0):
        """True when the process runs and answers PING within `within` seconds."""
        if self.proc.poll() is not None:
            return False
        try:
            c = Client(self.port, timeout=within)
            ok = c.cmd("PING") == "PONG"
            c.close()
            return ok
        except (OSError, ConnectionError):
            return False

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def start_kvlab(binary, extra=()):
    return Process(lambda p: [binary, "--port", str(p), "--enable-debug-command", "yes"] +
                   list(extra), "kvlab-server")


def start_redis():
    """The oracle, or None when redis-server is not installed."""
    exe = shutil.which("redis-server")
    if exe is None:
        return None
    return Process(lambda p: [exe, "--port", str(p), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--enable-debug-command", "yes"],
                   "redis-server")


class Context:
    """What a case works with: `kv` and `redis` (None without the oracle) are fresh connections;
    `connect(server)` opens more."""

    def __init__(self, kv_proc, redis_proc, timeout):
        self.kv_proc = kv_proc
        self.redis_proc = redis_proc
        self.timeout = timeout
        self.kv = Client(kv_proc.port, timeout=timeout)
        self.redis = Client(redis_proc.port, timeout=timeout) if redis_proc else None

    def connect(self, which="kv"):
        proc = self.kv_proc if which == "kv" else self.redis_proc
        return Client(proc.port, timeout=self.timeout)

    def both(self, *args):
        """The reply of kvlab and of the oracle (None without one) to one command."""
        a = self.kv.cmd(*args)
        b = self.redis.cmd(*args) if self.redis else None
        return a, b

    def close(self):
        self.kv.close()
        if self.redis:
            self.redis.close()

# Shared pieces of the soak, storm and fault tests (tests/soak/*_test.py): a kvlab-server child
# on a free loopback port, stopped by pid; a small RESP client and a RESP reply parser that says
# whether a received byte stream is made only of complete replies; /proc figures (RSS, CPU time);
# percentiles. Python's standard library only (the tests must hold thousands of sockets, which a
# thread per client would not).
import os
import resource
import signal
import socket
import subprocess
import sys
import time

SKIP = 77


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(SKIP)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def raise_nofile(want):
    """Raises this process's RLIMIT_NOFILE soft limit towards `want`; returns what it got."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Server:
    """A kvlab-server child process. `nofile` caps its RLIMIT_NOFILE (soft and hard) before exec."""

    def __init__(self, binary, args=(), nofile=None, log=None):
        self.binary = binary
        self.proc = None
        for _ in range(5):
            self.port = free_port()
            pre = None
            if nofile is not None:
                def pre(n=nofile):
                    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
            self.log = open(log, "wb") if log else subprocess.DEVNULL
            # KVLAB_SERVER_MODE: the suite's execution mode (tests/meson.build, server_modes).
            mode = os.environ.get("KVLAB_SERVER_MODE")
            mode_args = ["--mode", mode] if mode and "--mode" not in args else []
            self.proc = subprocess.Popen(
                [binary, "--port", str(self.port)] + list(args) + mode_args,
                stdout=self.log, stderr=self.log, preexec_fn=pre)
            if self._wait_ready():
                return
            self.stop(signal.SIGKILL)
        raise RuntimeError("kvlab-server did not start")

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

    @property
    def pid(self):
        return self.proc.pid

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Sends `sig` and waits; SIGKILL after `timeout` s. Returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def rss(self):
        with open("/proc/%d/statm" % self.pid) as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGESIZE")

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop(signal.SIGKILL)


def encode(*args):
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


class Error(str):
    """An error reply."""


def parse_one(buf, pos):
    """Parses one RESP2 reply at buf[pos:]; returns (reply, next pos) or None if incomplete.
    Raises ValueError on bytes that are no RESP (a half-written or corrupted stream)."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        return None
    kind, line = buf[pos:pos + 1], buf[pos + 1:end]
    nxt = end + 2
    if kind == b"+":
        return line.decode("latin1"), nxt
    if kind == b"-":
        return Error(line.decode("latin1")), nxt
    if kind == b":":
        return int(line), nxt
    if kind == b"$":
        n = int(line)
        if n < 0:
            return None, nxt
        if len(buf) < nxt + n + 2:
            return None
        if buf[nxt + n:nxt + n + 2] != b"\r\n":
            raise ValueError("bulk not terminated at %d" % (nxt + n))
        return bytes(buf[nxt:nxt + n]), nxt + n + 2
    if kind == b"*":
        n = int(line)
        if n < 0:
            return None, nxt
        out = []
        for _ in range(n):
            r = parse_one(buf, nxt)
            if r is None:
                return None
            out.append(r[0])
            nxt = r[1]
        return out, nxt
    raise ValueError("not RESP at byte %d: %r" % (pos, bytes(buf[pos:pos + 20])))


def parse_all(buf):
    """All complete replies in buf, and the number of bytes left over (an incomplete tail)."""
    out, pos = [], 0
    while pos < len(buf):
        r = parse_one(buf, pos)
        if r is None:
            break
        out.append(r[0])
        pos = r[1]
    return out, len(buf) - pos


class Client:
    """A blocking RESP client on one socket (timeouts in seconds)."""

    def __init__(self, port, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def send(self, *cmds):
        self.sock.sendall(b"".join(encode(*c) for c in cmds))

    def read(self, n=1):
        out = []
        pos = 0
        while len(out) < n:
            r = parse_one(self.buf, pos)
            if r is None:
                data = self.sock.recv(1 << 20)
                if not data:
                    raise ConnectionError("server closed the connection")
                self.buf += data
                continue
            out.append(r[0])
            pos = r[1]
            if pos > (1 << 20):
                del self.buf[:pos]
                pos = 0
        del self.buf[:pos]
        return out

    def cmd(self, *args):
        self.send(args)
        return self.read(1)[0]

    def close(self):
        self.sock.close()


def info(port, section="everything"):
    c = Client(port)
    text = c.cmd("INFO", section).decode()
    c.close()
    out = {}
    for line in text.split("\r\n"):
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def percentile(xs, p):
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100.0 * len(s)))]


def slope(points):
    """Least-squares slope of [(x, y)]."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


class Checks:
    """Collects named checks; prints each, and exit(1) at the end when one failed."""

    def __init__(self):
        self.failed = []

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            self.failed.append(what)
        return ok

    def finish(self):
        if self.failed:
            print("%d check(s) failed" % len(self.failed))
            sys.exit(1)
        print("all checks passed")
        sys.exit(0)

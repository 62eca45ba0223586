#!/usr/bin/python3
# Connection storms against a real kvlab-server ("Soak and faults"). Each scenario stays
# within a documented limit (server/README.md, "Limits under storms and faults"), and a probe
# client (`kvlab load` at 500 requests/s, open loop, so a stall shows in its p99) keeps its
# latency: p99 during the storm at most max(250 ms, 20 x the p99 before it; 1,500 ms for the
# 10,000 connections, whose opening saturates a CPU of the machine).
#   1. 10,000 concurrent connections (RLIMIT_NOFILE raised, or the scenario is skipped with a
#      message): all served; one past maxclients gets exactly `-ERR max number of clients reached`.
#   2. 100,000 connections opened, used once and closed (half with a reset), in bounded time; the
#      client count returns to its start and RSS stays within 32 MiB of it.
#   3. Slowloris: 2,000 clients send a PING one byte a second; the probe keeps its latency, and
#      every one of them gets +PONG once its command is whole.
#   4. A client that stops reading while asking for 1 MiB replies: the server's RSS stays bounded
#      with the default `normal 0 0 0`; with `client-output-buffer-limit normal 2mb 0 0` the
#      client is closed and kvlab_client_output_buffer_limit_disconnections (INFO kvlab) counts it.
#   5. client-query-buffer-limit 1mb: a client sending a 2 MB argument is closed; others are not.
# Usage: storms_test.py KVLAB_SERVER [scenario...]
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soakcommon import Checks, Client, Server, encode, info, raise_nofile  # noqa: E402

binary = sys.argv[1]
cli = os.path.join(os.path.dirname(os.path.dirname(binary)), "tools", "cli", "kvlab")
checks = Checks()


class Probe:
    """`kvlab load` at 500 GET/s on one connection for `seconds`, in the background."""

    def __init__(self, port, seconds):
        self.out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
        self.err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            [cli, "load", "--port", str(port), "--rate", "500", "--duration", "%ds" % seconds,
             "--keys", "100", "--format", "json", "--out", self.out],
            stdout=subprocess.DEVNULL, stderr=self.err)

    def p99_ms(self):
        """The whole run's p99 in ms; prints the p99 of each second (kvlab load's lines)."""
        self.proc.wait(120)
        with open(self.out) as f:
            step = json.load(f)["steps"][0]
        os.unlink(self.out)
        self.err.seek(0)
        per_second = re.findall(r"p99\s+([\d.]+) ms", self.err.read())
        print("  probe p99 per second, ms:", " ".join(per_second), flush=True)
        return step["latency_us"]["p99"] / 1000.0, step


def probe_bound(before, floor=250.0):
    return max(floor, 20 * before)


def baseline(port):
    p99, _ = Probe(port, 3).p99_ms()
    return p99


def ten_thousand():
    n = 10000
    got = raise_nofile(n + 500)
    if got < n + 300:
        print("SKIP 10,000 connections: RLIMIT_NOFILE is %d and cannot be raised to %d"
              % (got, n + 300))
        return
    with Server(binary, ["--threads", "2", "--maxclients", str(n + 1)]) as srv:
        before = baseline(srv.port)
        probe = Probe(srv.port, 12)  # the probe's connection is one of the n + 1
        time.sleep(0.5)
        t0 = time.time()
        socks = []
        for _ in range(n):
            socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
        took = time.time() - t0
        for s in socks:
            s.sendall(encode("PING"))
        pongs = 0
        for s in socks:
            try:
                pongs += s.recv(16) == b"+PONG\r\n"
            except OSError:
                pass
        extra = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        rejected = extra.recv(100)
        extra.close()
        during, _ = probe.p99_ms()
        checks.check(pongs == n, "10,000 connections: all answered PING (%d, opened in %.1f s)"
                     % (pongs, took))
        checks.check(rejected == b"-ERR max number of clients reached\r\n",
                     "10,000 connections: one more gets Redis's maxclients error %r" % rejected)
        # The floor is higher here: opening 10,000 connections from this script saturates a CPU,
        # and on a shared 2-vCPU VM the probe then saw up to 1.2 s (the server's threads were
        # below 30 % CPU meanwhile). It still fails a server that stops serving for seconds.
        checks.check(during <= probe_bound(before, 1500.0),
                     "10,000 connections: probe p99 %.2f ms during, %.2f ms before (bound %.0f ms)"
                     % (during, before, probe_bound(before, 1500.0)))
        for s in socks:
            s.close()


def churn():
    with Server(binary, ["--threads", "2"]) as srv:
        rss0 = srv.rss()
        before = baseline(srv.port)
        probe = Probe(srv.port, 10)
        time.sleep(0.3)
        n, ok = 100000, 0
        t0 = time.time()
        budget = 150
        linger_rst = (1).to_bytes(4, "little") + (0).to_bytes(4, "little")
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            if i % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger_rst)
            s.sendall(encode("PING"))
            ok += s.recv(16) == b"+PONG\r\n"
            s.close()
            if time.time() - t0 > budget:
                break
        took = time.time() - t0
        during, _ = probe.p99_ms()
        time.sleep(0.5)
        clients = int(info(srv.port, "clients")["connected_clients"])
        rss1 = srv.rss()
        checks.check(ok == n, "churn: %d of 100,000 connections served in %.1f s (bound %d s)"
                     % (ok, took, budget))
        checks.check(clients == 1, "churn: connected_clients back to 1 (%d)" % clients)
        checks.check(rss1 - rss0 < 32 << 20, "churn: RSS %.1f -> %.1f MiB (bound +32 MiB)"
                     % (rss0 / 2**20, rss1 / 2**20))
        checks.check(during <= probe_bound(before),
                     "churn: probe p99 %.2f ms during, %.2f ms before (bound %.0f ms)"
                     % (during, before, probe_bound(before)))


def slowloris():
    n = 2000
    raise_nofile(n + 500)
    with Server(binary, ["--threads", "2"]) as srv:
        before = baseline(srv.port)
        socks = [socket.create_connection(("127.0.0.1", srv.port), timeout=10) for _ in range(n)]
        probe = Probe(srv.port, 8)
        msg = encode("PING")
        cpu0 = srv.cpu_seconds()
        for k in range(8):  # one byte a second, for 8 s
            t = time.time()
            for s in socks:
                s.send(msg[k:k + 1])
            time.sleep(max(0, 1 - (time.time() - t)))
        cpu = srv.cpu_seconds() - cpu0
        during, _ = probe.p99_ms()
        for s in socks:
            s.sendall(msg[8:])
        pongs = 0
        for s in socks:
            try:
                pongs += s.recv(16) == b"+PONG\r\n"
            except OSError:
                pass
        checks.check(during <= probe_bound(before),
                     "slowloris: probe p99 %.2f ms during, %.2f ms before (bound %.0f ms)"
                     % (during, before, probe_bound(before)))
        checks.check(cpu < 2.0, "slowloris: server CPU %.2f s over 8 s (bound 2 s)" % cpu)
        checks.check(pongs == n, "slowloris: %d of %d slow clients answered once whole"
                     % (pongs, n))
        for s in socks:
            s.close()


def non_reader():
    with Server(binary, ["--threads", "2"]) as srv:
        c = Client(srv.port)
        c.cmd("SET", "big", b"x" * (1 << 20))
        before = baseline(srv.port)
        rss0 = srv.rss()
        # Default `normal 0 0 0`: 2,000 GETs of 1 MiB (2 GiB of replies), never read.
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        probe = Probe(srv.port, 5)
        s.setblocking(False)
        req = encode("GET", "big") * 2000
        t_end = time.time() + 4
        while req and time.time() < t_end:
            try:
                req = req[s.send(req):]
            except BlockingIOError:
                time.sleep(0.05)
        time.sleep(1)
        rss1 = srv.rss()
        during, _ = probe.p99_ms()
        checks.check(rss1 - rss0 < 64 << 20,
                     "non-reader, normal 0 0 0: RSS %.1f -> %.1f MiB for 2 GiB of unread replies "
                     "(bound +64 MiB: the read pause at 4 MiB)" % (rss0 / 2**20, rss1 / 2**20))
        checks.check(during <= probe_bound(before),
                     "non-reader: probe p99 %.2f ms during, %.2f ms before (bound %.0f ms)"
                     % (during, before, probe_bound(before)))
        s.close()
        # A hard limit for normal clients closes it.
        checks.check(c.cmd("CONFIG", "SET", "client-output-buffer-limit", "normal 2mb 0 0") == "OK",
                     "CONFIG SET client-output-buffer-limit normal 2mb 0 0")
        got = c.cmd("CONFIG", "GET", "client-output-buffer-limit")[1]
        checks.check(got.startswith(b"normal 2097152 0 0 "), "CONFIG GET shows it: %r" % got)
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(encode("GET", "big") * 8)
        closed, t_end = False, time.time() + 5
        while time.time() < t_end:
            try:
                if s.recv(1 << 20) == b"":
                    closed = True
                    break
            except ConnectionResetError:
                closed = True
                break
            except socket.timeout:
                break
        s.close()
        stat = int(info(srv.port, "kvlab")["kvlab_client_output_buffer_limit_disconnections"])
        checks.check(closed and stat == 1, "non-reader, normal 2mb 0 0: closed (%s), "
                     "kvlab_client_output_buffer_limit_disconnections %d" % (closed, stat))
        checks.check(c.cmd("PING") == "PONG", "non-reader: other clients unaffected")


def query_limit():
    with Server(binary, ["--threads", "2"]) as srv:
        c = Client(srv.port)
        checks.check(c.cmd("CONFIG", "SET", "client-query-buffer-limit", "1mb") == "OK",
                     "CONFIG SET client-query-buffer-limit 1mb")
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        closed = False
        try:
            s.sendall(encode("SET", "k", b"y" * 2000000))
            closed = s.recv(100) == b""
        except (ConnectionResetError, BrokenPipeError):
            closed = True
        except socket.timeout:
            pass
        s.close()
        checks.check(closed, "query buffer: a 2 MB argument over a 1 MB limit closes the client")
        checks.check(c.cmd("SET", "k", b"y" * 500000) == "OK" and c.cmd("STRLEN", "k") == 500000,
                     "query buffer: other clients, and arguments below the limit, unaffected")


for name, fn in [("10k", ten_thousand), ("churn", churn), ("slowloris", slowloris),
                 ("non-reader", non_reader), ("query-limit", query_limit)]:
    if len(sys.argv) > 2 and name not in sys.argv[2:]:
        continue
    print("== " + name, flush=True)
    try:
        fn()
    except Exception as e:  # one scenario's crash is its failure, the next still runs
        checks.check(False, "%s raised %r" % (name, e))
checks.finish()

# Area `protocol`: the RESP boundary. Replies that echo a client's bytes must stay one line,
# announced lengths must be checked before anything is allocated, the accept loop must shrug off
# a connection that failed while it waited, and kvlab's cluster configuration (its counterpart of
# Redis's cluster bus) must refuse malformed input without crashing.
import os
import signal
import socket
import subprocess
import tempfile
import time

from seccommon import Client, advisory, expect, free_port


def raw_exchange(port, payload, timeout=2.0):
    """Sends payload (then PING) on a fresh connection; returns every byte the server sent
    until +PONG arrived, the server closed, or timeout passed."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(payload + b"*1\r\n$4\r\nPING\r\n")
    got, deadline = b"", time.time() + timeout
    try:
        while time.time() < deadline and not got.endswith(b"+PONG\r\n"):
            d = s.recv(65536)
            if not d:
                break
            got += d
    except OSError:
        pass
    s.close()
    return got


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class OwnServer:
    """A kvlab-server of the case's own (the binary the runner started, other flags or
    environment), on a free loopback port, stopped by pid."""

    def __init__(self, ctx, extra=(), env=None, stderr=None):
        argv = list(ctx.kv_proc.proc.args)
        binary = argv[0]
        self.port = free_port()
        self.proc = subprocess.Popen([binary, "--port", str(self.port)] + list(extra),
                                     stdout=subprocess.DEVNULL,
                                     stderr=stderr or subprocess.DEVNULL,
                                     env=dict(os.environ, **(env or {})))
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.02)
        self.stop()
        raise RuntimeError("own kvlab-server did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


INJECT = b"X\r\n+INJECTED"


@advisory("CVE-2025-67733", "Redis commit 6910256 (Debian's 7.0.15 patch)",
          "server/protocol/reply.hpp (error, simple)")
def case_error_and_status_replies_strip_crlf(ctx):
    """Every error or status reply that echoes a client's bytes has its CR and LF replaced by
    blanks, so that one reply stays one line: each trigger below answers exactly one reply
    before the PONG that follows it, byte for byte as Redis 7.0 (Debian's patched build)."""
    scripts = [b"return redis.error_reply('X\\r\\n+INJECTED')",
               b"return redis.status_reply('X\\r\\n+INJECTED')",
               b"error(redis.error_reply('X\\r\\n+INJECTED'))",
               b"return {err='X\\r\\n+INJECTED'}", b"return {ok='X\\r\\n+INJECTED'}",
               b"error('X\\r\\n+INJECTED')"]
    triggers = [encode(b"EVAL", s, b"0") for s in scripts] + [
        encode(b"FUNCTION", b"LIST", INJECT), encode(INJECT),
        encode(b"CONFIG", b"SET", INJECT, b"1"), encode(b"CLIENT", INJECT),
        encode(b"OBJECT", INJECT, b"k"), encode(b"MEMORY", INJECT),
        encode(b"SCRIPT", INJECT), encode(b"LATENCY", INJECT),
        encode(b"XREADGROUP", b"GROUP", INJECT, b"c", b"STREAMS", b"s", b">"),
        encode(b"CLIENT", b"SETNAME", INJECT), encode(b"HELLO", INJECT)]
    for t in triggers:
        got = raw_exchange(ctx.kv_proc.port, t)
        head = got[:-len(b"+PONG\r\n")]
        expect(got.endswith(b"+PONG\r\n") and head.count(b"\r\n") == 1 and
               head[:1] in (b"-", b"+"), "%r answered %r" % (t[:60], got[:200]))
        expect(not head.startswith(b"+INJECTED") and b"\r\n+INJECTED" not in got,
               "%r let the client inject a reply: %r" % (t[:60], got[:200]))
        if ctx.redis:
            theirs = raw_exchange(ctx.redis_proc.port, t)
            expect(theirs == got, "%r: redis %r, kvlab %r" % (t[:60], theirs[:200], got[:200]))


@advisory("CVE-2021-41099", "Redis 6.2.6, 6.0.16, 5.0.14",
          "server/protocol/resp_parser.cpp, server/commands/strings.cpp, bitmaps.cpp")
def case_proto_max_bulk_len(ctx):
    """Bulk lengths are checked against proto-max-bulk-len on the announced value, before
    anything is allocated, with no overflow for lengths near 2^63; string commands refuse
    results past it the same way; CONFIG SET changes it as in Redis (1mb below, and the same
    checks then hold at 1 MiB). Replies byte for byte as Redis. With the limit at 2^63 - 1 (the
    misconfiguration of the advisory) a SETRANGE, SETBIT or BITFIELD that cannot be allocated
    answers an error and the key stays usable (Redis aborts there: kvlab only)."""
    protocol = [b"*2\r\n$3\r\nGET\r\n$536870913\r\n",
                b"*2\r\n$3\r\nGET\r\n$9223372036854775807\r\n",
                b"*2\r\n$3\r\nGET\r\n$9223372036854775808\r\n",
                b"*2\r\n$3\r\nGET\r\n$-2\r\n",
                b"*9223372036854775807\r\n", b"*2147483648\r\n"]
    commands = [(b"SETRANGE", b"k", b"536870912", b"x"),
                (b"SETRANGE", b"k", b"9223372036854775807", b"x"),
                (b"SETRANGE", b"k", b"536870911", b"xy"),
                (b"SETBIT", b"k", b"4294967296", b"1"),
                (b"BITFIELD", b"k", b"SET", b"u8", b"4294967296", b"1"),
                (b"GETRANGE", b"k", b"0", b"9223372036854775807")]
    rss0 = _rss(ctx.kv_proc.proc.pid)
    for payload in protocol + [encode(*c) for c in commands]:
        got = raw_exchange(ctx.kv_proc.port, payload)
        expect(got.startswith(b"-") or got.startswith(b"$"), "%r answered %r" % (payload, got))
        if ctx.redis:
            theirs = raw_exchange(ctx.redis_proc.port, payload)
            expect(theirs == got, "%r: redis %r, kvlab %r" % (payload, theirs, got))
    grown = _rss(ctx.kv_proc.proc.pid) - rss0
    expect(grown < 64 << 20, "RSS grew by %d bytes" % grown)
    expect(ctx.kv.cmd("EXISTS", "k") == 0, "no oversized value was stored")
    # A lower limit, set at run time.
    at_1mb = [encode(b"CONFIG", b"SET", b"proto-max-bulk-len", b"100"),
              encode(b"CONFIG", b"SET", b"proto-max-bulk-len", b"1mb"),
              encode(b"CONFIG", b"GET", b"proto-max-bulk-len"),
              encode(b"SETRANGE", b"k", b"1048576", b"x"), encode(b"SETRANGE", b"k", b"1048575", b"x"),
              encode(b"APPEND", b"k", b"y"), encode(b"SETBIT", b"k", b"8388608", b"1"),
              encode(b"BITFIELD", b"k", b"SET", b"u8", b"8388608", b"1"),
              b"*2\r\n$3\r\nGET\r\n$1048577\r\n", encode(b"DEL", b"k")]
    try:
        for payload in at_1mb:
            got = raw_exchange(ctx.kv_proc.port, payload)
            if ctx.redis:
                theirs = raw_exchange(ctx.redis_proc.port, payload)
                expect(theirs == got, "%r: redis %r, kvlab %r" % (payload, theirs, got))
    finally:
        ctx.kv.cmd("CONFIG", "SET", "proto-max-bulk-len", "512mb")
        if ctx.redis:
            ctx.redis.cmd("CONFIG", "SET", "proto-max-bulk-len", "512mb")
    expect(ctx.kv.cmd("CONFIG", "GET", "proto-max-bulk-len") == [b"proto-max-bulk-len",
                                                                  b"536870912"], "restored")
    # The advisory's misconfiguration, kvlab only.
    expect(ctx.kv.cmd("CONFIG", "SET", "proto-max-bulk-len", "9223372036854775807") == "OK",
           "CONFIG SET proto-max-bulk-len 2^63 - 1")
    try:
        for args in [("SETRANGE", "k", "4611686018427387904", "x"),
                     ("SETRANGE", "k", "9223372036854775806", "x"),
                     ("SETBIT", "k", "4611686018427387904", "1"),
                     ("BITFIELD", "k", "SET", "u8", "4611686018427387904", "1")]:
            r = ctx.kv.cmd(*args)
            expect(r == "ERR out of memory", "%r answered %r" % (args, r))
        expect(ctx.kv.cmd("SET", "k", "v") == "OK" and ctx.kv.cmd("APPEND", "k", "w") == 2,
               "the key is usable after a failed allocation")
        ctx.kv.cmd("DEL", "k")
    finally:
        ctx.kv.cmd("CONFIG", "SET", "proto-max-bulk-len", "512mb")


def _rss(pid):
    with open("/proc/%d/statm" % pid) as f:
        return int(f.read().split()[1]) * 4096


@advisory("CVE-2025-48367", "Redis 8.0.3, 7.4.5, 7.2.10, 6.2.19 (Debian's 7.0.15 patch)",
          "server/net/worker.cpp (accept_all)")
def case_accept_retries_transient_errors(ctx):
    """accept(2) failing for one pending connection (EPROTO and its kin) is retried at once and
    silently: 20,000 injected failures (an LD_PRELOAD shim, tests/security/accept_fault.cpp)
    neither delay the clients that connect meanwhile nor write a log line each."""
    lib = os.environ.get("KVLAB_ACCEPT_FAULT_LIB")
    if not lib or not os.path.exists(lib):
        print("     (skipped: KVLAB_ACCEPT_FAULT_LIB not set; meson test sets it)")
        return
    log = tempfile.NamedTemporaryFile(prefix="kvlab-accept-fault-", delete=False)
    srv = None
    try:
        srv = OwnServer(ctx, ["--threads", "2"],
                        env={"LD_PRELOAD": lib, "KVLAB_ACCEPT_FAULTS": "20000"}, stderr=log)
        t0 = time.time()
        answered = 0
        for _ in range(20):
            c = Client(srv.port, timeout=5)
            answered += c.cmd("PING") == "PONG"
            c.close()
        took = time.time() - t0
        log.flush()
        log.seek(0)
        lines = [ln for ln in log.read().split(b"\n") if b"accept" in ln]
        expect(answered == 20, "%d of 20 clients answered" % answered)
        expect(took < 5, "20 connections took %.2f s" % took)
        expect(len(lines) < 10, "%d log lines about accept errors" % len(lines))
    finally:
        if srv:
            srv.stop()
        log.close()
        os.unlink(log.name)


@advisory("CVE-2026-21863", "Valkey commit 4169393 (Debian's 7.0.15 backport)",
          "server/features/cluster.cpp (ClusterConfig::parse)")
def case_cluster_config_malformed(ctx):
    """kvlab has no cluster bus (nodes do not gossip); the input that plays its role is the
    configuration pushed with KVLAB CLUSTER CONFIG. Malformed ones (truncated, counts and slot
    ranges that do not fit, deep nesting, huge strings) answer an error, change nothing, and the
    node keeps serving."""
    srv = OwnServer(ctx, ["--threads", "2", "--cluster-mode", "yes",
                          "--cluster-node-id", "a" * 40])
    try:
        c = Client(srv.port, timeout=10)
        node = '{"id": "%s", "ip": "127.0.0.1", "port": %d}' % ("a" * 40, srv.port)
        good = ('{"epoch": 1, "shards": [{"slot_ranges": [{"start": 0, "end": 16383}], '
                '"master": %s, "replicas": []}]}' % node)
        bad = [good[:len(good) // 2], good.replace("16383", "16384"),
               good.replace('"start": 0', '"start": -1'),
               good.replace("16383", "99999999999999999999"),
               good.replace('"replicas": []', '"replicas": ' + "[" * 100000 + "]" * 100000),
               "[" * 1000000, '{"epoch": 1, "shards": [' + ("{}," * 100000) + "{}]}",
               good.replace("127.0.0.1", "x" * 1000000), "\x00" * 1000, "",
               good.replace('"epoch": 1', '"epoch": "1"'),
               '{"epoch": 1, "shards": []}']
        for text in bad:
            r = c.cmd("KVLAB", "CLUSTER", "CONFIG", text)
            expect(isinstance(r, str) and not r == "OK",
                   "%r... answered %r" % (text[:40], r))
        info = c.cmd("CLUSTER", "INFO").decode()
        expect("cluster_state:fail" in info, "a refused configuration changed the state")
        expect(c.cmd("KVLAB", "CLUSTER", "CONFIG", good) == "OK", "the good configuration")
        expect(c.cmd("SET", "k", "v") == "OK", "the node serves")
        c.close()
    finally:
        srv.stop()

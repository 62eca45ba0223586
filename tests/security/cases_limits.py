# Area `limits`: what one hostile client may make the server hold. Each case drives the hostile
# client until the server closes it (or until a bound that a correct server never reaches), then
# checks that another client is still answered and that the server's RSS stayed bounded. Where
# the oracle behaves the same, the case runs the same trigger against it.
import socket
import time

from seccommon import Client, advisory, expect

MiB = 1 << 20


def rss(proc):
    with open("/proc/%d/statm" % proc.proc.pid) as f:
        return int(f.read().split()[1]) * 4096


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def raw(port, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    s.settimeout(5)
    return s


def push_until_closed(s, chunk, max_bytes, seconds):
    """Sends chunk again and again until the peer closes (True) or max_bytes/seconds pass
    (False). Returns (closed, bytes sent)."""
    sent, deadline = 0, time.time() + seconds
    s.setblocking(False)
    try:
        while sent < max_bytes and time.time() < deadline:
            try:
                # Whole chunks only, however the kernel splits them: a command cut short and
                # sent again from its start would be a protocol error, which closes too.
                at = sent % len(chunk)
                sent += s.send(chunk[at:])
            except BlockingIOError:
                time.sleep(0.002)
            except OSError:
                return True, sent
        s.settimeout(1)
        drain_until = time.time() + 2
        try:
            while time.time() < drain_until:  # what it sent back: EOF or a reset means closed
                if not s.recv(1 << 20):
                    return True, sent
        except (ConnectionResetError, BrokenPipeError):
            return True, sent
        except OSError:
            pass
        return False, sent
    finally:
        s.close()


def with_password(ctx, which, fn):
    """Runs fn(port) while `which` ("kv" or "redis") requires a password ("s3cret"); the
    context's own connection stays authenticated (it was opened without one) and lifts it
    again, so that the runner's liveness PING works."""
    conn = ctx.kv if which == "kv" else ctx.redis
    proc = ctx.kv_proc if which == "kv" else ctx.redis_proc
    expect(conn.cmd("CONFIG", "SET", "requirepass", "s3cret") == "OK", "CONFIG SET requirepass")
    try:
        return fn(proc.port)
    finally:
        conn.cmd("CONFIG", "SET", "requirepass", "")


@advisory("CVE-2025-21605", "Redis 7.4.3, 7.2.8, 6.2.18 / Valkey 8.1.1 (Debian's 7.0.15 patch)",
          "server/net/worker.cpp enforce_obuf_limit")
def case_unauthenticated_output_buffer(ctx):
    """A client that never authenticates and never reads its NOAUTH errors is closed after a
    few KiB of replies, on both servers; before, kvlab held up to its 4 MiB read pause for it,
    so 10,000 such clients could hold 40 GiB."""

    def trigger(port):
        closed, sent = push_until_closed(raw(port, 4096), encode("SET", "x", "5") * 1000,
                                         256 * MiB, 10)
        expect(closed, "unauthenticated non-reader still connected after %d bytes" % sent)
        other = Client(port)
        expect(other.cmd("AUTH", "s3cret") == "OK" and other.cmd("PING") == "PONG",
               "another client is answered")
        other.close()

    rss0 = rss(ctx.kv_proc)
    with_password(ctx, "kv", trigger)
    if ctx.redis:
        with_password(ctx, "redis", trigger)
    # Many at once: what they cost the server in all.
    def many(port):
        socks = [raw(port, 4096) for _ in range(50)]
        req = encode("SET", "x", "5") * 2000
        for s in socks:
            s.setblocking(False)
        deadline = time.time() + 5
        for _ in range(40):
            for s in socks:
                try:
                    s.send(req)
                except OSError:
                    pass
            if time.time() > deadline:
                break
        grown = rss(ctx.kv_proc) - rss0
        for s in socks:
            s.close()
        return grown

    grown = with_password(ctx, "kv", many)
    expect(grown < 64 * MiB, "50 unauthenticated non-readers grew RSS by %.1f MiB" % (grown / MiB))


@advisory("CVE-2021-32675", "Redis 6.2.6, 6.0.16, 5.0.14", "server/protocol/resp_parser.cpp")
def case_unauthenticated_multibulk_and_bulk_length(ctx):
    """Before authentication a request may announce at most 10 arguments and 16 KiB per
    argument; larger announcements answer Redis's protocol errors and close, and no memory is
    reserved for what was announced."""

    def trigger(port):
        replies = []
        for req in (b"*11\r\n", b"*1000000000\r\n",
                    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16385\r\n",
                    b"*1\r\n$536870912\r\n"):
            s = raw(port)
            s.sendall(req)
            got = b""
            try:
                while True:
                    d = s.recv(4096)
                    if not d:
                        break
                    got += d
            except OSError:
                pass
            s.close()
            replies.append(got)
        # Ten arguments of 16 KiB are still parsed (and answered NOAUTH).
        s = raw(port)
        s.sendall(encode(b"DEL", *([b"x" * 16384] * 9)))
        replies.append(s.recv(4096))
        s.close()
        return replies

    got = with_password(ctx, "kv", trigger)
    want = [b"-ERR Protocol error: unauthenticated multibulk length\r\n"] * 2 + [
        b"-ERR Protocol error: unauthenticated bulk length\r\n"] * 2 + [
        b"-NOAUTH Authentication required.\r\n"]
    expect(got == want, "kvlab answered %r" % got)
    if ctx.redis:
        theirs = with_password(ctx, "redis", trigger)
        expect(theirs == got, "redis answered %r, kvlab %r" % (theirs, got))
    # 200 unauthenticated connections that each announce the most they may and send nothing
    # more, and 200 authenticated ones that announce 512 MiB: announcements cost nothing.
    rss0 = rss(ctx.kv_proc)

    def hold(port):
        socks = []
        for i in range(200):
            s = raw(port)
            s.sendall(b"*10\r\n$16384\r\n")
            socks.append(s)
        return socks

    socks = with_password(ctx, "kv", hold)
    for i in range(200):
        s = raw(ctx.kv_proc.port)
        s.sendall(b"*1000000\r\n$536870912\r\nxx")
        socks.append(s)
    time.sleep(0.5)
    grown = rss(ctx.kv_proc) - rss0
    for s in socks:
        s.close()
    expect(grown < 64 * MiB, "400 announcing connections grew RSS by %.1f MiB" % (grown / MiB))
    expect(ctx.kv.cmd("PING") == "PONG", "the server answers")


@advisory("hostile client: query buffer", "-", "server/net/worker.cpp on_event")
def case_query_buffer_limit(ctx):
    """A client whose unparsed input passes client-query-buffer-limit is closed (as in Redis);
    arguments below the limit still work, and others are answered meanwhile."""

    def trigger(conn, port):
        expect(conn.cmd("CONFIG", "SET", "client-query-buffer-limit", "1mb") == "OK",
               "CONFIG SET client-query-buffer-limit 1mb")
        try:
            s = raw(port)
            s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4000000\r\n")
            # Less than announced: the argument never completes (a completed one would be
            # followed by bytes that are no command, a protocol error that also closes).
            closed, sent = push_until_closed(s, b"y" * 50000, 3950000, 10)
            expect(closed, "a 4 MB argument over a 1 MB limit: still connected after %d" % sent)
            expect(conn.cmd("SET", "k", b"z" * 500000) == "OK" and
                   conn.cmd("STRLEN", "k") == 500000, "arguments below the limit work")
        finally:
            conn.cmd("CONFIG", "SET", "client-query-buffer-limit", "1gb")

    trigger(ctx.kv, ctx.kv_proc.port)
    if ctx.redis:
        trigger(ctx.redis, ctx.redis_proc.port)


@advisory("hostile client: client memory", "-", "server/net/worker.cpp evict_clients")
def case_maxmemory_clients_evicts_the_largest(ctx):
    """maxmemory-clients (Redis 7.0's client eviction): clients that grow their query or output
    buffers are evicted, largest first, until the clients' memory is under the limit; a client
    with CLIENT NO-EVICT on and the small clients are not, and evicted_clients counts."""

    def trigger(conn, port):
        conn.cmd("CONFIG", "RESETSTAT")
        expect(conn.cmd("CLIENT", "NO-EVICT", "on") == "OK", "CLIENT NO-EVICT on")
        conn.cmd("SET", "big", b"b" * (256 * 1024))
        small = Client(port)
        expect(conn.cmd("CONFIG", "SET", "maxmemory-clients", "2mb") == "OK",
               "CONFIG SET maxmemory-clients 2mb")
        try:
            s = raw(port)
            s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nh\r\n$100000000\r\n")
            closed_in, _ = push_until_closed(s, b"x" * 65536, 64 * MiB, 10)
            closed_out, _ = push_until_closed(raw(port, 4096), encode("GET", "big") * 16,
                                              MiB, 10)
            stats = conn.cmd("INFO", "stats").decode()
            evicted = int(stats.split("evicted_clients:")[1].split("\r")[0])
            expect(closed_in and closed_out, "growing clients evicted (query %s, output %s)"
                   % (closed_in, closed_out))
            expect(evicted == 2, "evicted_clients %d" % evicted)
            expect(small.cmd("PING") == "PONG", "a small client is not evicted")
        finally:
            conn.cmd("CONFIG", "SET", "maxmemory-clients", "0")
            conn.cmd("CLIENT", "NO-EVICT", "off")
            small.close()

    rss0 = rss(ctx.kv_proc)
    trigger(ctx.kv, ctx.kv_proc.port)
    grown = rss(ctx.kv_proc) - rss0
    expect(grown < 64 * MiB, "RSS grew by %.1f MiB" % (grown / MiB))
    if ctx.redis:
        trigger(ctx.redis, ctx.redis_proc.port)


@advisory("hostile client: output buffer", "-", "server/net/worker.cpp enforce_obuf_limit")
def case_normal_output_buffer_hard_limit(ctx):
    """client-output-buffer-limit normal <hard> 0 0: a client that asks for replies it never
    reads is closed once they pass the hard limit; the others are answered."""

    def trigger(conn, port):
        conn.cmd("SET", "big", b"b" * MiB)
        expect(conn.cmd("CONFIG", "SET", "client-output-buffer-limit", "normal 2mb 0 0") == "OK",
               "CONFIG SET client-output-buffer-limit normal 2mb 0 0")
        try:
            closed, sent = push_until_closed(raw(port, 4096), encode("GET", "big") * 64,
                                             MiB, 10)
            expect(closed, "a non-reader past the hard limit is closed (sent %d)" % sent)
            expect(conn.cmd("PING") == "PONG", "others are answered")
        finally:
            conn.cmd("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")

    trigger(ctx.kv, ctx.kv_proc.port)
    if ctx.redis:
        trigger(ctx.redis, ctx.redis_proc.port)

#!/usr/bin/python3
# Process faults against a real kvlab-server ("Soak and faults"):
#   1. SIGSTOP for 2 s under load, then SIGCONT: every client's requests complete afterwards, no
#      connection is lost, new connections are accepted.
#   2. One worker busy for 2 s in a Lua script that declared its keys (--lua-undeclared-keys no):
#      clients on the other worker keep being served (their worst latency during the script stays
#      far below the script's 2 s).
#   2b. Default flags (scripts may touch any key, so a script holds the whole keyspace, as in
#      Redis): a script loops forever; a command on the other worker waits for it, and that
#      worker's other connections are answered BUSY and may SCRIPT KILL it, as in Redis.
#   3. SIGTERM with 50 pipelining clients that read slowly (the backlog takes some 3 s to drain):
#      exit status 0; each client's received bytes parse as complete RESP replies, in order and
#      correct (nothing half-written); the server ends every connection.
#   4. Out of file descriptors (RLIMIT_NOFILE 64 for the server): the server keeps serving the
#      clients it has, does not spin while it cannot accept (CPU time over 2 s), and accepts the
#      waiting connections once descriptors are free.
# Usage: faults_test.py KVLAB_SERVER
import os
import selectors
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soakcommon import Checks, Client, Server, encode, parse_all, percentile  # noqa: E402

binary = sys.argv[1]
checks = Checks()


def stop_and_continue():
    with Server(binary, ["--threads", "2"]) as srv:
        stop = threading.Event()
        progress = [0] * 8
        problems = []

        def client(i):
            try:
                c = Client(srv.port, timeout=15)
                n = 0
                while not stop.is_set():
                    c.send(("SET", "k%d" % i, n), ("GET", "k%d" % i))
                    r = c.read(2)
                    if r != ["OK", str(n).encode()]:
                        problems.append("client %d: %r" % (i, r))
                        return
                    n += 1
                    progress[i] = n
                c.close()
            except Exception as e:  # a timeout or a reset is what this test looks for
                problems.append("client %d: %s" % (i, e))

        ts = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        time.sleep(1)
        os.kill(srv.pid, signal.SIGSTOP)
        time.sleep(2)
        before = list(progress)
        os.kill(srv.pid, signal.SIGCONT)
        time.sleep(2)
        after = list(progress)
        late = Client(srv.port, timeout=5).cmd("PING")
        stop.set()
        for t in ts:
            t.join(20)
        checks.check(not problems, "SIGSTOP/SIGCONT: no client lost its connection or a reply %s"
                     % problems[:3])
        checks.check(all(a > b for a, b in zip(after, before)),
                     "SIGSTOP/SIGCONT: every client made progress after SIGCONT (%s -> %s)"
                     % (sum(before), sum(after)))
        checks.check(late == "PONG", "SIGSTOP/SIGCONT: a new connection is served after SIGCONT")
        checks.check(srv.stop() == 0, "SIGSTOP/SIGCONT: the server exits 0 on SIGTERM afterwards")


def by_worker(port, n=24):
    """n connections, grouped by the worker that serves them (CLIENT INFO's kvlab-worker=)."""
    groups, conns = {}, []
    for _ in range(n):
        c = Client(port, timeout=10)
        w = c.cmd("CLIENT", "INFO").decode().split("kvlab-worker=")[1].split()[0]
        groups.setdefault(w, []).append(c)
        conns.append(c)
    return groups, conns


def busy_worker():
    # Scripts that declare their keys: a script holds only its keys' stripes.
    with Server(binary, ["--threads", "2", "--lua-undeclared-keys", "no"]) as srv:
        groups, conns = by_worker(srv.port)
        if len(groups) < 2:
            checks.check(False, "busy worker: 24 connections all landed on one worker")
            return
        (wa, on_a), (wb, on_b) = sorted(groups.items())[:2]
        script = ("local t0 = redis.call('TIME') repeat local t = redis.call('TIME') "
                  "until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 2000000 "
                  "return redis.call('SET', KEYS[1], 'done')")
        result = {}

        def run_script():
            result["r"] = on_a[0].cmd("EVAL", script, 1, "slow-key")

        t = threading.Thread(target=run_script)
        start = time.time()
        t.start()
        time.sleep(0.2)
        lat = []
        probe = on_b[0]
        n = 0
        while t.is_alive() and time.time() - start < 10:
            t0 = time.time()
            # Keys other-0 … other-99 share no lock stripe with slow-key (other-1699 does, and
            # waits for the script, as every command on a key of the script's stripes must; its
            # worker then waits with it: server/README.md, "Limits under storms and faults").
            r = probe.cmd("SET", "other-%d" % (n % 100), n)
            lat.append(time.time() - t0)
            n += 1
            if r != "OK":
                lat.append(99)
                break
        t.join(10)
        took = time.time() - start
        checks.check(result.get("r") == "OK" and took >= 1.9,
                     "busy worker: the 2 s script ran to its end on worker %s (%.2f s, %r)"
                     % (wa, took, result.get("r")))
        print("  latencies above 50 ms (index, ms):",
              [(k, round(x * 1e3)) for k, x in enumerate(lat) if x > 0.05][:10])
        worst = max(lat) if lat else 99
        checks.check(len(lat) > 20 and worst < 0.5,
                     "busy worker: worker %s served %d SETs meanwhile, p99 %.1f ms, worst %.1f ms "
                     "(bound 500 ms)" % (wb, len(lat), percentile(lat, 99) * 1e3, worst * 1e3))
        for c in conns:
            c.close()


def busy_script_kill():
    with Server(binary, ["--threads", "2"]) as srv:
        groups, conns = by_worker(srv.port)
        if len(groups) < 2:
            checks.check(False, "busy script: 24 connections all landed on one worker")
            return
        (wa, on_a), (wb, on_b) = sorted(groups.items())[:2]
        if len(on_b) < 3:
            checks.check(False, "busy script: fewer than 3 connections on worker %s" % wb)
            return
        on_a[0].cmd("CONFIG", "SET", "busy-reply-threshold", "100")
        on_a[1].send(("EVAL", "while true do end", 0))
        time.sleep(0.3)
        # A keyed command on the other worker waits for the script (it holds every key)...
        waiter = on_b[0]
        waiter.send(("SET", "other-1", "x"))
        time.sleep(0.3)
        # ...and meanwhile that worker answers its other connections as Redis would.
        t0 = time.time()
        on_b[1].sock.settimeout(3)
        try:
            busy = on_b[1].cmd("PING")
        except OSError as e:
            busy = e
        checks.check(str(busy).startswith("BUSY"),
                     "busy script: a PING on worker %s, whose command waits for the script, is "
                     "answered BUSY (%.2f s, %r)" % (wb, time.time() - t0, busy))
        on_b[2].sock.settimeout(3)
        try:
            killed = on_b[2].cmd("SCRIPT", "KILL")
        except OSError as e:
            killed = e
        checks.check(killed == "OK", "busy script: SCRIPT KILL from worker %s stops the script "
                     "(%r)" % (wb, killed))
        on_a[1].sock.settimeout(5)
        on_b[0].sock.settimeout(5)
        try:
            script = on_a[1].read(1)[0]
            done = waiter.read(1)[0]
        except OSError as e:
            script = done = e
        checks.check(str(script).startswith("ERR Script killed") and done == "OK",
                     "busy script: the script ends killed and the waiting SET then runs (%r, %r)"
                     % (script, done))
        for c in conns:
            c.close()
        checks.check(srv.stop() == 0, "busy script: the server exits 0 afterwards")


def sigterm_with_pipelines():
    with Server(binary, ["--threads", "2"]) as srv:
        big = b"v" * 16384
        c = Client(srv.port)
        c.cmd("SET", "big", big)
        c.close()
        sel = selectors.DefaultSelector()
        clients = []
        for i in range(50):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.setblocking(False)
            st = {"i": i, "sock": s, "rx": bytearray(), "sent": 0, "pending": b"", "eof": False,
                  "inflight": 0, "err": None}
            clients.append(st)
            sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, st)
        # Each client: pipelines of 20 commands, INCR c:i and GET big alternating, at most two
        # pipelines in flight; the n-th INCR must answer n, every GET the 16 KiB value.
        def batch(i):
            return (encode("INCR", "c:%d" % i) + encode("GET", "big")) * 10

        term_at = time.time() + 1.5
        # Past the server's 30 s bound on a whole shutdown: on a loaded machine this loop reads
        # slowly, and a deadline of its own would cut streams the server was still completing.
        deadline = term_at + 40
        termed = False
        while time.time() < deadline and not all(st["eof"] for st in clients):
            if not termed and time.time() >= term_at:
                os.kill(srv.pid, signal.SIGTERM)
                termed = True
            # For 3 s after SIGTERM the clients read slowly (2 KiB per client per 20 ms round,
            # some 5 MB/s in all), so the drain outlives the server's 2 s no-progress bound while
            # replies keep flowing; then they read at full speed, so a loaded machine that runs
            # this loop slowly does not turn into the server's 30 s bound on a whole shutdown.
            slow = termed and time.time() < term_at + 3.0
            if slow:
                time.sleep(0.02)
            for key, ev in sel.select(0.05):
                st = key.data
                if ev & selectors.EVENT_READ:
                    try:
                        data = st["sock"].recv(2048 if slow else 1 << 20)
                    except (BlockingIOError, InterruptedError):
                        data = None
                    except OSError as e:
                        st["err"], data = str(e), b""
                    if data == b"":
                        st["eof"] = True
                        sel.unregister(st["sock"])
                        continue
                    if data:
                        st["rx"] += data
                if ev & selectors.EVENT_WRITE and not st["eof"]:
                    if not st["pending"] and not termed and st["sent"] - len(st["rx"]) // 8192 < 2:
                        st["pending"] = batch(st["i"])
                        st["sent"] += 1
                    if st["pending"]:
                        try:
                            n = st["sock"].send(st["pending"])
                            st["pending"] = st["pending"][n:]
                        except (BlockingIOError, InterruptedError):
                            pass
                        except OSError as e:
                            st["err"] = str(e)
                            st["pending"] = b""
        code = srv.proc.wait(10)
        checks.check(code == 0, "SIGTERM: exit status 0 with 50 pipelining clients (%r)" % code)
        checks.check(all(st["eof"] for st in clients),
                     "SIGTERM: the server closed every connection (%d of 50)"
                     % sum(st["eof"] for st in clients))
        bad = []
        total = 0
        for st in clients:
            try:
                replies, left = parse_all(st["rx"])
            except ValueError as e:
                bad.append("client %d: %s" % (st["i"], e))
                continue
            total += len(replies)
            if left:
                bad.append("client %d: %d bytes of a half-written reply" % (st["i"], left))
            for k, r in enumerate(replies):
                want = k // 2 + 1 if k % 2 == 0 else big
                if r != want:
                    bad.append("client %d reply %d: %r" % (st["i"], k, r if k % 2 == 0 else
                                                          (type(r), len(r or b""))))
                    break
            st["sock"].close()
        checks.check(not bad and total > 0,
                     "SIGTERM: every stream is whole, in order and correct (%d replies) %s"
                     % (total, bad[:3]))


def fd_exhaustion():
    # Soft and hard RLIMIT_NOFILE 64: the server starts with about 20 descriptors in use, so
    # some 40 connections fill it.
    with Server(binary, ["--threads", "2"], nofile=64) as srv:
        socks = []
        for _ in range(120):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            socks.append(s)
        served, waiting = [], []
        for s in socks:
            s.settimeout(0.5)
            s.sendall(encode("PING"))
        time.sleep(0.5)
        for s in socks:
            try:
                (served if s.recv(64) == b"+PONG\r\n" else waiting).append(s)
            except socket.timeout:
                waiting.append(s)
        checks.check(len(served) >= 10 and len(waiting) > 0,
                     "EMFILE: %d connections served, %d wait in the backlog"
                     % (len(served), len(waiting)))
        cpu0 = srv.cpu_seconds()
        lat = []
        t_end = time.time() + 2
        while time.time() < t_end:
            for s in served[:5]:
                t0 = time.time()
                s.sendall(encode("PING"))
                ok = s.recv(64) == b"+PONG\r\n"
                lat.append(time.time() - t0 if ok else 99)
            time.sleep(0.01)
        cpu = srv.cpu_seconds() - cpu0
        # A listener left armed spins both workers: 3.8 CPU s in these 2 s (measured with the
        # pause removed). Paused, the server uses 0.02-0.07 CPU s here, but once 0.58 on a busy
        # CI machine; the bound, half a CPU, sits between the two.
        checks.check(cpu < 1.0, "EMFILE: no spinning while accepts fail: %.2f CPU s in 2 s "
                     "(bound 1.0)" % cpu)
        checks.check(max(lat) < 1, "EMFILE: existing clients served meanwhile (%d PINGs, worst "
                     "%.1f ms)" % (len(lat), max(lat) * 1e3))
        # Free the served connections; every waiting one must then be accepted and answered
        # (each closed as soon as it is, which frees its descriptor for the next).
        for s in served:
            s.close()
        left, failed = list(waiting), 0
        for s in left:
            s.setblocking(False)
        deadline = time.time() + 10
        while left and time.time() < deadline:
            time.sleep(0.02)
            for s in list(left):
                try:
                    reply = s.recv(64)
                except BlockingIOError:
                    continue
                except OSError:
                    reply = b""
                failed += reply != b"+PONG\r\n"
                left.remove(s)
                s.close()
        left += [None] * failed  # a reset or a wrong reply counts as not answered
        checks.check(not left, "EMFILE: once descriptors are free, every waiting connection is "
                     "accepted and answered (%d of %d)" % (len(waiting) - len(left), len(waiting)))
        for s in left:
            if s is not None:
                s.close()
        checks.check(srv.stop() == 0, "EMFILE: the server exits 0 afterwards")


for name, fn in [("stop-continue", stop_and_continue), ("busy-worker", busy_worker),
                 ("busy-script", busy_script_kill),
                 ("sigterm", sigterm_with_pipelines), ("emfile", fd_exhaustion)]:
    if len(sys.argv) > 2 and name not in sys.argv[2:]:
        continue
    print("== " + name, flush=True)
    try:
        fn()
    except Exception as e:  # one scenario's crash is its failure, the next still runs
        checks.check(False, "%s raised %r" % (name, e))
checks.finish()

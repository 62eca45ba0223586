#!/usr/bin/env python3
"""Differential tester: the same command sequences against redis-server 7.0 and kvlab-server.

Starts both servers on free loopback ports, asks kvlab for its command table (COMMAND) and Redis
for the argument grammar (COMMAND DOCS), generates short sequences (grammar.py), runs each on a
FLUSHALL'd keyspace of both servers in lockstep and compares every reply as a typed RESP value.
A divergence not in allowlist.txt is shrunk (shrink.py) and printed as redis-cli lines with both
replies. Exit status: 0 no divergence, 1 divergences (or a setup error), 77 no redis-server.
See README.md.
"""
import argparse
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grammar  # noqa: E402
import resp  # noqa: E402
from shrink import shrink  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------------------------
# The one normalization: replies whose order (or content) Redis leaves unspecified.
#   set     an array compared as a multiset of its elements
#   pairs   an array of field/value pairs compared as a multiset of pairs
#   scan    [cursor, elements]: when both cursors are "0" the elements as a multiset (pairs for
#           HSCAN/ZSCAN); a page that stops early (cursor not 0), or one that starts from a cursor
#           other than 0, only by its shape, since cursors are the implementation's choice
#   shape   random results: only the reply's type and element count (errors stay exact)
#   ttl     remaining/absolute expiry times: equal within the tolerance (the two servers run the
#           same command a few milliseconds apart); negative codes (-1, -2) stay exact
# Errors are always compared exactly. With --resp3 a RESP3 set (~) is always compared as a multiset
# (the type says it is unordered), a map (%) as a multiset of pairs where the command is `set` or
# `pairs` here, and in order otherwise (HELLO, XINFO-like maps have a fixed field order).
NORMALIZE = {
    "smembers": "set", "sinter": "set", "sunion": "set", "sdiff": "set", "keys": "set",
    "hkeys": "set", "hvals": "set", "hgetall": "pairs", "config|get": "pairs",
    "pubsub|channels": "set", "pubsub|shardchannels": "set",
    "scan": "scan", "sscan": "scan", "hscan": "scan-pairs", "zscan": "scan-pairs",
    "spop": "shape", "srandmember": "shape", "hrandfield": "shape", "zrandmember": "shape",
    "ttl": ("ttl", 1), "pttl": ("ttl", 1000), "expiretime": ("ttl", 1),
    "pexpiretime": ("ttl", 1000),
    # Timing: what the slow log holds and the histogram buckets depend on each server's speed
    # (and on the whole run's history); the reply type and every error are still compared.
    "slowlog|get": "type", "slowlog|len": "type", "latency|histogram": "type",
}
# Commands whose effect on the keyspace is random (SPOP removes random members): after one, the
# keys it named are deleted on both servers (a hidden DEL, not compared) to keep them in step.
RANDOM_EFFECT = {"spop"}

# Commands never generated, with the reason. Everything else kvlab's COMMAND lists is.
EXCLUDED = {
    "shutdown": "stops the server", "debug": "server internals", "monitor": "streams forever",
    "subscribe": "subscriber mode", "psubscribe": "subscriber mode",
    "unsubscribe": "subscriber mode", "punsubscribe": "subscriber mode",
    "randomkey": "random", "time": "clock", "lastsave": "clock", "info": "server state",
    "client|list": "server state", "client|id": "server state", "client|info": "server state",
    "client|kill": "dangerous", "client|pause": "dangerous", "client|unpause": "dangerous",
    "client|reply": "hides replies", "client|no-evict": "server state",
    "client|tracking": "RESP3 pushes", "hello": "switches protocol, server facts",
    # Without CLIENT TRACKING (excluded above) these only reach their "tracking off" answers;
    # tests/server/tracking_test.cpp compares them with redis-server in every tracking mode.
    "client|caching": "needs CLIENT TRACKING", "client|getredir": "needs CLIENT TRACKING",
    "client|trackinginfo": "needs CLIENT TRACKING",
    "quit": "closes the connection", "config|set": "changes the server",
    "config|resetstat": "server state", "config|rewrite": "writes files",
    "command": "the generator's input", "object|idletime": "clock", "object|freq": "LFU state",
    "memory|stats": "allocator state", "memory|doctor": "depends on the process' memory",
    "memory|malloc-stats": "the allocator's own report",
    "save": "disk", "bgsave": "disk", "bgrewriteaof": "disk", "replicaof": "replication",
    "slaveof": "replication", "sync": "replication", "psync": "replication",
    "wait": "replication", "failover": "replication", "acl": "could lock the tester out",
    "module": "modules", "cluster": "cluster", "swapdb": "kvlab has one database",
    "pfdebug": "HyperLogLog internals", "pfselftest": "slow self-test",
    "dump": "RDB bytes differ (see allowlist.txt); values round-trip (dump_test.cpp)", "function|dump": "RDB serialization bytes",
}


# Any "X HELP": the help text lists what each server implements.
def excluded(name):
    return name in EXCLUDED or name.split("|")[0] in EXCLUDED or name.endswith("|help")


def nonzero_cursor(arg):
    """A SCAN cursor argument that Redis reads (strtoul) as a valid cursor other than 0."""
    s = arg.split(b"\0", 1)[0]
    if s[:1] in (b"+", b"-"):
        s = s[1:]
    return s.isdigit() and 0 < int(s) < 1 << 64


def unordered_sets(reply):
    """A RESP3 reply with every set (~), at any depth, as a sorted multiset."""
    t, v = reply
    if t in ("array", "push", "set") and v:
        items = tuple(unordered_sets(e) for e in v)
        return (t, tuple(sorted(items, key=repr)) if t == "set" else items)
    if t == "map" and v:
        return (t, tuple((unordered_sets(k), unordered_sets(x)) for k, x in v))
    return reply


# Stream IDs that XADD generated from the clock ("*"): each server's own milliseconds (and a
# sequence that depends on how many entries shared one), so only "an automatic ID" is compared.
# Explicit IDs in sequences are small; 10^12..10^14 ms are the clock's.
AUTO_STREAM_ID = re.compile(rb"^[1-9][0-9]{12}-[0-9]+$")


def auto_ids(reply):
    t, v = reply
    if t == "bulk" and v is not None and AUTO_STREAM_ID.match(v):
        return ("bulk", b"<auto stream ID>")
    if t == "map" and v:
        return (t, tuple((auto_ids(k), auto_ids(x)) for k, x in v))
    if t in ("array", "set", "push") and isinstance(v, (list, tuple)):
        return (t, tuple(auto_ids(x) if isinstance(x, tuple) and len(x) == 2 else x for x in v))
    return reply


def normalize(name, reply, cmd=()):
    reply = unordered_sets(reply)
    if name.startswith("x"):
        reply = auto_ids(reply)
    t, v = reply
    how = NORMALIZE.get(name)
    if how is None or t == "error":
        return reply
    # The reply's type stays part of the normalized value: a map is not a flat array of pairs.
    if how in ("set", "pairs") and t in ("map", "set"):
        return ("unordered", (t, tuple(sorted(v, key=repr))))
    if how == "set" and t == "array" and v is not None:
        return ("unordered", (t, tuple(sorted(v, key=repr))))
    if how == "pairs" and t == "array" and v is not None:
        return ("unordered", (t, tuple(sorted(zip(v[::2], v[1::2]), key=repr))))
    if isinstance(how, str) and how.startswith("scan"):
        if t == "array" and v and len(v) == 2 and v[1][0] == "array" and v[1][1] is not None:
            cur, items = v[0], v[1][1]
            if how == "scan-pairs":
                items = list(zip(items[::2], items[1::2]))
            at = 1 if name == "scan" else 2
            started = len(cmd) > at and nonzero_cursor(cmd[at])
            done = cur == ("bulk", b"0") and not started
            return ("scan", (done, tuple(sorted(items, key=repr))))
        return reply
    if how == "type":
        return ("type", t)
    if how == "shape":
        if t in ("array", "map", "set"):
            return ("shape", ("array", None if v is None else len(v)))
        return ("shape", (t, v is None))
    if isinstance(how, tuple) and t == "int" and v >= 0:
        return ("tolerance", (how[1], v))
    return reply


def same(a, b):
    if a[0] == "scan" and b[0] == "scan" and not (a[1][0] and b[1][0]):
        return True  # a page that ended early on either side: only its shape is checked
    if a[0] == "tolerance" and b[0] == "tolerance":
        return abs(a[1][1] - b[1][1]) <= a[1][0]
    return a == b


# ---------------------------------------------------------------------------------------------
# The allow-list: lines "command | argument regex | reason" (regex empty = any arguments).
class AllowList:
    def __init__(self, path):
        self.rules = []
        if not os.path.exists(path):
            return
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            # Fields are separated by " | " (names such as client|setname contain a bare '|').
            parts = [p.strip() for p in line.split(" | ", 2)]
            if len(parts) != 3 or not parts[2]:
                raise SystemExit("%s:%d: want 'command | args regex | reason'" % (path, n))
            self.rules.append((parts[0].lower(), re.compile(parts[1]) if parts[1] else None,
                               parts[2]))

    def match(self, name, cmd):
        line = resp.cli_line(cmd[1:])
        for rname, rx, reason in self.rules:
            if rname == name and (rx is None or rx.search(line)):
                return reason
        return None


# ---------------------------------------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, label, argv_fn, workdir):
        self.label, self.argv_fn, self.workdir = label, argv_fn, workdir
        self.proc = None
        self.port = None
        self.log = os.path.join(workdir, label + ".log")

    def start(self):
        self.port = free_port()
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(self.argv_fn(self.port), cwd=self.workdir, stdout=logf,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("%s exited at startup (status %s), log: %s"
                                 % (self.label, self.proc.returncode, self.log))
            try:
                c = resp.Client(self.port, timeout=1)
                c.call("PING")
                c.close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("%s did not answer on port %d" % (self.label, self.port))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Pair:
    """The two servers and one connection to each, reopened for every sequence."""

    def __init__(self, redis, kvlab, timeout, proto=2):
        self.servers = (redis, kvlab)
        self.timeout = timeout
        self.proto = proto
        self.conns = (None, None)
        self.broken = [False, False]

    def fresh(self):
        """Both connections with an empty keyspace and fresh client state. A connection that ended
        its last sequence cleanly is reused: RESET (which ends MULTI, WATCH, subscriptions and
        CLIENT REPLY OFF, forgets the name and goes back to RESP2), HELLO again for RESP3, and
        FLUSHALL, pipelined; one that timed out or broke is reopened."""
        conns = list(self.conns)
        for i, s in enumerate(self.servers):
            c = conns[i]
            if c is not None and not self.broken[i] and s.alive():
                try:
                    cmds = [("RESET",)] + ([("HELLO", str(self.proto))] if self.proto != 2 else [])
                    cmds.append(("FLUSHALL",))
                    c.sock.sendall(b"".join(resp.encode(x) for x in cmds))
                    replies = [c.read() for _ in cmds]
                    if replies[0] == ("simple", b"RESET") and replies[-1] == ("simple", b"OK"):
                        continue
                except (OSError, ConnectionError):
                    pass
            if c is not None:
                c.close()
            if not s.alive():
                print("compat: %s was not running; restarted (see %s)" % (s.label, s.log))
                s.start()
            c = resp.Client(s.port, timeout=self.timeout, proto=self.proto)
            c.call("FLUSHALL")
            conns[i] = c
        self.conns = tuple(conns)
        self.broken = [False, False]

    def call(self, i, cmd):
        try:
            return self.conns[i].call(*cmd)
        except (OSError, ConnectionError) as e:
            self.broken[i] = True
            return ("no reply", str(e))

    def call_both(self, cmd):
        """Sends cmd to both servers, then reads both replies: the two run it at nearly the same
        moment (a blocking command waits on both at once), and a sequence costs one round trip
        per command instead of two."""
        sent = [False, False]
        for i in (0, 1):
            try:
                self.conns[i].sock.sendall(resp.encode(cmd))
                sent[i] = True
            except (OSError, ConnectionError):
                self.broken[i] = True
        out = []
        for i in (0, 1):
            if not sent[i]:
                out.append(("no reply", "send failed"))
                continue
            try:
                out.append(self.conns[i].read())
            except (OSError, ConnectionError) as e:
                self.broken[i] = True
                out.append(("no reply", str(e)))
        return out[0], out[1]


def run(pair, gen, allow, seq):
    """Runs seq on both servers. Returns (index, replies) of the first divergence that is not
    allow-listed, ("allowed", reason) when an allow-listed one stopped the sequence, or None."""
    pair.fresh()
    for i, cmd in enumerate(seq):
        name = gen.name_of(cmd)
        a, b = pair.call_both(cmd)
        if a[0] == "no reply" and b[0] == "no reply":
            return None  # both still blocked (a shrunk timeout of 0): nothing more to compare
        na, nb = normalize(name, a, cmd), normalize(name, b, cmd)
        if a[0] == "no reply" or b[0] == "no reply" or not same(na, nb):
            reason = allow.match(name, cmd)
            if reason is not None and a[0] != "no reply" and b[0] != "no reply":
                return ("allowed", name, reason)
            return (i, a, b)
        if name in RANDOM_EFFECT and a[0] != "error":
            spec = gen.table.get(name, {})
            first, last = spec.get("first", 0), spec.get("last", 0)
            if first > 0 and len(cmd) > first:
                last = len(cmd) + last if last < 0 else last
                for k in range(first, min(last, len(cmd) - 1) + 1):
                    pair.call(0, [b"DEL", cmd[k]])
                    pair.call(1, [b"DEL", cmd[k]])
    return None


def report(pair, gen, seq, res, out):
    i, a, b = res
    out.write("reproducer (redis-cli, on an empty keyspace):\n")
    if pair.proto != 2:
        out.write("  HELLO %d\n" % pair.proto)
    for cmd in seq[: i + 1]:
        out.write("  " + resp.cli_line(cmd) + "\n")
    out.write("redis-server replied to the last command:\n%s\n" % resp.show(a, 4))
    out.write("kvlab-server replied:\n%s\n" % resp.show(b, 4))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("server", nargs="?", default=os.environ.get("KVLAB_SERVER"),
                    help="kvlab-server binary (default: $KVLAB_SERVER)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    ap.add_argument("--count", type=int, default=8,
                    help="sequences per command (default 8); with --random, sequences in all")
    ap.add_argument("--random", action="store_true",
                    help="each sequence picks its focus command at random")
    ap.add_argument("--backend", help="kvlab-server --backend")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--commands", help="comma-separated subset of commands (e.g. get,zadd)")
    ap.add_argument("--allowlist", default=os.path.join(HERE, "allowlist.txt"))
    ap.add_argument("--max-reports", type=int, default=20,
                    help="stop after this many distinct divergences (default 20)")
    ap.add_argument("--timeout", type=float, default=5.0, help="reply timeout in seconds")
    ap.add_argument("--resp3", action="store_true",
                    help="speak RESP3 (HELLO 3) on both servers' connections")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every sequence")
    opts = ap.parse_args()

    redis_bin = shutil.which("redis-server")
    if redis_bin is None:
        print("compat: redis-server not found; skipped")
        return 77
    if not opts.server or not os.access(opts.server, os.X_OK):
        print("compat: no kvlab-server (pass its path or set KVLAB_SERVER)")
        return 1
    opts.server = os.path.abspath(opts.server)
    seed = opts.seed if opts.seed is not None else random.randrange(1 << 32)
    print("compat: seed %d%s%s" % (seed, " backend " + opts.backend if opts.backend else "",
                                  " RESP3" if opts.resp3 else ""))
    sys.stdout.flush()

    workdir = tempfile.mkdtemp(prefix="kvlab-compat-")
    redis = Server("redis-server", lambda p: [redis_bin, "--port", str(p), "--bind",
                                              "127.0.0.1", "--save", "", "--appendonly", "no",
                                              "--daemonize", "no", "--dir", workdir,
                                              # blocked clients time out on the server cron:
                                              # every 10 ms instead of 100 (hz 10)
                                              "--hz", "100"], workdir)
    kv_argv = lambda p: ([opts.server, "--port", str(p), "--threads", str(opts.threads)]
                         + (["--backend", opts.backend] if opts.backend else []))
    kvlab = Server("kvlab-server", kv_argv, workdir)

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    status = 1
    try:
        redis.start()
        kvlab.start()
        status = session(opts, seed, redis, kvlab)
    except KeyboardInterrupt:
        print("compat: interrupted")
    finally:
        kvlab.stop()
        redis.stop()
    if status == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print("compat: server logs in %s" % workdir)
    return status


def session(opts, seed, redis, kvlab):
    t0 = time.time()
    rc, kc = resp.Client(redis.port), resp.Client(kvlab.port)
    table = grammar.kv_table(kc.call("COMMAND"))
    docs = grammar.redis_docs(rc.call("COMMAND", "DOCS"))
    tips, blocking = info_of(rc.call("COMMAND", "INFO", *[n.split("|")[0] for n in table]))
    rc.close()
    kc.close()
    names = sorted(n for n in table if not excluded(n) and not table_has_subs(table, n))
    unknown = [n for n in names if n not in docs]
    for n in names:
        if n in tips and n not in NORMALIZE and n not in RANDOM_EFFECT:
            print("compat: warning: Redis tags %s %s but it has no normalization" % (n, tips[n]))
    names = [n for n in names if n in docs]
    allow = AllowList(opts.allowlist)
    rng = random.Random(seed)
    gen = grammar.Generator(rng, table, docs, names, blocking)
    focus_names = names
    if opts.commands:  # the focus commands; the others still fill the sequences
        want = {c.strip().lower() for c in opts.commands.split(",")}
        focus_names = [n for n in names if n in want]
    pair = Pair(redis, kvlab, opts.timeout, 3 if opts.resp3 else 2)
    focuses = ([None] * opts.count if opts.random
               else [n for n in focus_names for _ in range(opts.count)])
    seen = set()
    shrunk_names = set()  # one reproducer per command: the first found
    stats = {"sequences": 0, "commands": 0, "allowed": 0}
    allowed_hits = {}
    for k, focus in enumerate(focuses):
        seq = gen.sequence(focus or rng.choice(focus_names))
        stats["sequences"] += 1
        stats["commands"] += len(seq)
        if opts.verbose:
            print("-- sequence %d" % k)
            for c in seq:
                print("   " + resp.cli_line(c))
        res = run(pair, gen, allow, seq)
        if res is None:
            continue
        if res[0] == "allowed":
            stats["allowed"] += 1
            allowed_hits[res[1]] = allowed_hits.get(res[1], 0) + 1
            continue
        i, a, b = res
        name = gen.name_of(seq[i])
        key = (name, a[0], b[0])
        if key in seen or name in shrunk_names:
            continue
        seen.add(key)
        shrunk_names.add(name)

        def still_fails(cand):
            r = run(pair, gen, allow, cand)
            return r is not None and r[0] != "allowed" and gen.name_of(cand[r[0]]) == name

        small = shrink(seq[: i + 1], still_fails, fixed_prefix=lambda c: len(
            gen.name_of(c).split("|")))
        res2 = run(pair, gen, allow, small)
        print("\nDIVERGENCE in %s (sequence %d, seed %d, shrunk %d -> %d commands)"
              % (name.upper(), k, seed, i + 1, len(small)))
        report(pair, gen, small, res2 if res2 and res2[0] != "allowed" else res, sys.stdout)
        sys.stdout.flush()
        if len(seen) >= opts.max_reports:
            print("compat: stopping after %d divergences" % len(seen))
            break
    took = time.time() - t0
    print("\ncompat: %d commands generated (%d kvlab commands without a Redis grammar: %s), "
          "%d sequences, %d commands run, %.1f s"
          % (len(names), len(unknown), ",".join(unknown) or "-", stats["sequences"],
             stats["commands"], took))
    if allowed_hits:
        print("compat: allow-listed divergences seen: %s" % ", ".join(
            "%s x%d" % kv for kv in sorted(allowed_hits.items())))
    print("compat: %d divergences" % len(seen))
    return 1 if seen else 0


def table_has_subs(table, name):
    return "|" not in name and any(n.startswith(name + "|") for n in table)


def info_of(reply):
    """Redis's COMMAND INFO -> ({name: nondeterministic tips}, {names flagged blocking})."""
    out, blocking = {}, set()
    for row in reply[1] or []:
        if row[1] is None:
            continue
        items = row[1]
        name = items[0][1].decode().lower()
        if any(f[1] == b"blocking" for f in items[2][1]):
            blocking.add(name)
        tips = [t[1].decode() for t in items[7][1]] if len(items) > 7 else []
        nd = [t for t in tips if t.startswith("nondeterministic")]
        if nd:
            out[name] = nd
    return out, blocking


if __name__ == "__main__":
    sys.exit(main())

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
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grammar  # noqa: E402
import resp  # noqa: E402
import twoclient  # noqa: E402
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
#   clocks  XINFO STREAM/CONSUMERS, XPENDING: their clock readings (seen, delivery and idle
#           times) within CLOCK_TOLERANCE_MS, everything else exact (see clock_fields)
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
    # Seconds since the last access: 0 right after a write or read on both servers, but Redis's
    # LRU clock has whole seconds (refreshed by its cron), so the two may straddle a second.
    "object|idletime": ("ttl", 1),
    # Timing: what the slow log holds and the histogram buckets depend on each server's speed
    # (and on the whole run's history); the reply type and every error are still compared.
    "slowlog|get": "type", "slowlog|len": "type", "latency|histogram": "type",
}
# Commands whose effect on the keyspace is random (SPOP removes random members): after one, the
# keys it named are deleted on both servers (a hidden DEL, not compared) to keep them in step.
# SORT ... STORE whose order Redis leaves unspecified (see sort_unsorted) is handled the same way
# for its destination (effect_keys).
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
    "hello": "switches protocol, server facts",
    "quit": "closes the connection", "config|set": "changes the server",
    "config|resetstat": "server state", "config|rewrite": "writes files",
    "command": "the generator's input",
    "memory|stats": "allocator state", "memory|doctor": "depends on the process' memory",
    "memory|malloc-stats": "the allocator's own report",
    "save": "disk", "bgsave": "disk", "bgrewriteaof": "disk", "replicaof": "replication",
    "slaveof": "replication", "sync": "replication", "psync": "replication",
    "failover": "replication", "migrate": "connects to another server (migrate_test.cpp)", "acl": "could lock the tester out",
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


# Stream introspection reports clock readings: absolute delivery and seen times (ms since the
# epoch) and idle times (ms). In pipelined mode the two servers run a command up to a batch apart,
# so these compare within CLOCK_TOLERANCE_MS (lockstep runs agree to the millisecond anyway).
CLOCK_COMMANDS = {"xinfo|stream", "xinfo|consumers", "xpending"}
CLOCK_FIELDS = {b"seen-time", b"active-time", b"idle", b"inactive"}
CLOCK_TOLERANCE_MS = 1000


def clock_fields(reply):
    """reply with each clock reading replaced by ("near", ms): an integer of 10**12 or more (an
    absolute time in ms), one after a CLOCK_FIELDS name, and XPENDING's per-entry idle (the third
    of [id, consumer, idle, count])."""
    t, v = reply
    if t == "map" and v:
        return (t, tuple((k, ("near", x[1]) if k[1] in CLOCK_FIELDS and x[0] == "int"
                          else clock_fields(x)) for k, x in v))
    if t not in ("array", "set", "push") or not isinstance(v, (list, tuple)):
        return ("near", v) if t == "int" and v >= 10 ** 12 else reply
    items = list(v)
    out = []
    for j, e in enumerate(items):
        after_name = j % 2 == 1 and items[j - 1][0] in ("bulk", "simple") and \
            items[j - 1][1] in CLOCK_FIELDS
        pending_idle = len(items) == 4 and j == 2 and [x[0] for x in items] == [
            "bulk", "bulk", "int", "int"]
        out.append(("near", e[1]) if e[0] == "int" and (after_name or pending_idle)
                   else clock_fields(e))
    return (t, tuple(out))


def near_equal(a, b):
    """a == b, but ("near", x) and ("near", y) within CLOCK_TOLERANCE_MS, at any depth."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) == 2 and len(b) == 2 and a[0] == "near" and b[0] == "near":
            return abs(a[1] - b[1]) <= CLOCK_TOLERANCE_MS
        return len(a) == len(b) and all(near_equal(x, y) for x, y in zip(a, b))
    return a == b


def alpha_nul_ties(cmd, elements):
    """SORT ... ALPHA without BY, GET or STORE whose reply holds an element with a NUL byte."""
    words = [a.lower() for a in cmd[2:]]
    return (b"alpha" in words and not {b"by", b"get", b"store"} & set(words) and
            all(e[0] == "bulk" and e[1] is not None for e in elements) and
            any(b"\0" in e[1] for e in elements))


def sort_unsorted(cmd):
    """SORT/SORT_RO with a BY pattern without '*' (Redis's strchr: before any NUL) does not sort:
    a set's elements come in its hash table's order, which Redis leaves unspecified, so the
    reply is a multiset (and with LIMIT only its shape). Lists and sorted sets keep their order
    there too; the tester cannot tell the type from the command, so they get the same
    normalization.
    With ALPHA and a BY pattern, elements whose BY keys are missing or equal compare equal (no
    tie-break on the element, unlike the numeric order), so a set's or sorted set's ties also
    come in hash-table order: the same normalization."""
    by = [cmd[j + 1] for j in range(1, len(cmd) - 1) if cmd[j].lower() == b"by"]
    alpha = any(a.lower() == b"alpha" for a in cmd[2:])
    if not any(b"*" not in p.split(b"\0", 1)[0] for p in by) and not (by and alpha):
        return None
    return "shape" if any(a.lower() == b"limit" for a in cmd[2:]) else "set"


def normalize(name, reply, cmd=()):
    reply = unordered_sets(reply)
    if name.startswith("x"):
        reply = auto_ids(reply)
    t, v = reply
    if name == "sunsubscribe" and len(cmd) == 1 and t == "replies" and all(
            r[0] in ("array", "push") and r[1] is not None and len(r[1]) == 3 for r in v):
        # SUNSUBSCRIBE alone leaves the channels in Redis's dict order (unspecified): the
        # channels compare as a set, the remaining-subscription counts in order.
        return ("unsubscribe all", (tuple(sorted((r[1][1] for r in v), key=repr)),
                                    tuple(r[1][2] for r in v)))
    if name in CLOCK_COMMANDS:
        return ("clocks", clock_fields(reply))
    if name in ("sort", "sort_ro") and t == "array" and v and alpha_nul_ties(cmd, v):
        # ALPHA compares with strcoll, which stops at a NUL: "a\0b" ties with "a", and qsort
        # leaves tied elements in an unspecified order. The order of the prefixes is compared,
        # and the elements as a multiset.
        prefixes = tuple(e[1].split(b"\0", 1)[0] for e in v)
        return ("alpha ties", (prefixes, tuple(sorted(v, key=repr))))
    how = NORMALIZE.get(name)
    if name in ("sort", "sort_ro"):
        how = sort_unsorted(cmd)
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
    if a[0] == "clocks" and b[0] == "clocks":
        return near_equal(a[1], b[1])
    return a == b


# ---------------------------------------------------------------------------------------------
# The allow-list: lines "command | argument regex | reason" (regex empty = any arguments), or
# "command | reply: regex | reason" to match Redis's reply instead (its error text, for a Redis bug
# that shows in the reply only).
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
            on_reply = parts[1].startswith("reply:")
            rx = parts[1][len("reply:"):].strip() if on_reply else parts[1]
            self.rules.append((parts[0].lower(), on_reply, re.compile(rx) if rx else None,
                               parts[2]))

    def match(self, name, cmd, redis_reply=None):
        line = resp.cli_line(cmd[1:])
        said, r = "", redis_reply
        if r is not None and r[0] == "replies" and len(r[1]) == 1:
            r = r[1][0]  # the one reply of a command that answers once
        if r is not None and r[0] == "error":
            said = r[1].decode("utf-8", "replace")
        for rname, on_reply, rx, reason in self.rules:
            if rname == name and (rx is None or rx.search(said if on_reply else line)):
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

    def call_both(self, cmd, n=1):
        """Sends cmd to both servers, then reads both replies: the two run it at nearly the same
        moment (a blocking command waits on both at once), and a sequence costs one round trip
        per command instead of two. n > 1: the command owes n replies (reply_counts()), read
        as one ("replies", (...)) value."""
        sent = [False, False]
        for i in (0, 1):
            try:
                self.conns[i].sock.sendall(resp.encode(cmd))
                sent[i] = True
            except (OSError, ConnectionError):
                self.broken[i] = True
        out = []
        # One deadline for both reads: a command that outlasts the reply timeout (a blocking
        # command drawn with a timeout of seconds, "007") times out on both servers, instead of
        # being waited for on the second one while the first read ran out.
        deadline = time.monotonic() + self.timeout
        for i in (0, 1):
            if not sent[i]:
                out.append(("no reply", "send failed"))
                continue
            try:
                self.conns[i].sock.settimeout(max(0.05, deadline - time.monotonic()))
                got = [self.conns[i].read() for _ in range(n)]
                self.conns[i].sock.settimeout(self.timeout)
                out.append(got[0] if n == 1 else ("replies", tuple(got)))
            except (OSError, ConnectionError) as e:
                self.broken[i] = True
                out.append(("no reply", str(e)))
        return out[0], out[1]


def reply_counts(gen, seq, proto):
    """How many replies each command of seq owes: 1, except for SSUBSCRIBE and SUNSUBSCRIBE,
    which answer once per channel (SUNSUBSCRIBE alone: once per shard channel the connection
    has, at least once). Follows the connection's shard channels and MULTI state as Redis 7.0
    does (RESET clears both; a RESP2 subscriber cannot start MULTI; queued commands answer
    QUEUED). Both modes read replies by these counts, so the two servers' streams stay paired."""
    subs, multi, out = set(), False, []
    for cmd in seq:
        name = gen.name_of(cmd)
        n = 1
        if name == "reset":
            subs.clear()
            multi = False
        elif name == "multi":
            multi = multi or (len(cmd) == 1 and (proto == 3 or not subs))
        elif name == "exec" or (name == "discard" and len(cmd) == 1):
            multi = False
        elif name in ("ssubscribe", "sunsubscribe") and not multi:
            chans = cmd[1:]
            if chans:
                n = len(chans)
                if name == "ssubscribe":
                    subs.update(chans)
                else:
                    subs.difference_update(chans)
            elif name == "sunsubscribe":
                n = max(1, len(subs))
                subs.clear()
        out.append(n)
    return out


def effect_keys(gen, name, cmd):
    """The keys a command left in an unspecified state, deleted on both servers after it: those a
    RANDOM_EFFECT command named, and the destination of a SORT ... STORE whose order is
    unspecified (a set's hash-table order, or ties under ALPHA BY: the list it stores would
    show that order to the commands after it)."""
    if name == "sort":
        stores = [cmd[j + 1] for j in range(2, len(cmd) - 1) if cmd[j].lower() == b"store"]
        return stores[-1:] if stores and sort_unsorted(cmd) is not None else []
    if name not in RANDOM_EFFECT:
        return []
    spec = gen.table.get(name, {})
    first, last = spec.get("first", 0), spec.get("last", 0)
    if first <= 0 or len(cmd) <= first:
        return []
    last = len(cmd) + last if last < 0 else last
    return [cmd[k] for k in range(first, min(last, len(cmd) - 1) + 1)]


def queued_commands(gen, seq, i):
    """For an EXEC at seq[i]: the commands sent inside its transaction, from the MULTI that opened
    it (a nested MULTI is refused, not a start); [] when no MULTI is open."""
    start = None
    for k in range(i):
        name = gen.name_of(seq[k])
        if name == "multi" and start is None:
            start = k
        elif name in ("exec", "discard", "reset") and start is not None:
            start = None
    return [] if start is None else list(seq[start + 1:i])


def queued_allowed(gen, allow, seq, i):
    """For an EXEC at seq[i]: the allow-list reason of a command queued in its transaction (an
    allow-listed command answers inside EXEC's array as it would alone), else None."""
    for cmd in queued_commands(gen, seq, i):
        name = gen.name_of(cmd)
        reason = allow.match(name, cmd)
        if reason is not None:
            return "queued %s: %s" % (name, reason)
    return None


def normalize_exec(gen, reply, seq, i):
    """EXEC's array, each element normalized as the queued command's own reply would be (SLOWLOG
    GET or LATENCY HISTOGRAM inside a transaction answer server state there too). Applies when
    every command sent inside the transaction was queued (one element each); otherwise (a command
    refused at queue time, a nested MULTI) the array is compared as it is."""
    t, v = reply
    queued = [c for c in queued_commands(gen, seq, i) if gen.name_of(c) != "multi"]
    if t != "array" or v is None or len(v) != len(queued):
        return normalize("exec", reply)
    return ("exec", tuple(normalize(gen.name_of(c), e, c) for c, e in zip(queued, v)))


def compare(gen, allow, name, cmd, i, a, b, seq=None):
    """None when the replies a (Redis) and b (kvlab) to cmd agree; ("allowed", name, reason) for
    an allow-listed divergence; (i, a, b) otherwise. seq (the whole sequence) lets an EXEC
    inherit the allow-listing of the commands it ran."""
    if name == "exec" and seq is not None:
        na, nb = normalize_exec(gen, a, seq, i), normalize_exec(gen, b, seq, i)
    else:
        na, nb = normalize(name, a, cmd), normalize(name, b, cmd)
    if a[0] == "no reply" or b[0] == "no reply" or not same(na, nb):
        reason = allow.match(name, cmd, a)
        if reason is None and name == "exec" and seq is not None:
            reason = queued_allowed(gen, allow, seq, i)
        if reason is not None and a[0] != "no reply" and b[0] != "no reply":
            return ("allowed", name, reason)
        return (i, a, b)
    return None


def run(pair, gen, allow, seq):
    """Runs seq on both servers in lockstep (the exact mode; every shrink step uses it).
    Returns (index, replies) of the first divergence that is not allow-listed,
    ("allowed", name, reason) when an allow-listed one stopped the sequence, or None."""
    pair.fresh()
    counts = reply_counts(gen, seq, pair.proto)
    for i, cmd in enumerate(seq):
        name = gen.name_of(cmd)
        a, b = pair.call_both(cmd, counts[i])
        if a[0] == "no reply" and b[0] == "no reply":
            return None  # both still blocked (a shrunk timeout of 0): nothing more to compare
        res = compare(gen, allow, name, cmd, i, a, b, seq)
        if res is not None:
            return res
        # The hidden DEL follows a random-effect command whatever it answered (also an error),
        # as in the pipelined mode, which cannot wait for the reply before sending the DEL.
        for key in effect_keys(gen, name, cmd):
            pair.call(0, [b"DEL", key])
            pair.call(1, [b"DEL", key])
    return None


class FastPair:
    """The pipelined mode: one connection to each server; a batch of whole sequences, each
    preceded by RESET (+ HELLO) + FLUSHALL exactly as the exact mode's Pair.fresh() does and the
    batch ended by RESET, is written to both servers at once and both reply streams are read
    while writing (a selector loop: neither side can fill its socket buffers and stall the
    other). Replies are then compared sequence by sequence, command by command, with the same
    compare() as the exact mode. Only the timing differs: a sequence's commands reach a server
    back to back instead of one round trip apart. Each server still runs one connection's commands
    in order, so a command sees exactly the keyspace the exact mode gives it."""

    def __init__(self, servers, timeout, proto):
        self.servers = servers
        self.timeout = timeout
        self.proto = proto
        self.socks = [None, None]
        pre = [(b"RESET",)] + ([(b"HELLO", b"%d" % proto)] if proto != 2 else []) + [
            (b"FLUSHALL",)]
        self.pre_n = len(pre)
        self.pre_bytes = b"".join(resp.encode(c) for c in pre)
        self.reset_bytes = resp.encode((b"RESET",))

    def connect(self):
        for i, s in enumerate(self.servers):
            if self.socks[i] is not None:
                continue
            if not s.alive():
                print("compat: %s was not running; restarted (see %s)" % (s.label, s.log))
                s.start()
            sock = socket.create_connection(("127.0.0.1", s.port), timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
            self.socks[i] = sock

    def drop(self):
        for sock in self.socks:
            if sock is not None:
                sock.close()
        self.socks = [None, None]

    def build(self, gen, seqs):
        """The batch's bytes, how many replies each server owes, and each sequence's layout."""
        self.connect()
        parts, layouts = [], []
        for seq in seqs:
            parts.append(self.pre_bytes)
            layout = []
            for ci, (cmd, n) in enumerate(zip(seq, reply_counts(gen, seq, self.proto))):
                parts.append(resp.encode(cmd))
                layout.append((ci, n))
                name = gen.name_of(cmd)
                for key in effect_keys(gen, name, cmd):
                    parts.append(resp.encode((b"DEL", key)))
                    layout.append((None, 1))  # the hidden DEL: its reply is not compared
            layouts.append(layout)
        parts.append(self.reset_bytes)
        total = sum(self.pre_n + sum(n for _, n in lay) for lay in layouts) + 1
        return b"".join(parts), total, layouts

    def decide(self, gen, allow, seqs, layouts, total, ra, rb):
        """Compares the two reply streams of a batch; returns one result per sequence: what
        run() would return, or "again" for a sequence the batch could not decide (a server
        stopped answering before it: run it in another batch)."""
        out, pos, stalled = [], 0, False
        for seq, layout in zip(seqs, layouts):
            n = self.pre_n + sum(c for _, c in layout)
            if stalled:
                out.append("again")
                continue
            a_all, b_all = ra[pos:pos + n], rb[pos:pos + n]
            pos += n
            if len(a_all) < n or len(b_all) < n:
                stalled = True
            p = self.pre_n
            if (len(a_all) < p or len(b_all) < p or a_all[0] != ("simple", b"RESET")
                    or b_all[0] != ("simple", b"RESET") or a_all[p - 1] != ("simple", b"OK")
                    or b_all[p - 1] != ("simple", b"OK")):
                stalled = True
                out.append("again")
                continue
            res = None
            j = p
            for ci, c in layout:
                j += c
                if ci is None:
                    continue
                a, b = [("no reply", "timed out or closed") if j > len(r) else r[j - 1] if c == 1
                        else ("replies", tuple(r[j - c:j])) for r in (a_all, b_all)]
                if a[0] == "no reply" and b[0] == "no reply":
                    break  # both still blocked, as in run()
                cmd = seq[ci]
                res = compare(gen, allow, gen.name_of(cmd), cmd, ci, a, b, seq)
                if res is not None:
                    break
            out.append(res)
        if stalled or len(ra) != total or len(rb) != total or any(
                r is not None and r != "again" and r[0] != "allowed" for r in out):
            self.drop()  # a stream that may be out of step: start the next batch afresh
        return out


def exchange(entries, timeout):
    """entries: (socket, payload, nreplies) each. Writes every payload and reads up to nreplies
    replies from each socket, all at once in one selector loop: no socket's full buffers can
    stall another, and one server pair blocked on a command (BLPOP waits its few ms) does not
    hold up the other pairs. Returns the reply list of each entry; a list is short when its
    server closed the connection or sent nothing for `timeout` seconds (a command blocked for
    longer than the tester waits)."""
    sel = selectors.DefaultSelector()
    n = len(entries)
    views = [memoryview(e[1]) for e in entries]
    sent, data, replies = [0] * n, [b""] * n, [[] for _ in range(n)]
    now = time.monotonic()
    deadline = [now + timeout] * n
    live = set(range(n))
    for i, (sock, payload, want) in enumerate(entries):
        if want == 0:
            live.discard(i)
            continue
        sel.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, i)

    def retire(i):
        sel.unregister(entries[i][0])
        live.discard(i)

    while live:
        now = time.monotonic()
        for i in [i for i in live if deadline[i] <= now]:
            retire(i)
        if not live:
            break
        events = sel.select(max(0.0, min(deadline[i] for i in live) - now))
        for key, ev in events:
            i, sock = key.data, key.fileobj
            if i not in live:
                continue
            payload, want = entries[i][1], entries[i][2]
            if ev & selectors.EVENT_WRITE and sent[i] < len(payload):
                try:
                    sent[i] += sock.send(views[i][sent[i]:sent[i] + (1 << 18)])
                except BlockingIOError:
                    pass
                except OSError:
                    retire(i)
                    continue
                if sent[i] == len(payload):
                    sel.modify(sock, selectors.EVENT_READ, i)
            if ev & selectors.EVENT_READ:
                try:
                    chunk = sock.recv(1 << 18)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    retire(i)
                    continue
                deadline[i] = time.monotonic() + timeout
                buf, pos, got = data[i] + chunk, 0, replies[i]
                try:
                    while len(got) < want:
                        v, pos = resp.parse(buf, pos)
                        got.append(v)
                except resp.Incomplete:
                    pass
                except (ConnectionError, ValueError):
                    retire(i)  # not RESP: the replies so far stand, the rest is missing
                    continue
                data[i] = buf[pos:]
                if len(got) == want:
                    retire(i)
    sel.close()
    return replies


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
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print every sequence (implies --exact)")
    ap.add_argument("--exact", action="store_true",
                    help="lockstep mode: one command at a time to both servers (the reference; "
                    "the default pipelines --batch sequences and replays divergences in it)")
    ap.add_argument("--batch", type=int, default=64,
                    help="sequences per pipelined batch (default 64)")
    ap.add_argument("--ops", type=int, default=None,
                    help="run until this many commands were run (implies --random; --count is "
                    "then ignored)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes, each with its own redis-server and kvlab-server pair; "
                    "worker j runs sequences j, j+jobs, ... (default 1)")
    ap.add_argument("--lanes", type=int, default=4,
                    help="server pairs per worker for the pipelined mode (default 4)")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--only", type=int, default=None,
                    help="run only sequence K (as numbered in a report; same --seed, --count, "
                    "--random, --commands)")
    ap.add_argument("--two-client", action="store_true",
                    help="the two-client mode (twoclient.py): connection A blocks, B acts; "
                    "--count scenarios (default 8), --only K replays scenario K")
    ap.add_argument("--progress", type=float, default=0,
                    help="print a progress line every this many seconds (default: never)")
    opts = ap.parse_args()
    if opts.verbose:
        opts.exact = True
    if opts.ops is not None:
        opts.random = True
    if opts.only is not None:
        opts.jobs = 1

    redis_bin = shutil.which("redis-server")
    if redis_bin is None:
        print("compat: redis-server not found; skipped")
        return 77
    if not opts.server or not os.access(opts.server, os.X_OK):
        print("compat: no kvlab-server (pass its path or set KVLAB_SERVER)")
        return 1
    opts.server = os.path.abspath(opts.server)
    seed = opts.seed if opts.seed is not None else random.randrange(1 << 32)
    if opts.jobs > 1 and opts.worker is None:
        return parent(opts, seed)
    if opts.worker is None:
        opts.worker = 0
    print("compat: seed %d%s%s%s" % (seed, " backend " + opts.backend if opts.backend else "",
                                    " RESP3" if opts.resp3 else "",
                                    " two-client mode" if opts.two_client else ""))
    sys.stdout.flush()

    workdir = tempfile.mkdtemp(prefix="kvlab-compat-")
    redis_argv = lambda p: [redis_bin, "--port", str(p), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--daemonize", "no", "--dir", workdir,
                            # blocked clients time out on the server cron: every 10 ms
                            # instead of 100 (hz 10)
                            "--hz", "100"]
    # KVLAB_SERVER_MODE: the execution mode the suite runs in (tests/meson.build, server_modes).
    mode = os.environ.get("KVLAB_SERVER_MODE")
    kv_argv = lambda p: ([opts.server, "--port", str(p), "--threads", str(opts.threads)]
                         + (["--backend", opts.backend] if opts.backend else [])
                         + (["--mode", mode] if mode else []))
    # One server pair per lane (the exact mode uses the first): pipelined batches go to every
    # lane at once, so that one pair waiting on a blocked command does not hold up the others.
    nlanes = 1 if opts.exact or opts.only is not None or opts.two_client else max(1, opts.lanes)
    lanes = [(Server("redis-server" + ("-%d" % j if j else ""), redis_argv, workdir),
              Server("kvlab-server" + ("-%d" % j if j else ""), kv_argv, workdir))
             for j in range(nlanes)]

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    status = 1
    try:
        for r, k in lanes:
            r.start()
            k.start()
        if opts.two_client:
            found = twoclient.session(seed, opts.count, lanes[0][0].port, lanes[0][1].port,
                                      opts.only, opts.verbose, opts.max_reports)
            status = 1 if found else 0
        else:
            status = session(opts, seed, lanes)
    except KeyboardInterrupt:
        print("compat: interrupted")
    finally:
        for r, k in lanes:
            k.stop()
            r.stop()
    if status == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print("compat: server logs in %s" % workdir)
    return status


def parent(opts, seed):
    """--jobs J: J copies of this script as workers (--worker j, the same seed), each with its own
    server pair, so that no command of one worker sees another's keys or global state (KEYS,
    SCAN, DBSIZE, FLUSHALL, PUBSUB, CONFIG, SLOWLOG are all per server). Their output is relayed
    line by line, prefixed [wj]; the totals are summed from their compat-result lines."""
    print("compat: seed %d%s, %d workers" % (seed, " backend " + opts.backend if opts.backend
                                             else "", opts.jobs))
    sys.stdout.flush()
    t0 = time.time()
    argv = [a for a in sys.argv[1:]]
    procs = []
    for j in range(opts.jobs):
        procs.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), opts.server] + [
                a for a in argv if a != opts.server and os.path.abspath(a) != opts.server]
            + ["--seed", str(seed), "--worker", str(j)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
    totals = {"sequences": 0, "commands": 0, "divergences": 0}
    lock = threading.Lock()

    def relay(j, p):
        for line in p.stdout:
            line = line.decode("utf-8", "replace").rstrip("\n")
            with lock:
                if line.startswith("compat-result:"):
                    for kv in line.split()[1:]:
                        k, v = kv.split("=")
                        if k in totals:
                            totals[k] += int(v)
                print("[w%d] %s" % (j, line))
                sys.stdout.flush()

    threads = [threading.Thread(target=relay, args=(j, p)) for j, p in enumerate(procs)]
    for t in threads:
        t.start()
    status = 0
    try:
        for p in procs:
            p.wait()
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.terminate()  # each worker stops its own servers
        for p in procs:
            p.wait()
        print("compat: interrupted")
        status = 1
    for t in threads:
        t.join()
    codes = [p.returncode for p in procs]
    if status == 0:
        status = 77 if all(c == 77 for c in codes) else max(c for c in codes if c != 77)
    took = time.time() - t0
    print("compat: %d workers, %d sequences, %d commands run, %.1f s, %.0f commands/s, "
          "%d divergences" % (opts.jobs, totals["sequences"], totals["commands"], took,
                              totals["commands"] / max(took, 1e-9), totals["divergences"]))
    print("compat-result: sequences=%d commands=%d divergences=%d seconds=%.1f"
          % (totals["sequences"], totals["commands"], totals["divergences"], took))
    return status


def session(opts, seed, lanes):
    t0 = time.time()
    redis, kvlab = lanes[0]
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
    # WAIT blocks for its whole timeout on both servers (no replica acknowledges), though Redis
    # does not flag it blocking: its timeouts stay a few milliseconds too.
    gen = grammar.Generator(random.Random(seed), table, docs, names, set(blocking) | {"wait"})
    focus_names = names
    if opts.commands:  # the focus commands; the others still fill the sequences
        want = {c.strip().lower() for c in opts.commands.split(",")}
        focus_names = [n for n in names if n in want]
    pair = Pair(lanes[0][0], lanes[0][1], opts.timeout, 3 if opts.resp3 else 2)
    fasts = [] if opts.exact else [FastPair(lane, opts.timeout, pair.proto) for lane in lanes]
    fast = fasts[0] if fasts else None
    focuses = None if opts.random else [n for n in focus_names for _ in range(opts.count)]

    def sequence(k):
        """Sequence number k: its own random generator, seeded by (seed, k), so that any one
        sequence is generated again alone (--only K), whichever worker or batch ran it."""
        gen.rng = random.Random(seed * 1000003 + k)
        return gen.sequence(focuses[k] if focuses is not None else gen.rng.choice(focus_names))

    # This worker's share: sequences worker, worker + jobs, ...; with --ops, until it has run its
    # share of the commands, otherwise --count sequences in all (per command without --random).
    limit = opts.count if focuses is None else len(focuses)
    ops_share = None if opts.ops is None else -(-opts.ops // opts.jobs)
    if opts.only is not None:
        todo = iter([opts.only])
    else:
        todo = iter(range(opts.worker, 1 << 62 if ops_share else limit, opts.jobs))

    seen = set()
    shrunk_names = set()  # one reproducer per command: the first found
    stats = {"sequences": 0, "commands": 0, "allowed": 0, "replayed": 0}
    allowed_hits = {}
    state = {"stop": False}

    def diverged(k, seq, res):
        """A divergence (res = (i, a, b)) found in either mode: reproduced and shrunk in the exact
        mode, then printed."""
        if fast is not None:
            stats["replayed"] += 1
            exact = run(pair, gen, allow, seq)
            if exact is None or exact[0] == "allowed":
                # Seen pipelined only: timing (a blocked command's wait) decided it. Reported with
                # the pipelined replies, unshrunk; replay with --only K --exact to study it.
                i, a, b = res
                name = gen.name_of(seq[i])
                key = (name, "pipelined only", a[0], b[0])
                if key not in seen:
                    seen.add(key)
                    print("\nDIVERGENCE in %s (sequence %d, seed %d) in the pipelined mode only; "
                          "the exact mode answered %s" % (name.upper(), k, seed,
                                                          "alike" if exact is None else
                                                          "an allow-listed difference"))
                    report(pair, gen, seq, res, sys.stdout)
                return
            res = exact
        i, a, b = res
        name = gen.name_of(seq[i])
        key = (name, a[0], b[0])
        if key in seen or name in shrunk_names:
            return
        seen.add(key)
        shrunk_names.add(name)

        def still_fails(cand):
            r = run(pair, gen, allow, cand)
            return r is not None and r[0] != "allowed" and gen.name_of(cand[r[0]]) == name

        small = shrink(seq[: i + 1], still_fails, fixed_prefix=lambda c: len(
            gen.name_of(c).split("|")))
        res2 = run(pair, gen, allow, small)
        pair.fresh()  # leaves no subscription or client state behind for the pipelined mode
        print("\nDIVERGENCE in %s (sequence %d, seed %d, shrunk %d -> %d commands)"
              % (name.upper(), k, seed, i + 1, len(small)))
        report(pair, gen, small, res2 if res2 and res2[0] != "allowed" else res, sys.stdout)
        sys.stdout.flush()
        if len(seen) >= opts.max_reports:
            print("compat: stopping after %d divergences" % len(seen))
            state["stop"] = True

    def account(k, seq, res):
        if res is None:
            return
        if res[0] == "allowed":
            stats["allowed"] += 1
            allowed_hits[res[1]] = allowed_hits.get(res[1], 0) + 1
            return
        diverged(k, seq, res)

    last_progress = time.time()
    again = []
    while not state["stop"]:
        if ops_share is not None and stats["commands"] >= ops_share and not again:
            break
        batch = again
        again = []
        want = 1 if fast is None else opts.batch * len(fasts)
        while len(batch) < want:
            if ops_share is not None and stats["commands"] + sum(
                    len(s) for _, s in batch) >= ops_share:
                break
            k = next(todo, None)
            if k is None:
                break
            batch.append((k, sequence(k)))
        if not batch:
            break
        if fast is None:
            k, seq = batch[0]
            if opts.verbose:
                print("-- sequence %d" % k)
                for c in seq:
                    print("   " + resp.cli_line(c))
            results = [run(pair, gen, allow, seq)]
        else:
            # One batch per lane (server pair), exchanged all at once.
            per = -(-len(batch) // len(fasts))
            chunks = [[s for _, s in batch[i:i + per]] for i in range(0, len(batch), per)]
            firsts = set(range(0, len(batch), per))
            built = [f.build(gen, c) for f, c in zip(fasts, chunks)]
            entries = []
            for f, (payload, total, _) in zip(fasts, built):
                entries += [(f.socks[0], payload, total), (f.socks[1], payload, total)]
            replies = exchange(entries, opts.timeout)
            results = []
            for j, (f, c, (payload, total, layouts)) in enumerate(zip(fasts, chunks, built)):
                results += f.decide(gen, allow, c, layouts, total, replies[2 * j],
                                    replies[2 * j + 1])
        for n, ((k, seq), res) in enumerate(zip(batch, results)):
            if res == "again" and (fast is None or n in firsts):
                res = run(pair, gen, allow, seq)  # never undecided twice: the exact mode decides
            if res == "again":
                again.append((k, seq))
                continue
            stats["sequences"] += 1
            stats["commands"] += len(seq)
            account(k, seq, res)
            if state["stop"]:
                break
        if opts.progress and time.time() - last_progress >= opts.progress:
            last_progress = time.time()
            took = last_progress - t0
            print("compat: progress: %d commands in %d sequences, %.0f s, %.0f commands/s"
                  % (stats["commands"], stats["sequences"], took, stats["commands"] / took))
            sys.stdout.flush()
    took = time.time() - t0
    print("\ncompat: %d commands generated (%d kvlab commands without a Redis grammar: %s), "
          "%d sequences, %d commands run, %.1f s, %.0f commands/s (%s mode)"
          % (len(names), len(unknown), ",".join(unknown) or "-", stats["sequences"],
             stats["commands"], took, stats["commands"] / max(took, 1e-9),
             "exact" if fast is None else "pipelined"))
    if allowed_hits:
        print("compat: allow-listed divergences seen: %s" % ", ".join(
            "%s x%d" % kv for kv in sorted(allowed_hits.items())))
    print("compat: %d divergences" % len(seen))
    # One line the parent of --jobs workers sums up.
    print("compat-result: sequences=%d commands=%d divergences=%d seconds=%.1f"
          % (stats["sequences"], stats["commands"], len(seen), took))
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

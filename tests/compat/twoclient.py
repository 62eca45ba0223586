"""The two-client mode of the differential tester (compat.py --two-client).

One scenario drives two connections against each server, one server after the other:
  1. B sets up the keys (setup commands, replies compared).
  2. A sends one blocking command (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX,
     BZMPOP, XREAD BLOCK, XREADGROUP BLOCK) with a timeout of 0, of seconds (it never runs out
     during the scenario) or of a few milliseconds (the scenario then waits for the timeout
     before B acts). The tester waits until A has answered at once or the server reports it
     blocked (INFO clients blocked_clients), at most BLOCK_WAIT_S: B never starts earlier, so
     the outcome does not depend on timing.
  3. B runs a short random sequence: pushes of every type (also onto a key of the wrong type,
     and into a destination of the wrong type), LMOVE/RPOPLPUSH/RENAME/COPY onto the watched key,
     MULTI/EXEC blocks that push, DEL, SET, expiry in the past, and XADD with explicit IDs.
  4. Still blocked? INFO clients says (commands that serve a waiter do so before they reply, on
     both servers). A's outcome is its reply, or "still blocked" (then CLIENT UNBLOCK ends the
     wait, and that reply is not compared).
  5. The final state of every involved key: TYPE, the value (LRANGE, ZRANGE WITHSCORES, SMEMBERS
     as a set, HGETALL as pairs, GET, XRANGE and XINFO GROUPS), and whether it has a TTL.
Everything is compared: A's outcome, each of B's replies, the final state. A divergence is
shrunk (setup and B's commands dropped one by one while the same part still differs) and printed
as a reproducer. Deterministic for a seed: scenario K has its own generator seeded by (seed, K).
"""
import random
import select
import socket
import time

import resp

BLOCK_WAIT_S = 2.0  # at most this long for A to block (or answer at once)
REPLY_WAIT_S = 2.0  # at most this long for A's reply once the server says it is not blocked

# The keys a scenario may touch: the blocking command's keys and destination, and a source that
# B moves or renames onto them.
K1, K2, DST, SRC = b"bk1", b"bk2", b"bdst", b"bsrc"
KEYS = (K1, K2, DST, SRC)


class Gen:
    """Generates one scenario from its own random.Random."""

    def __init__(self, rng):
        self.r = rng
        self.next_id = 10  # explicit stream IDs, increasing within a scenario

    def pick(self, *xs):
        return self.r.choice(xs)

    def elems(self, n=None):
        n = n or self.r.randint(1, 3)
        return [self.pick(b"a", b"b", b"c", b"foo", b"1", b"") for _ in range(n)]

    def sid(self):
        self.next_id += self.r.randint(1, 3)
        return b"%d-1" % self.next_id

    def value(self, key, kind):
        """Commands that give key a value of kind (or none)."""
        if kind == "none":
            return []
        if kind == "list":
            return [(b"RPUSH", key) + tuple(self.elems())]
        if kind == "zset":
            return [(b"ZADD", key, b"1", b"m1", b"2", b"m2")]
        if kind == "string":
            return [(b"SET", key, b"str")]
        if kind == "stream":
            return [(b"XADD", key, b"1-1", b"f", b"v")]
        if kind == "hash":
            return [(b"HSET", key, b"f", b"v")]
        return [(b"SADD", key, b"m")]

    def blocking(self):
        """(command, its keys' kind, timeout class) for connection A."""
        r = self.r
        tclass = r.choices(["zero", "long", "short"], [70, 20, 10])[0]
        secs = {"zero": b"0", "long": b"5", "short": b"0.05"}[tclass]
        ms = {"zero": b"0", "long": b"5000", "short": b"50"}[tclass]
        keys = [K1] if r.random() < 0.7 else [K1, K2]
        kind = r.choice(["blpop", "brpop", "blmove", "brpoplpush", "blmpop", "bzpopmin",
                         "bzpopmax", "bzmpop", "xread", "xreadgroup"])
        if kind in ("blpop", "brpop"):
            return (kind.upper().encode(),) + tuple(keys) + (secs,), "list", tclass
        if kind == "blmove":
            return (b"BLMOVE", K1, self.pick(DST, DST, K1), self.pick(b"LEFT", b"RIGHT"),
                    self.pick(b"LEFT", b"RIGHT"), secs), "list", tclass
        if kind == "brpoplpush":
            return (b"BRPOPLPUSH", K1, self.pick(DST, DST, K1), secs), "list", tclass
        if kind == "blmpop":
            cmd = (b"BLMPOP", secs, b"%d" % len(keys)) + tuple(keys) + (
                self.pick(b"LEFT", b"RIGHT"),)
            if r.random() < 0.4:
                cmd += (b"COUNT", self.pick(b"1", b"2", b"5"))
            return cmd, "list", tclass
        if kind in ("bzpopmin", "bzpopmax"):
            return (kind.upper().encode(),) + tuple(keys) + (secs,), "zset", tclass
        if kind == "bzmpop":
            cmd = (b"BZMPOP", secs, b"%d" % len(keys)) + tuple(keys) + (self.pick(b"MIN", b"MAX"),)
            if r.random() < 0.4:
                cmd += (b"COUNT", self.pick(b"1", b"2", b"5"))
            return cmd, "zset", tclass
        count = (b"COUNT", self.pick(b"1", b"2", b"10")) if r.random() < 0.4 else ()
        if kind == "xread":
            ids = tuple(self.pick(b"$", b"$", b"1-1", b"0-0") for _ in keys)
            return (b"XREAD",) + count + (b"BLOCK", ms, b"STREAMS") + tuple(keys) + ids, \
                "stream", tclass
        noack = (b"NOACK",) if r.random() < 0.2 else ()
        return (b"XREADGROUP", b"GROUP", b"g", b"c") + count + (b"BLOCK", ms) + noack + (
            b"STREAMS",) + tuple(keys) + (b">",) * len(keys), "stream", tclass

    def setup(self, kind, cmd):
        """B's commands before A blocks: the blocking keys mostly absent (so that A blocks),
        sometimes of the wrong or the right type; the destination often of the wrong type; the
        source a list, a sorted set or a stream."""
        r = self.r
        out = []
        for key in (K1, K2):
            if key not in cmd:
                continue
            w = r.random()
            if w < 0.1:
                out += self.value(key, self.pick("string", "hash", "set", "list", "zset"))
            elif w < 0.2 and kind != "stream":
                out += self.value(key, kind)
            elif kind == "stream" and w < 0.8:
                out += self.value(key, "stream")  # XREAD $ on an existing stream blocks
        if cmd[0] == b"XREADGROUP":
            for key in (K1, K2):
                if key in cmd and r.random() < 0.9:
                    out.append((b"XGROUP", b"CREATE", key, b"g", self.pick(b"$", b"0"),
                                b"MKSTREAM"))
        if DST in cmd:
            out += self.value(DST, r.choices(["none", "list", "string", "zset", "hash"],
                                             [40, 20, 25, 10, 5])[0])
        out += self.value(SRC, r.choices(["list", "zset", "stream", "none"], [40, 25, 25, 10])[0])
        return out

    def action(self, kind):
        """One command (or a MULTI/EXEC block) of B's sequence."""
        r = self.r
        k = r.choices([K1, K2, DST, SRC], [50, 15, 20, 15])[0]
        w = r.random()
        if w < 0.45:  # a push of the blocking command's type, or of another
            t = kind if r.random() < 0.75 else self.pick("list", "zset", "stream")
            if t == "list":
                return [(self.pick(b"RPUSH", b"LPUSH", b"RPUSHX", b"LPUSHX"), k) +
                        tuple(self.elems())]
            if t == "zset":
                if r.random() < 0.3:
                    return [(b"ZINCRBY", k, b"1", self.pick(b"m1", b"m3"))]
                return [(b"ZADD", k, self.pick(b"1", b"3", b"-1"), self.pick(b"m1", b"m3"))]
            return [(b"XADD", k, self.sid(), b"f", self.pick(b"v", b"w"))]
        if w < 0.55:
            return [self.pick((b"LMOVE", SRC, k, b"LEFT", b"RIGHT"), (b"RPOPLPUSH", SRC, k),
                              (b"RENAME", SRC, k), (b"COPY", SRC, k, b"REPLACE"))]
        if w < 0.70:
            inner = [a for _ in range(r.randint(1, 3)) for a in self.action(kind)
                     if a[0] not in (b"MULTI", b"EXEC")]
            if r.random() < 0.3:
                inner.append(self.pick((b"DEL", k), (b"SET", k, b"x")))
            return [(b"MULTI",)] + inner + [(b"EXEC",)]
        if w < 0.80:
            return [self.pick((b"DEL", k), (b"SET", k, b"x"), (b"UNLINK", k))]
        if w < 0.88:
            return [self.pick((b"PEXPIREAT", k, b"1"), (b"EXPIRE", k, b"100"),
                              (b"SET", k, b"x", b"PXAT", b"1"), (b"PERSIST", k))]
        return [self.pick((b"LPOP", k), (b"ZREM", k, b"m1"), (b"XTRIM", k, b"MAXLEN", b"0"),
                          (b"XDEL", k, b"1-1"), (b"LTRIM", k, b"1", b"0"))]


def scenario(seed, k):
    g = Gen(random.Random(seed * 1000003 + k))
    cmd, kind, tclass = g.blocking()
    setup = g.setup(kind, cmd)
    actions = [a for _ in range(g.r.randint(1, 4)) for a in g.action(kind)]
    return {"setup": setup, "block": cmd, "tclass": tclass, "actions": actions}


class Outcome:
    """What one server did with a scenario."""

    def __init__(self):
        self.setup, self.a, self.b, self.state = [], None, [], []

    def parts(self):
        return {"setup": self.setup, "A": self.a, "B": self.b, "state": self.state}


def _readable(sock, timeout):
    r, _, _ = select.select([sock], [], [], timeout)
    return bool(r)


def _blocked_clients(c):
    text = c.call("INFO", "clients")[1].decode()
    for line in text.split("\r\n"):
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    return -1


def _state(c):
    out = []
    for key in KEYS:
        t = c.call("TYPE", key)[1]
        if t == b"string":
            v = c.call("GET", key)
        elif t == b"list":
            v = c.call("LRANGE", key, b"0", b"-1")
        elif t == b"zset":
            v = c.call("ZRANGE", key, b"0", b"-1", b"WITHSCORES")
        elif t == b"set":
            v = ("set", tuple(sorted(c.call("SMEMBERS", key)[1] or ())))
        elif t == b"hash":
            items = c.call("HGETALL", key)[1] or ()
            v = ("pairs", tuple(sorted(zip(items[::2], items[1::2]))))
        elif t == b"stream":
            v = (c.call("XRANGE", key, b"-", b"+"), c.call("XINFO", b"GROUPS", key))
        else:
            v = None
        ttl = c.call("PTTL", key)[1]
        out.append((key, t, v, "ttl" if ttl >= 0 else ttl))
    return out


def run(port, sc):
    """Runs scenario sc against the server on port; returns its Outcome."""
    o = Outcome()
    b = resp.Client(port, timeout=5)
    a = resp.Client(port, timeout=5)
    try:
        b.call("FLUSHALL")
        for cmd in sc["setup"]:
            o.setup.append(b.call(*cmd))
        a_id = a.call("CLIENT", "ID")[1]
        a.sock.sendall(resp.encode(sc["block"]))
        answered = False
        deadline = time.monotonic() + BLOCK_WAIT_S
        while time.monotonic() < deadline:
            if sc["tclass"] != "short" and _blocked_clients(b) == 1:
                break
            if _readable(a.sock, 0.002 if sc["tclass"] != "short" else 0.05):
                o.a = ("at once", a.read())
                answered = True
                break
        else:
            o.a = ("neither answered nor blocked in %.1f s" % BLOCK_WAIT_S,)
            answered = True
        for cmd in sc["actions"]:
            o.b.append(b.call(*cmd))
        if not answered:
            if _blocked_clients(b) == 0:
                a.sock.settimeout(REPLY_WAIT_S)
                try:
                    o.a = ("served", a.read())
                except (OSError, ConnectionError) as e:
                    o.a = ("no reply though not blocked", str(e))
            else:
                o.a = ("still blocked",)
                b.call("CLIENT", "UNBLOCK", str(a_id))
                a.sock.settimeout(REPLY_WAIT_S)
                try:
                    a.read()  # the unblocked wait's answer: not compared
                except (OSError, ConnectionError):
                    pass
        o.state = _state(b)
    finally:
        a.close()
        b.close()
    return o


def differs(ra, rb):
    """The parts (setup, A, B, state) in which two outcomes differ."""
    pa, pb = ra.parts(), rb.parts()
    return [p for p in ("setup", "A", "B", "state") if pa[p] != pb[p]]


def show(sc):
    lines = ["  B: " + resp.cli_line(c) for c in sc["setup"]]
    lines.append("  A: " + resp.cli_line(sc["block"]) +
                 ("   (the scenario waits for its timeout first)" if sc["tclass"] == "short"
                  else "   (blocks; B waits for blocked_clients:1)"))
    lines += ["  B: " + resp.cli_line(c) for c in sc["actions"]]
    return "\n".join(lines)


def show_outcome(o, parts):
    out = []
    if "setup" in parts:
        out.append("    setup replies: %r" % (o.setup,))
    if "A" in parts:
        out.append("    A: %r" % (o.a,))
    if "B" in parts:
        out.append("    B's replies: %r" % (o.b,))
    if "state" in parts:
        out.append("    final keys: %r" % (o.state,))
    return "\n".join(out)


def shrink(sc, fails):
    """Drops setup and action commands one at a time while fails(candidate) holds. A MULTI or
    EXEC is dropped only with its whole block."""
    def blocks(cmds):
        out, cur = [], None
        for c in cmds:
            if c[0] == b"MULTI":
                cur = [c]
            elif cur is not None:
                cur.append(c)
                if c[0] == b"EXEC":
                    out.append(cur)
                    cur = None
            else:
                out.append([c])
        if cur:
            out.append(cur)
        return out

    changed = True
    while changed:
        changed = False
        for part in ("actions", "setup"):
            bl = blocks(sc[part])
            for i in range(len(bl)):
                cand = dict(sc)
                cand[part] = [c for j, b in enumerate(bl) if j != i for c in b]
                if fails(cand):
                    sc, changed = cand, True
                    break
            if changed:
                break
    return sc


def session(seed, count, redis_port, kvlab_port, only=None, verbose=False, max_reports=20):
    """Runs count scenarios (or only scenario `only`); prints each divergence, shrunk; returns
    the number of distinct divergences (by blocking command and differing parts)."""
    t0 = time.time()
    seen = {}
    ran = 0
    todo = [only] if only is not None else range(count)
    for k in todo:
        sc = scenario(seed, k)
        if verbose:
            print("-- scenario %d\n%s" % (k, show(sc)))
        ra, rb = run(redis_port, sc), run(kvlab_port, sc)
        ran += 1
        parts = differs(ra, rb)
        if not parts:
            continue
        key = (sc["block"][0], tuple(parts), ra.a[0] if ra.a else None,
               rb.a[0] if rb.a else None)
        if key in seen:
            seen[key] += 1
            continue
        seen[key] = 1

        def fails(cand, parts=parts):
            return differs(run(redis_port, cand), run(kvlab_port, cand)) == parts

        small = shrink(sc, fails)
        ra, rb = run(redis_port, small), run(kvlab_port, small)
        print("\nDIVERGENCE (two clients; scenario %d, seed %d): %s differ" %
              (k, seed, ", ".join(differs(ra, rb) or parts)))
        print("reproducer (on an empty keyspace; A and B are two connections):")
        print(show(small))
        print("  redis-server:\n" + show_outcome(ra, parts))
        print("  kvlab-server:\n" + show_outcome(rb, parts))
        if len(seen) >= max_reports:
            print("compat: stopping after %d divergences" % len(seen))
            break
    took = time.time() - t0
    print("\ncompat: two-client mode: %d scenarios, %.1f s, %d distinct divergences%s" %
          (ran, took, len(seen), "" if not seen else " (" + ", ".join(
              "%s %s x%d" % (k[0].decode(), "/".join(k[1]), n) for k, n in seen.items()) + ")"))
    return len(seen)

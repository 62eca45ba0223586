#!/usr/bin/env python3
"""kvlab's glob matcher against redis-server 7.0's stringmatchlen(), through every command that
takes a pattern.

A fixed keyspace of awkward names (the empty key, ']', '[', '-', '^', '\\', '*', '?', NUL, bytes
0x7f..0xff, case pairs, long runs of 'a') is loaded into both servers, and thousands of generated
patterns (a seeded generator, weighted towards '*', '?', '[', ']', '^', '-' and '\\', plus a list
of corners: unclosed classes, reversed ranges, a trailing backslash, 999 to 1001 runs of '*') go
through KEYS on both; every 7th pattern also through SCAN, HSCAN, SSCAN, ZSCAN (MATCH, one page),
PUBSUB CHANNELS, and PSUBSCRIBE (a PUBLISH to every key name counts the patterns that match). The
case-insensitive matcher goes through COMMAND LIST FILTERBY PATTERN (Redis matches command names
with nocase), compared on the commands both servers have. Replies must be equal as sets.

Usage: glob_test.py KVLAB_SERVER [--seed N] [--count N] [-v]. Exit 0 pass, 1 fail, 77 without
redis-server. About 2-4 s on the shared 2-core machine.
"""
import argparse
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resp  # noqa: E402
from compat import Server  # noqa: E402

KEYS = [b"", b"a", b"b", b"A", b"B", b"z", b"Z", b"ab", b"abc", b"aBc", b"ABC", b"hello",
        b"hallo", b"hxllo", b"HELLO", b"hllo", b"heeello", b"user:42:name", b"user::name",
        b"]", b"[", b"-", b"^", b"\\", b"*", b"?", b"!", b"_", b"`", b"{", b"|", b"a]", b"[a]",
        b"a-b", b"a\\b", b"a*b", b"a?b", b"\\\\", b"\x00", b"a\x00b", b"\x00\x00", b"\x7f",
        b"\x80", b"\xe9t\xe9", b"\xff", b"a\xff", b"\xff\x00", b"aa", b"aaa", b"a" * 40,
        b"a" * 39 + b"b", b"ba" * 10, b"*?" * 4, b"x" * 50, b"[]", b"[^]", b"a[b", b"^a", b"a" * 1100]
# Bytes patterns are made of: the metacharacters often, then what the keys hold.
PATTERN_BYTES = (b"*" * 6 + b"?" * 3 + b"[" * 4 + b"]" * 3 + b"^" * 2 + b"-" * 3 + b"\\" * 3 +
                 b"aaabbAZz\x00\x7f\x80\xe9\xff:!_`{|")
NOCASE_BYTES = b"**??[[]]^--\\|_aeiorstlgcEIOXZ"


def random_keys(rng, n):
    alphabet = b"ab]-[^\\*?AZz\x00\x80\xff"
    return [bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(n)]


def random_pattern(rng, alphabet, longest):
    return bytes(rng.choice(alphabet) for _ in range(rng.randint(0, longest)))


def mutated_pattern(rng, keys):
    """A key with some bytes turned into '?', '*', an escape or a class around them, so that
    most of these patterns match something."""
    out = bytearray()
    for b in rng.choice(keys):
        r = rng.random()
        if r < 0.15:
            out += b"?"
        elif r < 0.3:
            out += b"*"
        elif r < 0.4:
            out += b"\\" + bytes([b])
        elif r < 0.55:  # a class holding b or not: "[bo]", "[^ob]", "[b-o]"...
            other = rng.choice(PATTERN_BYTES)
            members = bytes(rng.sample([b, other, other ^ 32], 2))
            if rng.random() < 0.4:
                members += b"-" + bytes([other])
            out += b"[" + (b"^" if rng.random() < 0.3 else b"") + members + b"]"
        else:
            out.append(b)
    return bytes(out)


def corner_patterns():
    out = [b"", b"*", b"**", b"?", b"[", b"[^", b"[]", b"[]]", b"[^]", b"[^]]", b"[a-", b"[a-]",
           b"[-a]", b"[a-c", b"[z-a]", b"[Z-a]", b"[a-Z]", b"[a-\xff]", b"[\xff-a]", b"[\x80-\xff]",
           b"[\x00-a]", b"\\", b"a\\", b"\\\\", b"[\\", b"[\\]", b"[\\]]", b"[\\-]", b"[a\\-z]",
           b"\\*", b"\\?", b"\\[", b"*\\", b"a*\\", b"[]a]", b"[!a]", b"[^a-z]", b"[^\\]",
           b"h[ae]llo", b"h[^e]llo", b"h*llo", b"h?llo", b"user:*:name", b"*:*", b"a*a*a*b",
           b"a*" * 20 + b"b", b"*a" * 20, b"*?" * 40, b"?" * 40, b"*\x00*", b"[\x00]", b"\x00"]
    # Redis gives up past 1000 nested runs of '*' (CVE-2024-31228): the 1001st run, unless it
    # ends the pattern, makes the pattern match nothing.
    for runs in (999, 1000, 1001, 1002):
        out += [b"*a" * runs, b"a*" * runs, b"*?" * runs, b"*a" * runs + b"*", b"?*" * runs]
    out += [b"*?" * 20000]  # Redis's "very long nested loops" regression, shorter
    return out


def pipeline(client, commands, batch=256):
    """Replies to commands, sent in batches so that neither side's buffers fill up."""
    out = []
    for i in range(0, len(commands), batch):
        part = commands[i:i + batch]
        client.sock.sendall(b"".join(resp.encode(c) for c in part))
        out += [client.read() for _ in part]
    return out


def as_set(reply):
    kind, value = reply
    if kind == "error":
        return ("error", value)
    return frozenset(e[1] for e in value)


def scan_set(reply):
    kind, value = reply
    if kind == "error":
        return ("error", value)
    cursor, items = value
    return (cursor[1], frozenset(e[1] for e in items[1]))


def pairs_set(reply):
    kind, value = reply
    if kind == "error":
        return ("error", value)
    cursor, items = value
    flat = [e[1] for e in items[1]]
    return (cursor[1], frozenset(zip(flat[0::2], flat[1::2])))


def load(client, keys):
    cmds = [("SET", k, b"1") for k in keys]
    cmds.append(("HSET", "\x01h") + tuple(x for k in keys for x in (k, b"v")))
    cmds.append(("SADD", "\x01s") + tuple(keys))
    cmds.append(("ZADD", "\x01z") + tuple(x for k in keys for x in (b"1", k)))
    for r in pipeline(client, cmds):
        if r[0] == "error":
            raise SystemExit("loading failed: %r" % (r,))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server")
    ap.add_argument("--seed", type=int, default=20270101)
    ap.add_argument("--count", type=int, default=4000, help="generated case-sensitive patterns")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    opts.server = os.path.abspath(opts.server)
    redis_exe = shutil.which("redis-server")
    if redis_exe is None:
        print("SKIP: redis-server is not installed")
        return 77
    rng = random.Random(opts.seed)
    keys = sorted(set(KEYS + random_keys(rng, 40)))
    patterns = corner_patterns() + [
        random_pattern(rng, PATTERN_BYTES, 10) if i % 2 else mutated_pattern(rng, keys)
        for i in range(opts.count)]
    # Under nocase an escape folds outside a class ("\\Get" finds get) but not inside one.
    nocase = [b"*", b"CLIENT*", b"*|*", b"[A-Z]*", b"[^A-Z]*", b"x[A-z]*", b"*\\|*", b"G?T",
              b"[c-E]*", b"\\Get", b"[\\G]et", b"[\\g]et", b"[^\\G]et", b"*[\\T]",
              b"[\\S]*", b"?[\\E]t*"] + [random_pattern(rng, NOCASE_BYTES, 8) for _ in range(opts.count // 4)]
    t0 = time.time()
    work = tempfile.mkdtemp(prefix="kvlab-glob-")
    redis = Server("redis", lambda p: [redis_exe, "--port", str(p), "--bind", "127.0.0.1",
                                       "--save", "", "--appendonly", "no"], work)
    kvlab = Server("kvlab", lambda p: [opts.server, "--port", str(p), "--threads", "2"], work)
    failures = []
    try:
        redis.start()
        kvlab.start()
        rc, kc = resp.Client(redis.port, timeout=60), resp.Client(kvlab.port, timeout=60)
        load(rc, keys)
        load(kc, keys)
        subs = []
        for port in (redis.port, kvlab.port):  # channels for PUBSUB CHANNELS: the key names
            s = resp.Client(port, timeout=60)
            pipeline(s, [("SUBSCRIBE",) + tuple(keys)])
            subs.append(s)

        def compare(what, pattern, a, b):
            if a != b:
                failures.append((what, pattern, a, b))
                if len(failures) <= 20:
                    x, y = a, b
                    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
                        x, y = a[1], b[1]  # a SCAN page: the same cursor, different members
                    only_r = sorted(x - y) if isinstance(x, frozenset) else x
                    only_k = sorted(y - x) if isinstance(y, frozenset) else y
                    print("FAIL %s %r: redis-only %r kvlab-only %r" % (
                        what, pattern[:60], only_r, only_k))
            elif opts.verbose:
                print("ok   %s %r" % (what, pattern))

        replies = [pipeline(c, [("KEYS", p) for p in patterns]) for c in (rc, kc)]
        for p, a, b in zip(patterns, *replies):
            compare("KEYS", p, as_set(a), as_set(b))

        sample = [p for i, p in enumerate(patterns) if i % 7 == 0]
        forms = [("SCAN", lambda p: ("SCAN", "0", "MATCH", p, "COUNT", "10000"), scan_set),
                 ("SSCAN", lambda p: ("SSCAN", "\x01s", "0", "MATCH", p, "COUNT", "10000"),
                  scan_set),
                 ("HSCAN", lambda p: ("HSCAN", "\x01h", "0", "MATCH", p, "COUNT", "10000"),
                  pairs_set),
                 ("ZSCAN", lambda p: ("ZSCAN", "\x01z", "0", "MATCH", p, "COUNT", "10000"),
                  pairs_set),
                 ("PUBSUB CHANNELS", lambda p: ("PUBSUB", "CHANNELS", p), as_set)]
        for name, make, norm in forms:
            replies = [pipeline(c, [make(p) for p in sample]) for c in (rc, kc)]
            for p, a, b in zip(sample, *replies):
                compare(name, p, norm(a), norm(b))

        # PSUBSCRIBE: a pattern subscriber per server, then PUBLISH to every key name. PUBLISH
        # counts the channel's subscriber (1) and every matching pattern subscription.
        psample = sample[:400]
        psubs = []
        for port in (redis.port, kvlab.port):
            s = resp.Client(port, timeout=60)
            s.sock.sendall(resp.encode(("PSUBSCRIBE",) + tuple(psample)))
            for _ in psample:
                s.read()
            psubs.append(s)
        counts = [pipeline(c, [("PUBLISH", k, "m") for k in keys]) for c in (rc, kc)]
        for k, a, b in zip(keys, *counts):
            compare("PUBLISH (PSUBSCRIBE count)", k, a, b)
        for s in psubs + subs:
            s.close()

        names = [set(e[1] for e in pipeline(c, [("COMMAND", "LIST")])[0][1]) for c in (rc, kc)]
        common = names[0] & names[1]
        replies = [pipeline(c, [("COMMAND", "LIST", "FILTERBY", "PATTERN", p) for p in nocase])
                   for c in (rc, kc)]
        for p, a, b in zip(nocase, *replies):
            compare("COMMAND LIST FILTERBY PATTERN", p, as_set(a) & common, as_set(b) & common)
        # CONFIG GET (nocase; a pattern without '[', '*' or '?' is a name, as Redis decides),
        # compared on the parameters both servers have.
        params = []
        for c in (rc, kc):
            flat = [e[1] for e in pipeline(c, [("CONFIG", "GET", "*")])[0][1]]
            params.append(set(flat[0::2]))
        common = params[0] & params[1]
        config = nocase + [b"maxmemory\\-policy", b"MAXMEMORY-POLICY", b"maxmemory-polic?",
                           b"max*\x00zz", b"maxmemory\x00zz", b"hash-max-*-entries", b"*-max-*"]
        replies = [pipeline(c, [("CONFIG", "GET", p) for p in config]) for c in (rc, kc)]
        for p, a, b in zip(config, *replies):
            names = [set(e[1] for e in r[1][0::2]) & common for r in (a, b)]
            compare("CONFIG GET", p, frozenset(names[0]), frozenset(names[1]))

        # FUNCTION LIST LIBRARYNAME (nocase).
        libs = [b"mylib", b"OtherLib", b"lib_2", b"LIB"]
        for c in (rc, kc):
            pipeline(c, [("FUNCTION", "LOAD", b"#!lua name=%s\nredis.register_function("
                          b"'f_%s', function() return 1 end)" % (n, n)) for n in libs])
        libpat = nocase + [b"MYLIB", b"my*", b"[A-Z]*", b"*lib", b"o*", b"[l-m]*", b"*_?"]
        replies = [pipeline(c, [("FUNCTION", "LIST", "LIBRARYNAME", p) for p in libpat])
                   for c in (rc, kc)]
        for p, a, b in zip(libpat, *replies):
            names = [frozenset(lib[1][1][1] for lib in r[1]) for r in (a, b)]
            compare("FUNCTION LIST LIBRARYNAME", p, names[0], names[1])
        checked = (len(patterns) + len(sample) * len(forms) + len(keys) + 2 * len(nocase) +
                   len(config) + len(libpat))
    finally:
        kvlab.stop()
        redis.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("%d keys, %d patterns (%d through every form), %d nocase patterns: %d comparisons, "
          "%d differ, %.1f s" % (len(keys), len(patterns), len(sample), len(nocase), checked,
                                 len(failures), time.time() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

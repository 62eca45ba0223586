#!/usr/bin/env python3
"""COMMAND DOCS argument trees and COMMAND INFO's ACL categories against redis-server 7.0.

redis-cli 7.0 builds `help <command>` and its typing hints from COMMAND DOCS: each argument's type
(pure-token, oneof, block, key, string...), token, flags (optional, multiple, multiple_token) and
nested arguments. This test renders every command's tree on both servers into a synopsis in which
each non-token argument is "x" ("SET x x [NX|XX] [GET] [EX x|PX x|...]") and compares them, so
that a structural difference fails while argument names (kvlab's own wording) may differ. It also
checks every tree of kvlab's, Redis's commands or not, for the shape redis-cli needs: a pure-token
has a token, a oneof or block has arguments. Every command's ACL categories (COMMAND INFO, in
Redis's order; COMMAND LIST FILTERBY ACLCAT reads the same) must equal Redis's, with no exceptions.

Usage: docs_test.py KVLAB_SERVER. Exit status 0 pass, 1 fail, 77 no redis-server.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resp  # noqa: E402
from compat import Server  # noqa: E402
from grammar import _pairs as as_map, _plain as plain  # noqa: E402

# Commands whose trees differ from Redis 7.0's on purpose or by kvlab's scope.
KNOWN = {
    # kvlab refuses the gossip-era cluster management subcommands; they carry no synopsis.
    **{"cluster|" + s: "unsupported in kvlab (no synopsis)" for s in (
        "addslots", "addslotsrange", "count-failure-reports", "delslots", "delslotsrange",
        "failover", "forget", "meet", "replicas", "replicate", "reset", "set-config-epoch",
        "setslot", "slaves")},
    "hscan": "kvlab accepts Redis 7.4's NOVALUES",
    "zrank": "kvlab accepts Redis 7.2's WITHSCORE",
    "zrevrank": "kvlab accepts Redis 7.2's WITHSCORE",
    "debug": "kvlab's DEBUG documents its subcommand and arguments; Redis 7.0 lists none",
    "command|getkeys": "kvlab documents the command and its arguments; Redis 7.0 lists none",
    "command|getkeysandflags": "kvlab documents the command and its arguments; Redis 7.0 lists none",
    "bitop": "kvlab gives the operation as AND|OR|XOR|NOT; Redis 7.0 as a plain string",
    "geohash": "kvlab marks the members optional, as arity -2 allows; Redis 7.0 does not",
    "geopos": "kvlab marks the members optional, as arity -2 allows; Redis 7.0 does not",
    "pfmerge": "kvlab marks the source keys optional, as arity -2 allows; Redis 7.0 does not",
    "config|get": "Redis 7.0 wraps the one repeated argument in a block",
    "psubscribe": "Redis 7.0 wraps the one repeated argument in a block",
    "bitfield": "Redis 7.0 nests GET/OVERFLOW/SET/INCRBY as one repeated oneof; kvlab lists them",
    "client|kill": "Redis 7.0 nests the filters as one repeated oneof; kvlab lists them",
    "migrate": "Redis 7.0 has an empty-string token and optional AUTH forms inside an optional",
}


def render(a, problems, where):
    a = as_map(a)
    t, flags = a.get("type"), a.get("flags", [])
    if t == "pure-token":
        if not a.get("token"):
            problems.append("%s: pure-token %r without a token" % (where, a.get("name")))
        s = a.get("token", "?")
    elif t in ("oneof", "block"):
        subs = a.get("arguments", [])
        if not subs:
            problems.append("%s: %s %r without arguments" % (where, t, a.get("name")))
        s = ("|" if t == "oneof" else " ").join(render(x, problems, where) for x in subs)
    else:
        s = "x"
    if a.get("token") and t != "pure-token":
        s = a["token"] + " " + s
    if "multiple" in flags:
        s += " ..."
    if "optional" in flags:
        s = "[" + s + "]"
    elif t == "oneof" or (t == "block" and "multiple" in flags):
        s = "(" + s + ")"
    return s


def synopses(port, problems):
    c = resp.Client(port, timeout=10)
    out = {}

    def walk(name, doc):
        doc = as_map(doc)
        out[name] = " ".join(render(x, problems, name) for x in doc.get("arguments", []))
        for sub, sdoc in as_map(doc.get("subcommands") or []).items():
            walk(sub, sdoc)

    for name, doc in as_map(plain(c.call("COMMAND", "DOCS"))).items():
        walk(name, doc)
    c.close()
    return out


def categories(port):
    """Every command's and subcommand's ACL categories, as COMMAND lists them."""
    c = resp.Client(port, timeout=10)
    out = {}

    def walk(entry):
        e = plain(entry)
        out[e[0]] = e[6]
        for sub in entry[1][9][1]:
            walk(sub)

    for entry in c.call("COMMAND")[1]:
        walk(entry)
    c.close()
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    redis_bin = shutil.which("redis-server")
    if redis_bin is None:
        print("docs_test: redis-server not found; skipped")
        return 77
    workdir = tempfile.mkdtemp(prefix="kvlab-docs-")
    redis = Server("redis-server", lambda p: [redis_bin, "--port", str(p), "--bind", "127.0.0.1",
                                               "--save", "", "--appendonly", "no", "--dir",
                                               workdir], workdir)
    binary = os.path.abspath(sys.argv[1])
    kvlab = Server("kvlab-server", lambda p: [binary, "--port", str(p)], workdir)
    try:
        redis.start()
        kvlab.start()
        ignored = []
        theirs = synopses(redis.port, ignored)
        problems = []
        ours = synopses(kvlab.port, problems)
        their_cats, our_cats = categories(redis.port), categories(kvlab.port)
    finally:
        redis.stop()
        kvlab.stop()
    both = sorted(set(ours) & set(theirs))
    same = [n for n in both if ours[n] == theirs[n]]
    for n in both:
        if ours[n] != theirs[n] and n not in KNOWN:
            problems.append("%s differs from Redis 7.0:\n  redis: %s\n  kvlab: %s"
                            % (n, theirs[n], ours[n]))
    print("docs_test: %d of %d commands and subcommands have Redis 7.0's argument tree; of the "
          "%d others, %d are listed in KNOWN" % (len(same), len(both), len(both) - len(same),
                                                  sum(1 for n in both if n not in same and n in KNOWN)))
    for n in sorted(KNOWN):
        if n in both and ours[n] == theirs[n]:
            print("docs_test: note: %s now matches Redis; its KNOWN entry can go" % n)
    for n in sorted(set(our_cats) & set(their_cats)):
        if our_cats[n] != their_cats[n]:
            problems.append("%s: ACL categories %s, Redis 7.0 %s" % (n, our_cats[n], their_cats[n]))
    print("docs_test: ACL categories compared for %d commands and subcommands"
          % len(set(our_cats) & set(their_cats)))
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Generates the command fuzz target's seed corpus and dictionary from the command table.

    /usr/bin/python3 tests/fuzz/make_command_corpus.py [KVLAB_SERVER]   (default build/server/kvlab-server)

Starts the server on a free 127.0.0.1 port, reads COMMAND DOCS (every command and subcommand with
its group and argument synopsis), stops the server, and writes:
  tests/fuzz/corpus/command/family-<group>-<backend>: one pipeline per command family, in the
      target's input format (command_fuzz.cpp): a first byte choosing the backend, then one command
      per line. It creates a key of every type, then calls each command of the family twice, with
      the synopsis's required arguments only and with its optional parts too; the backends rotate
      over the families so that each family runs on one, and all families run on every backend in
      family-all-<backend>.
  tests/fuzz/command.dict: every command and subcommand name, every option token of the synopses,
      the keys the seeds use, and the separators.
The seeds are a starting point: the fuzzer mutates them; their replies (errors included) are not
checked here. Commands the target excludes (kExcluded) are left out. Rerun after adding commands.
"""
import os
import re
import socket
import subprocess
import sys
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BACKENDS = ["hash/kvlab", "hash/locked", "skiplist/kvlab", "hash/cds-michael"]  # kBackends order
EXCLUDED = {"blpop", "brpop", "blmove", "brpoplpush", "blmpop", "bzpopmin", "bzpopmax", "bzmpop",
            "wait", "waitaof", "shutdown", "eval", "eval_ro", "evalsha", "evalsha_ro", "fcall",
            "fcall_ro", "function", "script", "client|kill", "client|pause", "config|rewrite",
            "migrate"}
# One key per type; the "key" placeholders of a family use its key.
SETUP = ["set s 10", "set str hello", "rpush l a b c", "hset h f v g 2", "sadd S a b c",
         "zadd z 1 a 2 b 3 c", "xadd x 1-1 f v", "xgroup create x grp 0", "pfadd hll a b",
         "geoadd g 13.361389 38.115556 pa 15.087269 37.502669 ca", "setbit bits 7 1"]
FAMILY_KEY = {"string": "s", "list": "l", "hash": "h", "set": "S", "sorted-set": "z",
              "stream": "x", "hyperloglog": "hll", "geo": "g", "bitmap": "bits"}
# Placeholder words of the synopses and the argument each becomes.
VALUES = {
    "value": "v1", "member": "a", "field": "f", "element": "a", "pivot": "a", "channel": "ch",
    "pattern": "*", "shardchannel": "ch", "message": "hi", "score": "1.5", "increment": "2",
    "min": "0", "max": "10", "start": "0", "end": "-1", "stop": "-1", "index": "0",
    "offset": "0", "count": "2", "numkeys": "1", "numkeys2": "1", "seconds": "100",
    "milliseconds": "100000", "timeout": "0", "unix-time-seconds": "1700000100",
    "unix-time-milliseconds": "1700000100000", "id": "1-1", "*|id": "*", "group": "grp",
    "groupname": "grp", "consumer": "c1", "consumername": "c1", "threshold": "10",
    "longitude": "13.4", "latitude": "38.1", "radius": "100", "unit": "km", "width": "100",
    "height": "100", "cursor": "0", "password": "pw", "username": "default", "name": "n1",
    "connection-name": "n1", "protover": "3", "parameter": "maxmemory", "db": "0",
    "serialized-value": "x", "ttl": "0", "bit": "1", "destkey": "d", "destination": "d",
    "source": "l", "newkey": "k2", "key": None, "slot": "0", "min-idle-time": "0",
    "start-id": "-", "end-id": "+", "encoding": "u8", "operation": "AND", "port": "6379",
    "host": "127.0.0.1", "numreplicas": "0", "delta": "1", "lat": "38.1", "lon": "13.4",
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def docs(binary):
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--threads", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        conn = redis.Connection(port=port)
        for _ in range(100):
            try:
                conn.connect()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        conn.send_command("COMMAND", "DOCS")
        reply = conn.read_response()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    out = {}

    def text(a):
        """An argument tree back as synopsis text: "EX seconds", "[NX|XX]", "key [key ...]"."""
        a = {a[j].decode(): a[j + 1] for j in range(0, len(a), 2)}
        kind = a["type"].decode()
        flags = {f.decode() for f in a.get("flags", [])}
        token = a["token"].decode() if "token" in a else ""
        if kind == "pure-token":
            s = token
        else:
            if kind in ("oneof", "block"):
                s = ("|" if kind == "oneof" else " ").join(text(x) for x in a["arguments"])
            else:
                s = a["name"].decode()
            if token:
                s = token + " " + s
        if "multiple" in flags:
            s += " [" + s + " ...]"
        return "[" + s + "]" if "optional" in flags else s

    def walk(pairs):
        for i in range(0, len(pairs), 2):
            name = pairs[i].decode()
            d = pairs[i + 1]
            fields = {d[j].decode(): d[j + 1] for j in range(0, len(d), 2)}
            synopsis = " ".join(text(a) for a in fields.get("arguments", []))
            out[name] = (fields["group"].decode(), synopsis)
            if "subcommands" in fields:
                walk(fields["subcommands"])

    walk(reply)
    return out


def instantiate(synopsis, key, full):
    """Arguments for a synopsis: required words, plus the optional ones when `full`."""
    words = synopsis.replace("[", " [ ").replace("]", " ] ").split()
    args, depth = [], 0
    for w in words:
        if w == "[":
            depth += 1
            continue
        if w == "]":
            depth -= 1
            continue
        if w == "..." or (depth > 0 and not full):
            continue
        alt = w.split("|")[0] if w != "*|id" else w
        if alt in VALUES:
            args.append(key if VALUES[alt] is None else VALUES[alt])
        elif re.fullmatch(r"[A-Z][A-Z0-9_-]*", alt):
            args.append(alt)
        elif alt in ("=", "~"):
            args.append(alt)
        elif alt.endswith("key"):
            args.append(key)
        else:
            args.append("1")
    return args


def encode(words):
    return " ".join(re.sub(r"([\\ \n])", r"\\\1", w) for w in words)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/server/kvlab-server")
    table = docs(binary)
    corpus = os.path.join(ROOT, "tests/fuzz/corpus/command")
    os.makedirs(corpus, exist_ok=True)
    for f in os.listdir(corpus):
        if f.startswith("family-"):
            os.remove(os.path.join(corpus, f))
    families = {}
    for name, (group, synopsis) in sorted(table.items()):
        if name in EXCLUDED or name.split("|")[0] in EXCLUDED:
            continue
        if "|" not in name and any(k.startswith(name + "|") for k in table):
            continue  # a container command: its subcommands stand for it
        words = name.split("|")
        key = FAMILY_KEY.get(group, "s")
        lines = {encode(words + instantiate(synopsis, key, False)),
                 encode(words + instantiate(synopsis, key, True))}
        families.setdefault(group, []).extend(sorted(lines))
    everything = []
    for i, (group, lines) in enumerate(sorted(families.items())):
        body = "\n".join(SETUP + lines) + "\n"
        everything.extend(lines)
        b = i % len(BACKENDS)
        with open(os.path.join(corpus, f"family-{group}-{BACKENDS[b].replace('/', '-')}"),
                  "wb") as f:
            f.write(bytes([b]) + body.encode())
    for b, backend in enumerate(BACKENDS):
        with open(os.path.join(corpus, f"family-all-{backend.replace('/', '-')}"), "wb") as f:
            f.write(bytes([b]) + ("\n".join(SETUP + everything) + "\n").encode())
    tokens = set()
    for name, (_, synopsis) in table.items():
        tokens.update(name.split("|"))
        tokens.update(t for t in re.findall(r"[A-Z][A-Z0-9_-]+", synopsis))
    tokens.update(FAMILY_KEY.values())
    with open(os.path.join(ROOT, "tests/fuzz/command.dict"), "w") as f:
        f.write("# libFuzzer dictionary of the command target; generated by make_command_corpus.py.\n")
        f.write('"\\x0a"\n" "\n"\\\\"\n')
        for t in sorted(tokens):
            f.write('"%s"\n' % t.replace("\\", "\\\\").replace('"', '\\"'))
    print(f"{len(table)} commands, {len(families)} families, {len(tokens)} dictionary words")


if __name__ == "__main__":
    main()

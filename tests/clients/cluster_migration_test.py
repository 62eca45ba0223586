#!/usr/bin/python3
"""Live slot migration under write load (server/features/cluster_migration.hpp).

Three kvlab-server nodes (--cluster-mode yes) configured by `kvlab cluster create`. Writer threads,
each with its own redis-py RedisCluster (which follows MOVED and ASK), INCR 10,000 keys that all
hash to the first half of node A's slots, while `kvlab cluster reshard` moves exactly those slots
from A to B, and then a second reshard moves a part of them on to C. Afterwards:
  - every counter equals the number of INCRs acknowledged to the writers (nothing lost, nothing
    applied twice);
  - no key exists on two nodes, and each key is on the node that owns its slot (KEYS * on each);
  - every reply a writer saw for a key is larger than the previous one it saw for that key (no
    wrong answer), and no command failed (the client saw only redirections);
  - keys of every value type (streams with their consumer groups included) and TTLs moved intact;
  - the source's migration status read 'done' and the reshard tool exited 0.

Usage: cluster_migration_test.py KVLAB_SERVER KVLAB_CLI      (exit 77 without python3-redis)
"""
import logging
import os
import random
import socket
import subprocess
import sys
import threading
import time

try:
    import redis
    from redis.cluster import RedisCluster
    from redis.crc import key_slot
except ImportError as e:
    print("skipped: %s (apt-get install python3-redis)" % e)
    sys.exit(77)

KEYS = 10000
logging.disable(logging.CRITICAL)  # redis-py logs every redirection it follows
WRITERS = 4
failures = []
procs = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_node(server):
    port = free_port()
    p = subprocess.Popen([server, "--port", str(port), "--threads", "2", "--cluster-mode", "yes"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p)
    deadline = time.time() + 15
    while time.time() < deadline:
        if p.poll() is not None:
            raise SystemExit("kvlab-server exited at startup (%s)" % p.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nothing listens on %d" % port)


def reshard(kvlab, port, src, dst, slots):
    r = subprocess.run([kvlab, "cluster", "reshard", "127.0.0.1:%d" % port, "--from", src,
                        "--to", dst, "--slots", slots], capture_output=True, text=True, timeout=60)
    print(r.stdout.strip())
    if r.returncode != 0:
        print(r.stderr.strip())
    return r.returncode == 0


def typed_values(rc, t):
    """The values of the keys of every type under hash tag t, as comparable Python values."""
    return (rc.get(t + "str"), rc.lrange(t + "list", 0, -1), rc.hgetall(t + "hash"),
            sorted(rc.smembers(t + "set")), rc.zrange(t + "zset", 0, -1, withscores=True),
            rc.xinfo_stream(t + "stream", full=True))


def main():
    server, kvlab = sys.argv[1], sys.argv[2]
    ports = [start_node(server) for _ in range(3)]
    subprocess.run([kvlab, "cluster", "create"] + ["127.0.0.1:%d" % p for p in ports],
                   check=True, capture_output=True, timeout=30)
    nodes = [redis.Redis(port=p) for p in ports]
    ids = [n.execute_command("CLUSTER", "MYID").decode() for n in nodes]
    # Node A owns 0-5460: the keys live in its first half, 0-2730, which moves to B; then
    # 0-1364 moves on from B to C.
    first_half = (0, 2730)
    keys, i = [], 0
    while len(keys) < KEYS:
        k = "ctr:%d" % i
        if key_slot(k.encode()) <= first_half[1]:
            keys.append(k)
        i += 1
    acked = [dict() for _ in range(WRITERS)]
    errors = []
    wrong = []
    stop = threading.Event()

    def writer(w):
        rc = RedisCluster(host="127.0.0.1", port=ports[0])
        rng = random.Random(w)
        last = {}
        mine = acked[w]
        deadline = time.time() + 60
        while not stop.is_set() and time.time() < deadline:
            k = keys[rng.randrange(KEYS)]
            try:
                v = rc.incr(k)
            except Exception as e:  # an INCR of unknown outcome: the counts cannot be checked
                errors.append("%s: %r" % (k, e))
                return
            mine[k] = mine.get(k, 0) + 1
            if v <= last.get(k, 0):
                wrong.append((k, last.get(k), v))
            last[k] = v

    # Every key exists before the migration starts, so that it has something to move.
    rc = RedisCluster(host="127.0.0.1", port=ports[0])
    pipe = rc.pipeline()
    for k in keys:
        pipe.incr(k)
    pipe.execute()
    base = {k: 1 for k in keys}
    # One key of every value type (a string with a TTL, list, hash, set, sorted set, a stream with
    # a consumer group) in each half of the moving slots, read back after both reshards.
    typed = {}
    for tag in sorted({keys[0], keys[-1]}, key=lambda k: key_slot(k.encode())):
        t = "{%s}:" % tag
        rc.set(t + "str", "v" * 300, px=600000)
        rc.rpush(t + "list", *range(200))
        rc.hset(t + "hash", mapping={"f%d" % i: i for i in range(50)})
        rc.sadd(t + "set", *range(600))
        rc.zadd(t + "zset", {"m%d" % i: i / 3 for i in range(150)})
        for i in range(150):
            rc.xadd(t + "stream", {"f": i, "g": "x" * (i % 9)}, id="%d-1" % (i + 1))
        rc.xdel(t + "stream", "3-1")
        rc.xgroup_create(t + "stream", "grp", id="0")
        rc.xreadgroup("grp", "alice", {t + "stream": ">"}, count=5)
        typed[t] = typed_values(rc, t)
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    ok1 = reshard(kvlab, ports[0], ids[0], ids[1], "%d-%d" % first_half)
    time.sleep(0.3)
    ok2 = reshard(kvlab, ports[0], ids[1], ids[2], "0-1364")
    time.sleep(0.3)
    stop.set()
    for t in threads:
        t.join(70)
    check(ok1 and ok2, "kvlab cluster reshard moves the slots A->B and B->C and exits 0")
    check(not errors, "writers saw only redirections, no failed INCR (%s)" % errors[:3])
    check(not wrong, "every INCR reply grew (no wrong answer) (%s)" % wrong[:3])
    total = sum(sum(a.values()) for a in acked)
    print("acknowledged INCRs during the reshards: %d" % total)
    check(total > 1000, "the writers kept writing during the reshards")
    expected = dict(base)
    for a in acked:
        for k, n in a.items():
            expected[k] += n
    got = {}
    pipe = rc.pipeline()
    for k in keys:
        pipe.get(k)
    for k, v in zip(keys, pipe.execute()):
        got[k] = int(v) if v is not None else None
    bad = [(k, expected[k], got[k]) for k in keys if got[k] != expected[k]]
    sl = [key_slot(k.encode()) for k, _, _ in bad]
    print("differing keys in 0-1364: %d, in 1365-2730: %d"
          % (sum(s <= 1364 for s in sl), sum(s > 1364 for s in sl)))
    check(not bad, "every counter equals its acknowledged INCRs (%d differ: %s)" % (len(bad), bad[:3]))
    # Where each key lives: KEYS * on every node (KEYS has no key, so no redirection).
    held = [set(x.decode() for x in n.keys("*")) for n in nodes]
    both = (held[0] & held[1]) | (held[0] & held[2]) | (held[1] & held[2])
    check(not both, "no key exists on two nodes (%d do)" % len(both))
    owner = lambda s: 2 if s <= 1364 else 1  # after both reshards
    misplaced = [k for k in keys if k not in held[owner(key_slot(k.encode()))]]
    check(not misplaced, "every key is on the node owning its slot (%d are not)" % len(misplaced))
    for t, want in typed.items():
        check(typed_values(rc, t) == want, "keys of every type moved with their values (%s)" % t)
        check(rc.pttl(t + "str") > 500000, "a moved key keeps its TTL (%s)" % t)
    info = nodes[0].execute_command("CLUSTER", "INFO")
    info = info.decode() if isinstance(info, bytes) else str(info)
    check("kvlab_migration_state:done" in info, "the source reports kvlab_migration_state:done")


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)

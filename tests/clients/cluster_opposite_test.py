#!/usr/bin/python3
"""Two live slot migrations at once in opposite directions (server/features/cluster_migration.hpp).

Two kvlab-server nodes, A and B. One configuration, pushed the way `kvlab cluster reshard` pushes
its own, holds two migrations: slots of A move to B while slots of B move to A. Writer threads
(redis-py RedisCluster, which follows MOVED and ASK) INCR counters in both sets of slots
meanwhile. Once both sources report kvlab_migration_state:done, the flip is pushed; then the
slots go back the same way, for several rounds. Each round must finish within a time bound (a
migration that waits on the other one's locks fails or stalls). Afterwards:
  - every counter equals the number of INCRs acknowledged to the writers;
  - every key exists exactly once, on the node owning its slot (KEYS * on each);
  - no writer saw an error or a reply that did not grow.

Run under each --atomicity scheme. Usage: cluster_opposite_test.py KVLAB_SERVER [ROUNDS]      (exit 77 without python3-redis)
"""
import json
import logging
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

logging.disable(logging.CRITICAL)  # redis-py logs every redirection it follows
KEYS = 4000        # per direction
WRITERS = 4
ROUND_LIMIT = 20   # seconds for one round (migrate both ways, flip)
failures = []
procs = []

# A owns 0-8191, B 8192-16383. A's 0-1023 and B's 8192-9215 trade places each round.
A_MOVING = (0, 1023)
B_MOVING = (8192, 9215)


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


def start_node(server, node_id, scheme):
    port = free_port()
    p = subprocess.Popen([server, "--port", str(port), "--threads", "2", "--cluster-mode", "yes",
                          "--cluster-node-id", node_id, "--atomicity", scheme],
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


def scenario(server, scheme, rounds):
    print("--atomicity %s" % scheme)
    ids = ["%040x" % 0xa, "%040x" % 0xb]
    ports = [start_node(server, i, scheme) for i in ids]
    nodes = [redis.Redis(port=p) for p in ports]

    def config(epoch, owned, migrations=((), ())):
        return json.dumps({"epoch": epoch, "shards": [
            {"slot_ranges": [{"start": s, "end": e} for s, e in owned[i]],
             "master": {"id": ids[i], "ip": "127.0.0.1", "port": ports[i]}, "replicas": [],
             "migrations": [{"slot_ranges": [{"start": s, "end": e}], "node_id": ids[1 - i]}
                            for s, e in migrations[i]]}
            for i in range(2)]})

    def push(cfg):
        for n in nodes:
            n.execute_command("KVLAB", "CLUSTER", "CONFIG", cfg)

    # Round r starts with `home` (A's moving range on A when r is even).
    home = [[(0, 8191)], [(8192, 16383)]]
    away = [[(1024, 9215)], [(0, 1023), (9216, 16383)]]
    push(config(1, home))
    epoch = 1
    keys = []
    for lo, hi in (A_MOVING, B_MOVING):
        i = 0
        picked = []
        while len(picked) < KEYS:
            k = "opp:%d:%d" % (lo, i)
            if lo <= key_slot(k.encode()) <= hi:
                picked.append(k)
            i += 1
        keys += picked
    rc = RedisCluster(host="127.0.0.1", port=ports[0])
    pipe = rc.pipeline()
    for k in keys:
        pipe.incr(k)
    pipe.execute()
    acked = [dict() for _ in range(WRITERS)]
    errors, wrong = [], []
    stop = threading.Event()

    def writer(w):
        c = RedisCluster(host="127.0.0.1", port=ports[w % 2])
        rng = random.Random(w)
        last, mine = {}, acked[w]
        deadline = time.time() + ROUND_LIMIT * rounds + 30
        while not stop.is_set() and time.time() < deadline:
            k = keys[rng.randrange(len(keys))]
            try:
                v = c.incr(k)
            except Exception as e:  # an INCR of unknown outcome: the counts cannot be checked
                errors.append("%s: %r" % (k, e))
                return
            mine[k] = mine.get(k, 0) + 1
            if v <= last.get(k, 0):
                wrong.append((k, last.get(k), v))
            last[k] = v
            time.sleep(0.0005)  # a small load: the point is the two streams, not throughput

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    time.sleep(0.3)  # the writers run before the first migration starts
    took = []
    for r in range(rounds):
        src, dst = (home, away) if r % 2 == 0 else (away, home)
        # Each node's migration: what it owns now and the other will own.
        moving = ([A_MOVING], [B_MOVING]) if r % 2 == 0 else ([B_MOVING], [A_MOVING])
        t0 = time.time()
        epoch += 1
        push(config(epoch, src, moving))
        mig_epoch = epoch
        states = ["", ""]
        while time.time() - t0 < ROUND_LIMIT:
            infos = [n.execute_command("CLUSTER", "INFO").decode() for n in nodes]
            states = [dict(l.split(":", 1) for l in i.split("\r\n") if ":" in l) for i in infos]
            if all(s.get("kvlab_migration_epoch") == str(mig_epoch) and
                   s.get("kvlab_migration_state") in ("done", "failed", "cancelled")
                   for s in states):
                break
            time.sleep(0.02)
        done = all(s.get("kvlab_migration_state") == "done" and
                   s.get("kvlab_migration_epoch") == str(mig_epoch) for s in states)
        check(done, "%s round %d: both opposite migrations finish within %d s (%s)"
              % (scheme, r, ROUND_LIMIT, [
            (s.get("kvlab_migration_state"), s.get("kvlab_migration_keys_moved"),
             s.get("kvlab_migration_error")) for s in states]))
        if not done:
            break
        epoch += 1
        push(config(epoch, dst))
        took.append(time.time() - t0)
    print("round times: %s s" % ", ".join("%.2f" % t for t in took))
    print("errors answered (A, B): %s" % [n.info("errorstats") for n in nodes])
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(30)
    check(not errors, "writers saw only redirections, no failed INCR (%s)" % errors[:3])
    check(not wrong, "every INCR reply grew (%s)" % wrong[:3])
    total = sum(sum(a.values()) for a in acked)
    print("acknowledged INCRs: %d" % total)
    check(total > 100, "the writers kept writing")
    if len(took) == rounds:
        expected = {k: 1 for k in keys}
        for a in acked:
            for k, n in a.items():
                expected[k] += n
        pipe = rc.pipeline()
        for k in keys:
            pipe.get(k)
        got = {k: int(v) if v is not None else None for k, v in zip(keys, pipe.execute())}
        bad = [(k, expected[k], got[k]) for k in keys if got[k] != expected[k]]
        check(not bad, "every counter equals its acknowledged INCRs (%d differ: %s)"
              % (len(bad), bad[:3]))
        held = [set(x.decode() for x in n.keys("*")) for n in nodes]
        final = home if rounds % 2 == 0 else away
        owner = lambda s: 0 if any(a <= s <= b for a, b in final[0]) else 1
        check(not (held[0] & held[1]), "no key exists on both nodes (%d do)"
              % len(held[0] & held[1]))
        misplaced = [k for k in keys if k not in held[owner(key_slot(k.encode()))]]
        check(not misplaced, "every key is on the node owning its slot (%d are not)"
              % len(misplaced))
    for p in procs:
        p.kill()
        p.wait()
    procs.clear()


def main():
    server = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    # The lock a migrator held across its round trip differed by scheme: every stripe's command
    # under global, colliding stripes under key-locks and stripes.
    for scheme in ("key-locks", "global", "stripes"):
        scenario(server, scheme, rounds)


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

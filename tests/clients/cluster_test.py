#!/usr/bin/python3
"""kvlab-server as a Redis Cluster, driven with unchanged cluster clients: redis-py's
RedisCluster (Debian python3-redis), `redis-cli -c` and `redis-benchmark --cluster`, against one
--cluster-mode emulated node and a 3-node cluster started by `kvlab cluster local 3`. Also the
redirection rules (MOVED to the right node, CROSSSLOT, EXEC over several slots), a node waiting
for its configuration (CLUSTERDOWN, cluster_state:fail), bad configurations and migrations refused
with the old one kept, the keys of slots a node loses deleted in the background (and never seen
again when the slots come back), and a migrating slot's routing on a source whose migration failed
(served, ASK, TRYAGAIN; MOVED from a non-importing node even after ASKING), and clients blocked
on a slot the node loses (MOVED at once; a slot it keeps or that only starts migrating keeps its
waiters). Live migration under load: cluster_migration_test.py.

Usage: cluster_test.py KVLAB_SERVER KVLAB_CLI          (exit 77 without python3-redis)
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

try:
    import redis
    from redis.cluster import RedisCluster
except ImportError as e:
    print("skipped: %s (apt-get install python3-redis)" % e)
    sys.exit(77)

failures = []
checks = [0]
procs = []


def check(cond, what):
    checks[0] += 1
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc):
    deadline = time.time() + 15
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("process exited at startup (%s)" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nothing listens on %d" % port)


def start_node(server, mode, node_id=None):
    port = free_port()
    args = [server, "--port", str(port), "--threads", "2", "--cluster-mode", mode]
    if node_id:
        args += ["--cluster-node-id", node_id]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p)
    wait_port(port, p)
    return port


def cli(port, *args, cluster=False):
    cmd = ["redis-cli", "-p", str(port)] + (["-c"] if cluster else []) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()


def emulated(server):
    port = start_node(server, "emulated")
    r = redis.Redis(port=port)
    # EXEC over two slots: CROSSSLOT, and the transaction is gone (this crashed the server once).
    with socket.create_connection(("127.0.0.1", port), 5) as sock:
        sock.sendall(b"MULTI\r\nSET {x}3 1\r\nSET {y}3 1\r\nEXEC\r\nEXEC\r\nPING\r\n")
        data = b""
        while data.count(b"\r\n") < 6:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    check(data.decode().split("\r\n")[:6] ==
          ["+OK", "+QUEUED", "+QUEUED", "-CROSSSLOT Keys in request don't hash to the same slot",
           "-ERR EXEC without MULTI", "+PONG"],
          "emulated: EXEC over two slots answers CROSSSLOT and discards the transaction")
    info = r.execute_command("CLUSTER", "INFO")
    info = info.decode() if isinstance(info, bytes) else info
    check("cluster_state:ok" in info and "cluster_slots_assigned:16384" in info,
          "emulated: CLUSTER INFO is a healthy one-node cluster")
    slots = r.execute_command("CLUSTER", "SLOTS")
    check(len(slots) == 1 and slots[0][0] == 0 and slots[0][1] == 16383 and
          slots[0][2][1] == port, "emulated: CLUSTER SLOTS gives every slot to this node")
    check(r.execute_command("CLUSTER", "KEYSLOT", "{user1000}.following") ==
          r.execute_command("CLUSTER", "KEYSLOT", "user1000") == 3443,
          "emulated: CLUSTER KEYSLOT hashes the {tag} (Redis's documented example: 3443)")
    try:
        r.mset({"a": 1, "b": 2})
        check(False, "emulated: MSET over two slots answers CROSSSLOT")
    except redis.ResponseError as e:
        check(str(e) == "CROSSSLOT Keys in request don't hash to the same slot",
              "emulated: MSET over two slots answers CROSSSLOT")
    rc = RedisCluster(host="127.0.0.1", port=port)
    for i in range(200):
        rc.set("k%d" % i, i)
    check(sum(int(rc.get("k%d" % i)) for i in range(200)) == sum(range(200)),
          "emulated: RedisCluster writes and reads 200 keys")
    rc.mset_nonatomic({"{u}a": 1, "{u}b": 2})
    check(rc.mget(["{u}a", "{u}b"]) == [b"1", b"2"], "emulated: hash-tagged MSET/MGET")
    check(r.execute_command("CLUSTER", "COUNTKEYSINSLOT", rc.keyslot("k1")) >= 1,
          "emulated: COUNTKEYSINSLOT counts the slot's keys")
    rc.close()


def local_cluster(server, kvlab):
    proc = subprocess.Popen([kvlab, "cluster", "local", "3", "--server", server],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    procs.append(proc)
    port = None
    deadline = time.time() + 30
    out = []
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        out.append(line)
        m = re.search(r"cluster ready: 127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    check(port is not None, "kvlab cluster local 3 starts and prints the address")
    if port is None:
        print("".join(out))
        return
    rc = RedisCluster(host="127.0.0.1", port=port)
    nodes = rc.get_nodes()
    check(len(nodes) == 3, "local 3: RedisCluster sees 3 nodes")
    for i in range(3000):
        rc.set("key:%d" % i, i)
    check(sum(int(rc.get("key:%d" % i)) for i in range(3000)) == sum(range(3000)),
          "local 3: 3000 keys spread over all slots read back")
    sizes = [redis.Redis(port=n.port).dbsize() for n in nodes]
    check(sum(sizes) == 3000 and min(sizes) > 800,
          "local 3: every node holds about a third of the keys (%s)" % sizes)
    rc.mset_nonatomic({"{acct}:1": 10, "{acct}:2": 20})
    check(rc.mget(["{acct}:1", "{acct}:2"]) == [b"10", b"20"],
          "local 3: hash tags keep a multi-key command on one node")
    # A node that does not own the slot redirects to the one that does.
    slot = rc.keyslot("key:7")
    owner = rc.get_node_from_key("key:7")
    other = next(n for n in nodes if n.port != owner.port)
    try:
        redis.Redis(port=other.port).get("key:7")
        check(False, "local 3: a wrong-node GET answers MOVED")
    except redis.ResponseError as e:
        check(str(e) == "MOVED %d 127.0.0.1:%d" % (slot, owner.port),
              "local 3: a wrong-node GET answers MOVED %d with the owner's address" % slot)
    r_other = redis.Redis(port=other.port)
    check(cli(other.port, "get", "key:7", cluster=True) == "7",
          "local 3: redis-cli -c follows the redirection")
    # EXEC over keys of several slots: CROSSSLOT, as Redis answers.
    same = [k for k in ("{x}1", "{x}2")]
    owner_x = redis.Redis(port=rc.get_node_from_key("{x}1").port)
    p = owner_x.pipeline(transaction=True)
    p.set(same[0], 1).set(same[1], 2)
    check(p.execute() == [True, True], "local 3: MULTI/EXEC over one slot runs")
    with socket.create_connection(("127.0.0.1", rc.get_node_from_key("{x}1").port), 5) as sock:
        sock.sendall(b"MULTI\r\nSET {x}3 1\r\nSET {y}3 1\r\nEXEC\r\n")
        data = b""
        while data.count(b"\r\n") < 4:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    lines = data.decode().split("\r\n")
    check(len(lines) >= 4 and lines[3].startswith(("-CROSSSLOT", "-EXECABORT")),
          "local 3: a transaction over two slots is refused (%s)" % lines[2:4])
    if shutil.which("redis-benchmark"):
        b = subprocess.run(["redis-benchmark", "--cluster", "-p", str(port), "-t", "set,get",
                            "-n", "20000", "-q"], capture_output=True, text=True, timeout=120)
        ok = b.returncode == 0 and "SET:" in b.stdout and "GET:" in b.stdout and \
            "error" not in (b.stdout + b.stderr).lower()
        check(ok, "local 3: redis-benchmark --cluster runs clean")
    check(subprocess.run([kvlab, "cluster", "check", "127.0.0.1:%d" % port],
                         capture_output=True).returncode == 0,
          "local 3: kvlab cluster check agrees")
    rc.close()
    r_other.close()
    proc.send_signal(signal.SIGTERM)
    proc.wait(15)
    check(proc.returncode == 0, "kvlab cluster local stops its nodes and exits 0")


def configuration(server):
    ids = ["%040x" % (i + 1) for i in range(2)]
    ports = [start_node(server, "yes", ids[i]) for i in range(2)]
    a = redis.Redis(port=ports[0])
    try:
        a.set("k", 1)
        got = "no error"
    except redis.ResponseError as e:
        got = str(e)
    check(got == "CLUSTERDOWN Hash slot not served", "unconfigured node: key commands get CLUSTERDOWN")
    info = a.execute_command("CLUSTER", "INFO")
    check(b"cluster_state:fail" in info, "unconfigured node: cluster_state:fail")

    def cfg(epoch, ranges):
        return json.dumps({"epoch": epoch, "shards": [
            {"slot_ranges": [{"start": s, "end": e} for s, e in ranges[i]],
             "master": {"id": ids[i], "ip": "127.0.0.1", "port": ports[i]}, "replicas": []}
            for i in range(2)]})

    good = cfg(1, [[(0, 8191)], [(8192, 16383)]])
    for p in ports:
        redis.Redis(port=p).execute_command("KVLAB", "CLUSTER", "CONFIG", good)
    for name, bad in [("overlapping ranges", cfg(2, [[(0, 9000)], [(8192, 16383)]])),
                      ("a missing slot", cfg(2, [[(0, 8190)], [(8192, 16383)]])),
                      ("not JSON", "{shards"),
                      ("an older epoch", cfg(0, [[(0, 8191)], [(8192, 16383)]]))]:
        try:
            a.execute_command("KVLAB", "CLUSTER", "CONFIG", bad)
            got = "accepted"
        except redis.ResponseError as e:
            got = str(e)
        check(got.startswith("invalid cluster configuration"),
              "a configuration with %s is refused (%s)" % (name, got))
    unknown = json.dumps({"epoch": 3, "shards": [
        {"slot_ranges": [{"start": 0, "end": 16383}],
         "master": {"id": "f" * 40, "ip": "127.0.0.1", "port": 1}, "replicas": []}]})
    try:
        a.execute_command("KVLAB", "CLUSTER", "CONFIG", unknown)
        got = "accepted"
    except redis.ResponseError as e:
        got = str(e)
    check("is not a master in it" in got, "a configuration without this node is refused")
    check(json.loads(a.execute_command("KVLAB", "CLUSTER", "GETCONFIG"))["epoch"] == 1,
          "after refusals the node keeps its old configuration")
    # Node A loses slots 4096-8191 to B: A deletes their keys.
    rc = RedisCluster(host="127.0.0.1", port=ports[0])
    for i in range(400):
        rc.set("m%d" % i, i)
    moved = [i for i in range(400) if 4096 <= rc.keyslot("m%d" % i) <= 8191]
    rc.close()
    shifted = cfg(2, [[(0, 4095)], [(4096, 16383)]])
    for p in ports:
        redis.Redis(port=p).execute_command("KVLAB", "CLUSTER", "CONFIG", shifted)
    # The purge runs in the background: wait until CLUSTER INFO reports none pending.
    deadline = time.time() + 10
    while time.time() < deadline and \
            b"kvlab_purge_pending_slots:0" not in a.execute_command("CLUSTER", "INFO"):
        time.sleep(0.05)
    left = sum(1 for i in moved if a.execute_command("CLUSTER", "COUNTKEYSINSLOT",
                                                     rc.keyslot("m%d" % i)) > 0)
    check(moved and left == 0, "the keys of the %d moved slots' keys are gone from the old owner"
          % len(moved))
    # A loses 0-4095 and gets them back at once, before its background purge could finish:
    # the old keys must not reappear (they are deleted when the slots come back).
    rc = RedisCluster(host="127.0.0.1", port=ports[0])
    low = [k for k in ("r%d" % i for i in range(20000)) if rc.keyslot(k) <= 4095][:5000]
    pipe = rc.pipeline()
    for k in low:
        pipe.set(k, 1)
    pipe.execute()
    rc.close()
    for c in (cfg(3, [[], [(0, 16383)]]), cfg(4, [[(0, 4095)], [(4096, 16383)]])):
        for p in ports:  # A first: its check below races with its purge
            redis.Redis(port=p).execute_command("KVLAB", "CLUSTER", "CONFIG", c)
    pipe = a.pipeline(transaction=False)
    for k in low:
        pipe.exists(k)
    check(sum(pipe.execute()) == 0 and a.dbsize() <= 400 - len(moved),
          "keys of slots lost and given back at once do not reappear")
    # Migrations are validated too: the slots must be the source's, the target another master.
    mig = json.loads(cfg(5, [[(0, 4095)], [(4096, 16383)]]))
    for name, m in [("slots it does not own", {"slot_ranges": [{"start": 5000, "end": 5001}],
                                               "node_id": ids[1]}),
                    ("an unknown target", {"slot_ranges": [{"start": 0, "end": 1}],
                                           "node_id": "e" * 40}),
                    ("itself as target", {"slot_ranges": [{"start": 0, "end": 1}],
                                          "node_id": ids[0]})]:
        mig["shards"][0]["migrations"] = [m]
        try:
            a.execute_command("KVLAB", "CLUSTER", "CONFIG", json.dumps(mig))
            got = "accepted"
        except redis.ResponseError as e:
            got = str(e)
        check(got.startswith("invalid cluster configuration"),
              "a migration of %s is refused (%s)" % (name, got))
    check(json.loads(a.execute_command("KVLAB", "CLUSTER", "GETCONFIG"))["epoch"] == 4,
          "after refused migrations the node keeps its old configuration")
    # A migration whose target never heard of it: A waits (5 s) for B to hold the configuration,
    # then fails, and the keys stay on A, which answers by Redis's rules meanwhile.
    b = redis.Redis(port=ports[1])
    tag = next(t for t in ("{t%d}" % i for i in range(1000)) if b.cluster("KEYSLOT", t) <= 4095)
    slot = b.cluster("KEYSLOT", tag)
    a.set(tag + "a", "here")
    mig = json.loads(cfg(6, [[(0, 4095)], [(4096, 16383)]]))
    mig["shards"][0]["migrations"] = [{"slot_ranges": [{"start": slot, "end": slot}],
                                       "node_id": ids[1]}]
    a.execute_command("KVLAB", "CLUSTER", "CONFIG", json.dumps(mig))
    deadline = time.time() + 15
    info = b""
    while time.time() < deadline and b"kvlab_migration_state:failed" not in info:
        info = a.execute_command("CLUSTER", "INFO")
        time.sleep(0.05)
    check(b"kvlab_migration_state:failed" in info and b"did not reach epoch 6" in info,
          "a migration whose target lacks its configuration fails and says why")

    def answer(node, *args):
        try:
            return node.execute_command(*args)
        except redis.ResponseError as e:
            return str(e)
    check(answer(a, "GET", tag + "a") == b"here", "the source serves a migrating key it holds")
    check(answer(a, "GET", tag + "b") == "ASK %d 127.0.0.1:%d" % (slot, ports[1]),
          "the source answers ASK for a migrating key it does not hold")
    check(answer(a, "MGET", tag + "a", tag + "b") ==
          "TRYAGAIN Multiple keys request during rehashing of slot",
          "a multi-key command with some keys moved answers TRYAGAIN")
    pipe = b.pipeline(transaction=False)  # one connection: ASKING, then GET
    pipe.execute_command("ASKING")
    pipe.get(tag + "b")
    got = [str(x) for x in pipe.execute(raise_on_error=False)]
    check(got[1] == "MOVED %d 127.0.0.1:%d" % (slot, ports[0]),
          "a node not importing the slot answers MOVED even after ASKING (%s)" % got)


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_reply(sock, limit):
    """The raw bytes of one reply (the first line, plus the rest of a short array), or b"" when
    nothing arrives within `limit` seconds."""
    sock.settimeout(limit)
    data = b""
    try:
        while not data.endswith(b"\r\n") or (data.startswith(b"*") and data.count(b"\r\n") < 5):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    return data


def blocked_clients(server):
    """Redis 7.0's clusterRedirectBlockedClientIfNeeded: a client blocked on a key whose slot the
    node no longer serves gets -MOVED and is unblocked; one on a slot it keeps, or on a slot that
    only starts migrating away, stays blocked and is served later."""
    ids = ["%040x" % (i + 0x11) for i in range(2)]
    ports = [start_node(server, "yes", ids[i]) for i in range(2)]

    def cfg(epoch, ranges, migrations=None):
        shards = [{"slot_ranges": [{"start": s, "end": e} for s, e in ranges[i]],
                   "master": {"id": ids[i], "ip": "127.0.0.1", "port": ports[i]}, "replicas": []}
                  for i in range(2)]
        if migrations:
            shards[0]["migrations"] = migrations
        return json.dumps({"epoch": epoch, "shards": shards})

    def push(c):
        for p in reversed(ports):  # the gaining node first, as the manager does
            redis.Redis(port=p).execute_command("KVLAB", "CLUSTER", "CONFIG", c)

    push(cfg(1, [[(0, 8191)], [(8192, 16383)]]))
    a = redis.Redis(port=ports[0])
    slot_of = lambda k: a.cluster("KEYSLOT", k)
    # Three list keys on A: one in 0-4095 (moves to B), one in 4096-6143 (stays), one in
    # 6144-8191 (first migrates, then moves).
    pick = lambda lo, hi, p: next(k for k in ("%s%d" % (p, i) for i in range(10000))
                                  if lo <= slot_of(k) <= hi)
    moving, staying, migrating = pick(0, 4095, "bm"), pick(4096, 6143, "bs"), pick(6144, 8191, "bg")
    stream = pick(0, 4095, "bx")
    socks = {}
    for name, cmd in [("moving", ("BLPOP", moving, 0)), ("staying", ("BLPOP", staying, 0)),
                      ("migrating", ("BZPOPMIN", migrating, 0)),
                      ("stream", ("XREAD", "BLOCK", 0, "STREAMS", stream, "$"))]:
        s = socket.create_connection(("127.0.0.1", ports[0]))
        s.sendall(resp(*cmd))
        socks[name] = s
    deadline = time.time() + 5
    while time.time() < deadline and a.info("clients")["blocked_clients"] < 4:
        time.sleep(0.02)
    check(a.info("clients")["blocked_clients"] == 4, "four clients block on node A")
    # 6144-8191 starts migrating to B: in 7.0 the slot is still A's, so its waiter stays.
    push(cfg(2, [[(0, 8191)], [(8192, 16383)]],
             [{"slot_ranges": [{"start": 6144, "end": 8191}], "node_id": ids[1]}]))
    got = read_reply(socks["migrating"], 0.5)
    check(got == b"", "a client blocked on a slot that starts migrating away stays blocked (%r)"
          % got)
    # 0-4095 moves to B and 6144-8191's migration ends there.
    t0 = time.time()
    push(cfg(3, [[(4096, 6143)], [(0, 4095), (6144, 16383)]]))
    got = read_reply(socks["moving"], 3)
    took = time.time() - t0
    want = b"-MOVED %d 127.0.0.1:%d\r\n" % (slot_of(moving), ports[1])
    check(got == want and took < 2,
          "a BLPOP on a slot that moved gets %r within 2 s (%r after %.2f s)" % (want, got, took))
    got = read_reply(socks["stream"], 3)
    want = b"-MOVED %d 127.0.0.1:%d\r\n" % (slot_of(stream), ports[1])
    check(got == want, "an XREAD BLOCK on a slot that moved gets %r (%r)" % (want, got))
    got = read_reply(socks["migrating"], 3)
    want = b"-MOVED %d 127.0.0.1:%d\r\n" % (slot_of(migrating), ports[1])
    check(got == want, "a BZPOPMIN on a slot whose migration ended gets %r (%r)" % (want, got))
    check(read_reply(socks["staying"], 0.3) == b"",
          "a BLPOP on a slot the node keeps is not disturbed")
    a.lpush(staying, "v")
    got = read_reply(socks["staying"], 3)
    want = b"*2\r\n$%d\r\n%s\r\n$1\r\nv\r\n" % (len(staying), staying.encode())
    check(got == want, "it is served by a later LPUSH (%r)" % got)
    for name in ("moving", "stream", "migrating"):  # the redirected connections still work
        socks[name].sendall(resp("PING"))
        check(read_reply(socks[name], 3) == b"+PONG\r\n",
              "the redirected %s client's connection serves the next command" % name)
    for s in socks.values():
        s.close()


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    server, kvlab = sys.argv[1], sys.argv[2]
    try:
        emulated(server)
        configuration(server)
        blocked_clients(server)
        if os.access(kvlab, os.X_OK):
            local_cluster(server, kvlab)
        else:  # the sanitizer builds of .ci/run build the server, not the CLI
            print("skipped: kvlab cluster local (no %s)" % kvlab)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
    print("%d of %d checks passed" % (checks[0] - len(failures), checks[0]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

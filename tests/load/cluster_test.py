"""`kvlab load --cluster` against a three-node cluster while slots move under it.

    cluster_test.py KVLAB_CLI REDIS_SERVER KVLAB_SERVER CASE

CASE redis: three Debian redis-server processes (--cluster-enabled yes) joined by
`redis-cli --cluster create`, 500 slots moved by `redis-cli --cluster reshard` during the run; then one hash-tagged slot moved
by hand under load, for ASK and MOVED (see run_hand_migration).
CASE kvlab: three kvlab-server nodes (--cluster-mode yes) configured by `kvlab cluster create`,
500 slots moved by `kvlab cluster reshard` (live migration) during the run.

Both: 20,000 keys prefilled through the cluster (each to its slot's node), then an open-loop 1:1
SET:GET run at 3,000/s for 6 s with 4 connections started against the second node, the reshard
starting 1.5 s in. Checked: exit 0; no error reply, timeout or closed connection; no request lost
(every slot of the schedule answered or reported unsent); redirections counted (MOVED + ASK > 0);
every GET a hit (a request routed to the wrong node and answered there would miss); the reshard
tool exited 0 and the slots changed owner. Every process is bounded in time and stopped by its pid.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

RATE, DURATION, KEYS, SLOTS = 3000, 6, 20000, 500
procs = []


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def free_cluster_port():
    """A port <= 55535 whose cluster bus port (+10000) is free too."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port > 55535:
            continue
        try:
            with socket.socket() as b:
                b.bind(("127.0.0.1", port + 10000))
            return port
        except OSError:
            continue
    raise SystemExit("no free port pair")


def wait_listening(port, proc):
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("server on %d exited (%s)" % (port, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nothing listens on %d" % port)


def cli(port, *args, timeout=10):
    return subprocess.run(["redis-cli", "-p", str(port)] + list(args), capture_output=True,
                          text=True, timeout=timeout).stdout.strip()


def owners(port):
    """slot -> port of its primary, from CLUSTER SLOTS (redis-cli's raw output)."""
    out = cli(port, "--raw", "CLUSTER", "SLOTS").splitlines()
    table, i = {}, 0
    # --raw prints each range as: start, end, host, port, id[, more nodes...] on separate lines;
    # parse by walking integers: start end host port id.
    while i + 4 < len(out):
        try:
            lo, hi, node_port = int(out[i]), int(out[i + 1]), int(out[i + 3])
        except ValueError:
            i += 1
            continue
        for s in range(lo, hi + 1):
            table[s] = node_port
        i += 5
    return table


def start_redis(binary, d):
    ports = []
    for i in range(3):
        port = free_cluster_port()
        nd = os.path.join(d, "n%d" % i)
        os.mkdir(nd)
        p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--cluster-enabled", "yes",
                              "--cluster-config-file", os.path.join(nd, "nodes.conf"),
                              "--dir", nd, "--logfile", os.path.join(nd, "log")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        wait_listening(port, p)
        ports.append(port)
    r = subprocess.run(["redis-cli", "--cluster", "create"] +
                       ["127.0.0.1:%d" % p for p in ports] +
                       ["--cluster-replicas", "0", "--cluster-yes"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "redis-cli --cluster create (%s)" % r.stdout[-200:])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if all("cluster_state:ok" in cli(p, "CLUSTER", "INFO") for p in ports) and \
                all(len(owners(p)) == 16384 for p in ports):
            break
        time.sleep(0.2)
    else:
        raise SystemExit("the Redis cluster did not become ok")
    return ports


def start_kvlab(server, kvlab):
    ports = []
    for _ in range(3):
        port = free_cluster_port()
        p = subprocess.Popen([server, "--port", str(port), "--threads", "2", "--cluster-mode",
                              "yes"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        wait_listening(port, p)
        ports.append(port)
    r = subprocess.run([kvlab, "cluster", "create"] + ["127.0.0.1:%d" % p for p in ports],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "kvlab cluster create (%s)" % r.stderr[-200:])
    return ports


def run(kind, kvlab, ports, reshard_argv):
    seed = ports[1]
    src = ports[0]
    before = owners(src)
    moving = [s for s, p in before.items() if p == src]
    # Prefill through the cluster: each key to its slot's node.
    r = subprocess.run([kvlab, "load", "-q", "--cluster", "--port", str(seed), "--keys",
                        str(KEYS), "--key-prefix", "cl:", "--prefill", "--requests", "1"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "%s: prefill through the cluster (%s)" % (kind, r.stderr.strip()))
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        load = subprocess.Popen([kvlab, "load", "-q", "--cluster", "--port", str(seed),
                                 "--keys", str(KEYS), "--key-prefix", "cl:", "--ratio", "1:1",
                                 "--rate", str(RATE), "--duration", "%ds" % DURATION,
                                 "--connections", "4", "--drain-timeout", "5s",
                                 "--format", "json", "--out", out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        t0 = time.monotonic()
        rs = subprocess.run(reshard_argv, capture_output=True, text=True, timeout=60)
        took = time.monotonic() - t0
        stdout, stderr = load.communicate(timeout=60)
        check(rs.returncode == 0, "%s: the reshard tool succeeded in %.1f s (%s)" %
              (kind, took, (rs.stderr or rs.stdout)[-300:]))
        j = json.load(open(out)) if os.path.exists(out) else {"steps": [{}]}
        check(load.returncode == 0, "%s: kvlab load exit 0 (%d: %s; %s)" %
              (kind, load.returncode, stderr.strip(), j["steps"][0].get("errors_by_kind")))
    s = j["steps"][0]
    print(stdout)
    after = owners(seed)
    moved_slots = sum(1 for x in moving if after.get(x) != src)
    check(moved_slots == SLOTS, "%s: %d slots changed owner" % (kind, moved_slots))
    check(s["errors"] == 0, "%s: no error reply, timeout or disconnect (%s)" %
          (kind, s["errors_by_kind"]))
    check(s["lost_requests"] == 0, "%s: no request lost" % kind)
    expected = RATE * DURATION
    check(s["requests"] + s["unsent"] == expected,
          "%s: every slot of the schedule answered or reported unsent (%d + %d == %d)" %
          (kind, s["requests"], s["unsent"], expected))
    check(s["cluster"]["nodes"] == 3, "%s: three nodes in the slot map" % kind)
    check(s["cluster"]["moved"] + s["cluster"]["ask"] > 0,
          "%s: redirections counted (MOVED %d, ASK %d, TRYAGAIN retried %d)" %
          (kind, s["cluster"]["moved"], s["cluster"]["ask"], s["cluster"]["tryagain"]))
    check(s["misses"] == 0 and s["hits"] > 0,
          "%s: every GET found its key (%d hits, %d misses)" % (kind, s["hits"], s["misses"]))


def run_hand_migration(kvlab, ports):
    """One hash-tagged slot moved by hand (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE half the
    keys, the other half, SETSLOT NODE) during an open-loop GET run on its keys: while the slot
    migrates, GETs of moved keys get ASK and must be sent on with ASKING; after the flip the first
    request per connection gets MOVED and the map must be updated, so MOVED stays small (a map
    that is not updated gets one MOVED per request)."""
    keys = ["{x}:%d" % i for i in range(200)]
    slot = int(cli(ports[0], "CLUSTER", "KEYSLOT", "x"))
    own = owners(ports[0])[slot]
    src = own
    dst = [p for p in ports if p != src][0]
    src_id, dst_id = cli(src, "CLUSTER", "MYID"), cli(dst, "CLUSTER", "MYID")
    args = ["--cluster", "--port", str(dst), "--keys", "200", "--key-prefix", "{x}:"]
    r = subprocess.run([kvlab, "load", "-q"] + args + ["--prefill", "--requests", "400",
                                                       "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "hash-tagged keys prefilled and read through the cluster (%d: %s)" %
          (r.returncode, r.stderr.strip()))
    j = json.loads(r.stdout)["steps"][0]
    check(j["cluster"]["moved"] == 0 and j["cluster"]["ask"] == 0 and
          j["misses"] == 0,
          "hash tags honoured: '{x}:N' keys all go to slot %d's node, no redirection" % slot)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        load = subprocess.Popen([kvlab, "load", "-q"] + args +
                                ["--rate", "2000", "--duration", "4s", "--connections", "4",
                                 "--drain-timeout", "5s", "--format", "json", "--out", out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        cli(dst, "CLUSTER", "SETSLOT", str(slot), "IMPORTING", src_id)
        cli(src, "CLUSTER", "SETSLOT", str(slot), "MIGRATING", dst_id)
        for half in (keys[:100], keys[100:]):
            cli(src, "MIGRATE", "127.0.0.1", str(dst), "", "0", "5000", "KEYS", *half)
            time.sleep(0.5)
        for p in [dst, src] + [p for p in ports if p not in (src, dst)]:
            cli(p, "CLUSTER", "SETSLOT", str(slot), "NODE", dst_id)
        stdout, stderr = load.communicate(timeout=60)
        check(load.returncode == 0, "hand migration: exit 0 (%d: %s)" %
              (load.returncode, stderr.strip()))
        s = json.load(open(out))["steps"][0]
    c = s["cluster"]
    check(s["errors"] == 0 and s["lost_requests"] == 0,
          "hand migration: no error, nothing lost (%s)" % s["errors_by_kind"])
    check(s["misses"] == 0, "hand migration: every GET found its key (%d misses)" % s["misses"])
    check(c["ask"] > 0, "hand migration: ASK followed with ASKING (%d)" % c["ask"])
    check(0 < c["moved"] <= 20, "hand migration: MOVED updates the map (%d MOVED)" % c["moved"])


def main():
    kvlab, redis_bin, server, case = sys.argv[1:5]
    try:
        with tempfile.TemporaryDirectory() as d:
            if case == "redis":
                if not redis_bin or not os.path.exists(redis_bin):
                    print("redis-server not installed: skipped")
                    return 77
                ports = start_redis(redis_bin, d)
                src = cli(ports[0], "CLUSTER", "MYID")
                dst = cli(ports[1], "CLUSTER", "MYID")
                run("redis", kvlab, ports,
                    ["redis-cli", "--cluster", "reshard", "127.0.0.1:%d" % ports[0],
                     "--cluster-from", src, "--cluster-to", dst, "--cluster-slots", str(SLOTS),
                     "--cluster-yes", "--cluster-pipeline", "100"])
                run_hand_migration(kvlab, ports)
            else:
                ports = start_kvlab(server, kvlab)
                src = cli(ports[0], "CLUSTER", "MYID")
                dst = cli(ports[1], "CLUSTER", "MYID")
                run("kvlab", kvlab, ports,
                    [kvlab, "cluster", "reshard", "127.0.0.1:%d" % ports[0], "--from", src,
                     "--to", dst, "--slots", str(SLOTS)])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Start-up parameters: every parameter of kvlab-server's one table, given at start-up, is what
CONFIG GET answers, and Redis's parameters answer as redis-server 7.0 answers them.

The parameter list comes from `kvlab-server --list-config` (the table itself: name, flag, type,
default, range, choices, effect). For each parameter the test picks a valid value other than the
default, from its type. redis-server starts with every Redis parameter given that way as flags;
kvlab-server starts twice, once with the same flags and once with a config file in redis.conf
syntax that includes a second file (and uses the `name = value` form for some lines). Every
parameter is then read with CONFIG GET from each server: a Redis parameter must read as on
redis-server (kvlab's fixed ones, which it cannot change, must read as kvlab's own value and be
named in the start-up warning), and a kvlab parameter (kvlab-threads, ...) as the value given.
Then the errors: a misspelt name exits non-zero naming the closest known one, a bad value exits
non-zero with Redis's text, before anything listens.

  config_startup_test.py KVLAB_SERVER [REDIS_SERVER]
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "soak"))
from soakcommon import Checks, Client, Server, skip  # noqa: E402

PASSWORD = "startup-test"

# Parameters whose changed value would change how the server runs in a way this test cannot
# follow (files, sockets, daemons, replication, addresses), with what stops them.
SKIP = {
    "bind": "the address the test connects to",
    "port": "given to each server by the test",
    "daemonize": "the server would fork away from the test",
    "supervised": "needs a supervisor",
    "pidfile": "writes a file", "logfile": "writes a file", "unixsocket": "creates a socket",
    "unixsocketperm": "goes with unixsocket", "dir": "changes the working directory",
    "aclfile": "needs a file", "dbfilename": "persistence file",
    "appendfilename": "persistence file", "appenddirname": "persistence directory",
    "replicaof": "would connect to a primary", "cluster-enabled": "starts Redis Cluster",
    "cluster-config-file": "Redis Cluster file",
    "syslog-enabled": "logs to syslog",
    "server_cpulist": "pins threads", "bio_cpulist": "pins threads",
    "aof_rewrite_cpulist": "pins threads", "bgsave_cpulist": "pins threads",
    "activedefrag": "needs Redis's own jemalloc",
    "tls-port": "needs certificates", "tls-cluster": "needs certificates",
    "tls-replication": "needs certificates",
    "kvlab-cluster-config": "needs --cluster-mode yes and a cluster file",
    "kvlab-backend": "chosen below from --list-backends",
    "kvlab-placement": "depends on the machine's topology",
    "kvlab-eviction-queue": "one unbounded queue backend only is certain to exist",
    "kvlab-queue": "one queue backend only is certain to exist",
    "enable-protected-configs": "would allow CONFIG SET dir, which the test does not need",
    "requirepass": "given to both servers by the test",
}
# Values the type alone would choose badly (a memory limit that refuses every write, a client
# memory limit that evicts the test's own connection, formats of several words).
SPECIAL = {
    "maxmemory": "100mb",
    "maxmemory-clients": "50%",
    "maxmemory-policy": "allkeys-lru",
    "save": "900 1",
    "client-output-buffer-limit": "normal 1mb 512kb 10 pubsub 64mb 16mb 30",
    "notify-keyspace-events": "KEA",
    "oom-score-adj-values": "0 100 900",
    "latency-tracking-info-percentiles": "50 90",
    "shutdown-on-sigint": "nosave",
    "shutdown-on-sigterm": "now",
    "proc-title-template": "{title} {port}",
    "cluster-announce-hostname": "node-a.example",
    "kvlab-cluster-node-id": "0123456789abcdef0123456789abcdef01234567",
    "kvlab-cluster-mode": "emulated",
    "kvlab-threads": "1",
    "kvlab-atomicity": "stripes",
    "kvlab-mode": "shared",
    "maxclients": "1000",
    "databases": "16",
    "io-threads": "4",
    "appendonly": "yes",
    "protected-mode": "no",
    "enable-debug-command": "local",
}


def table(binary):
    out = subprocess.run([binary, "--list-config"], capture_output=True, text=True, timeout=30)
    lines = out.stdout.strip().split("\n")
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]]


def choose(p):
    """A valid value other than the default, from the parameter's type; None to leave it out."""
    name, typ, default = p["name"], p["type"], p["default"]
    if name in SPECIAL:
        return SPECIAL[name]
    if typ == "bool":
        return "no" if default == "yes" else "yes"
    if typ in ("enum", "flags"):
        for c in p["choices"].split(","):
            if "=" not in c and c != default:
                return c
        return None
    if typ in ("int", "memory", "memory-percent"):
        lo, hi, d = int(p["min"]), int(p["max"]), int(default.rstrip("%") or 0)
        return str(d + 1024 if typ != "int" and d + 1024 <= hi else d + 1 if d + 1 <= hi else d - 1
                   if d - 1 >= lo else lo)
    if typ == "string":
        return "kvlab-test-value"
    return None


def config_get(port, name):
    c = Client(port, timeout=10)
    c.cmd("AUTH", PASSWORD)
    r = c.cmd("CONFIG", "GET", name)
    c.close()
    return r[1].decode() if isinstance(r, list) and len(r) == 2 else repr(r)


def start(binary, args):
    try:
        return Server(binary, args)
    except RuntimeError:
        return None


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    kvlab = sys.argv[1]
    redis = sys.argv[2] if len(sys.argv) > 2 else shutil.which("redis-server")
    if not redis:
        skip("no redis-server")
    checks = Checks()
    params = table(kvlab)
    checks.check(len(params) > 150, "--list-config lists the table (%d rows)" % len(params))
    chosen = {}
    for p in params:
        if p["name"] in SKIP or "hidden" in p["effect"]:
            continue
        v = choose(p)
        if v is not None:
            chosen[p["name"]] = v
    own = {p["name"]: p for p in params if p["name"] != p["flag"]}  # kvlab's own: flag != name
    fixed = {p["name"] for p in params if p["effect"].startswith("fixed")}
    redis_flags, kvlab_flags = [], []
    types = {p["name"]: p["type"] for p in params}
    for name, v in chosen.items():
        flag = own[name]["flag"] if name in own else name
        # Several words for the formats made of words (save 900 1); one argument otherwise.
        words = v.split(" ") if types[name] in ("special", "flags") else [v]
        kvlab_flags += ["--" + flag] + words
        if name not in own:
            redis_flags += ["--" + name] + words
    common = ["--requirepass", PASSWORD]
    work = tempfile.mkdtemp(prefix="kvlab-config-test-")
    try:
        r = start(redis, common + ["--bind", "127.0.0.1", "--dir", work] + redis_flags)
        if not checks.check(r is not None, "redis-server starts with every changed parameter"):
            checks.finish()
        expected = {}
        for name in chosen:
            if name not in own:
                expected[name] = config_get(r.port, name)
        r.stop()

        # The same parameters as a config file: half in an included file, some as `name = value`.
        items = list(chosen.items())
        inc = os.path.join(work, "included.conf")
        main_conf = os.path.join(work, "kvlab.conf")

        def line(name, v, k):
            flag = own[name]["flag"] if name in own else name
            words = " ".join('"%s"' % w if " " in v or not w else w for w in [v])
            return ("%s = %s\n" % (flag, words)) if k % 3 == 0 else ("%s %s\n" % (flag, words))
        with open(inc, "w") as f:
            for k, (name, v) in enumerate(items[: len(items) // 2]):
                f.write(line(name, v, k))
        with open(main_conf, "w") as f:
            f.write("# kvlab-server in redis.conf syntax\ninclude %s\n" % inc)
            for k, (name, v) in enumerate(items[len(items) // 2:]):
                f.write(line(name, v, k))
            f.write("requirepass %s\n" % PASSWORD)

        for how, args in (("flags", common + kvlab_flags), ("config file", ["--config", main_conf])):
            log = os.path.join(work, "kvlab-%s.log" % how.replace(" ", "-"))
            try:
                s = Server(kvlab, args, log=log)
            except RuntimeError:
                checks.check(False, "kvlab-server starts with every changed parameter (%s): %s" %
                             (how, open(log).read()[-600:]))
                continue
            bad = []
            for name, v in chosen.items():
                got = config_get(s.port, name)
                if name in own:
                    want = v
                elif name in fixed:
                    continue  # checked through the warning below
                else:
                    want = expected[name]
                if got != want:
                    bad.append("%s: %r, want %r" % (name, got, want))
            s.stop()
            checks.check(not bad, "%s: %d parameters read back as redis-server / as given%s" %
                         (how, len(chosen), "" if not bad else ": " + "; ".join(bad[:12])))
            text = open(log, errors="replace").read()
            warn = [ln for ln in text.split("\n") if ln.startswith("warning: accepted with no effect")]
            missing = [n for n in chosen if n in fixed and n not in own and
                       (not warn or (" " + n + " ") not in " " + warn[0] + " ")]
            checks.check(bool(warn) and not missing,
                         "%s: the fixed parameters are named in one warning line%s" %
                         (how, "" if not missing else " (missing: %s)" % ", ".join(missing)))

        # Errors stop the start before anything listens.
        def refused(args, want):
            out = subprocess.run([kvlab] + args, capture_output=True, text=True, timeout=20)
            ok = out.returncode != 0 and want in out.stderr
            checks.check(ok, "%s -> exit %d, %r" % (" ".join(args), out.returncode,
                                                     out.stderr.strip()[-200:]))
        typo = os.path.join(work, "typo.conf")
        with open(typo, "w") as f:
            f.write("port 0\nmaxmemroy 1gb\n")
        refused([typo], "unknown parameter 'maxmemroy' (did you mean 'maxmemory'?)")
        refused(["--bakend", "hash/tbb"], "did you mean 'backend'?")
        refused(["--maxmemory-policy", "sometimes"], "argument(s) must be one of the following")
        refused(["--maxmemory", "12parsecs"], "argument must be a memory value")
        loop = os.path.join(work, "loop.conf")
        with open(loop, "w") as f:
            f.write("include %s\n" % loop)
        refused([loop], "include nested more than 16 deep")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    checks.finish()


if __name__ == "__main__":
    main()

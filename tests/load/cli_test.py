"""`kvlab load` as a script sees it: exit statuses, the status block of the JSON, and hits and
misses, against Debian's redis-server started here on a free loopback port (skipped, exit 77,
without it).

    cli_test.py KVLAB_CLI REDIS_SERVER CASE [KVLAB_SERVER]

CASE is one of: usage, errors, killed, hits, ns, hdr, counters, ycsb (YCSB A-F over RESP against
redis-server, and kvlab-server when its path is given). Each runs in a few seconds; every child process
is bounded by a timeout and every server is stopped by its pid.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """redis-server (or, with kvlab=True, kvlab-server) on a free loopback port."""

    def __init__(self, binary, kvlab=False):
        self.port = free_port()
        argv = ([binary, "--port", str(self.port), "--threads", "2"] if kvlab else
                [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--logfile", "/dev/null"])
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise SystemExit("redis-server did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)


def load(kvlab, *args, timeout=30):
    p = subprocess.run([kvlab, "load", "-q"] + list(args), capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def load_json(kvlab, *args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        code, _, err = load(kvlab, *args, "--format", "json", "--out", out)
        with open(out) as f:
            return code, json.load(f), err


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def case_usage(kvlab, redis):
    # Usage errors exit 2 and send nothing (the server's command count stays put).
    for args in (["--bogus-flag"], ["--threads", "0"], ["--rate", "fast"],
                 ["--key-pattern", "zipf:7"], ["--duration", "soon"]):
        code, _, err = load(kvlab, "--port", str(redis.port), *args)
        check(code == 2, "usage error %s exits 2 (got %d: %s)" % (args, code, err.strip()[-120:]))
    # Nothing listens on this port: refused before the run is exit 3, as during it.
    code, _, err = load(kvlab, "--port", str(free_port()), "--duration", "1s")
    check(code == 3 and "refused" in err, "a refused connection exits 3 (got %d)" % code)


def case_errors(kvlab, redis):
    # Every request gets an error reply: exit 1, and the JSON says so.
    code, j, err = load_json(kvlab, "--port", str(redis.port), "--duration", "1s",
                             "--command", "FOO __key__")
    step = j["steps"][0]
    check(code == 1, "all error replies exit 1 (got %d)" % code)
    check(step["errors_by_kind"]["error_replies"] > 0 and
          step["errors_by_kind"]["error_replies"] == step["replies"],
          "every reply counted as an error reply")
    check(j["status"]["exit_code"] == 1 and "--max-error-ratio" in j["status"]["reason"],
          "JSON status carries exit 1 and its reason")
    check("error reply" in err, "stderr says why")
    # Allowed by the ratio: exit 0.
    code, _, _ = load(kvlab, "--port", str(redis.port), "--duration", "1s",
                      "--command", "FOO __key__", "--max-error-ratio", "1")
    check(code == 0, "--max-error-ratio 1 accepts them (exit %d)" % code)
    # One error in ten (a SET and nine INCRs on a string value): above 0.05, below 0.2.
    args = ["--port", str(redis.port), "--duration", "1s", "--keys", "100",
            "--command", "SET __key__ x", "--command", "INCR __key__", "--command-ratio", "9:1"]
    code, _, _ = load(kvlab, *args, "--max-error-ratio", "0.05")
    check(code == 1, "10 %% errors > 0.05 exits 1 (got %d)" % code)
    code, _, _ = load(kvlab, *args, "--max-error-ratio", "0.2")
    check(code == 0, "10 %% errors <= 0.2 exits 0 (got %d)" % code)


def case_killed(kvlab, redis):
    # The server is killed 1 s into a 3 s open-loop step of a two-step sweep: exit 3, the steps
    # that ran are still printed, lost requests are counted and the time is reported.
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.Popen([kvlab, "load", "-q", "--port", str(redis.port), "--rate", "2k,4k",
                              "--duration", "3s", "--connections", "4", "--format", "json",
                              "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        time.sleep(1.0)
        redis.proc.send_signal(signal.SIGKILL)
        redis.proc.wait(timeout=5)
        stdout, stderr = p.communicate(timeout=30)
        check(p.returncode == 3, "a killed server exits 3 (got %d: %s)" % (p.returncode, stderr))
        j = json.load(open(out))
    check(len(j["steps"]) == 1, "the sweep stops at the step where the server died")
    s = j["steps"][0]
    check(s["errors_by_kind"]["disconnects"] == 4, "4 connections closed")
    # 2k/s for the ~2 s after the kill: about 4,000 slots fell due on closed connections.
    check(2500 < s["lost_requests"] < 5000, "lost requests counted (%d)" % s["lost_requests"])
    check(0.5 < s["first_disconnect_s"] < 2.0,
          "the disconnect time is reported (%.3f s)" % s["first_disconnect_s"])
    check("lost" in stderr and "closed 4 connection" in stderr, "stderr says when and how many")
    check("2,000" in stdout or "NS" in stdout, "the table of the step still printed")


def case_hits(kvlab, redis):
    port = str(redis.port)
    # An empty keyspace: every GET misses.
    code, j, _ = load_json(kvlab, "--port", port, "--requests", "2000", "--keys", "500",
                           "--key-prefix", "hm:")
    s = j["steps"][0]
    check(code == 0 and s["misses"] == 2000 and s["hits"] == 0,
          "GET on an empty keyspace: 2000 misses, 0 hits (%d/%d)" % (s["misses"], s["hits"]))
    # Prefilled: every GET hits.
    code, j, _ = load_json(kvlab, "--port", port, "--requests", "2000", "--keys", "500",
                           "--key-prefix", "hm:", "--prefill")
    s = j["steps"][0]
    check(code == 0 and s["hits"] == 2000 and s["misses"] == 0,
          "GET on a prefilled keyspace: 2000 hits (%d/%d)" % (s["hits"], s["misses"]))
    # Half the keys present (the prefill covered 500 of 1000): about half the GETs miss.
    code, j, _ = load_json(kvlab, "--port", port, "--requests", "4000", "--keys", "1000",
                           "--key-prefix", "hm:")
    s = j["steps"][0]
    check(1600 < s["hits"] < 2400 and s["hits"] + s["misses"] == 4000,
          "half the keyspace: hits %d, misses %d" % (s["hits"], s["misses"]))
    # HGETALL of a missing key is an empty array: a miss. PING is not a read.
    code, j, _ = load_json(kvlab, "--port", port, "--requests", "1000", "--keys", "100",
                           "--key-prefix", "hx:", "--command", "HGETALL __key__",
                           "--command", "PING")
    s = j["steps"][0]
    check(s["misses"] == 500 and s["hits"] == 0, "HGETALL of missing keys: misses")
    # CSV and table carry them too.
    code, out, _ = load(kvlab, "--port", port, "--requests", "500", "--keys", "500",
                        "--key-prefix", "hm:", "--format", "csv")
    header, row = out.strip().splitlines()[:2]
    cols = dict(zip(header.split(","), row.split(",")))
    check(cols["hits"] == "500" and cols["misses"] == "0", "CSV hits and misses columns")
    code, out, _ = load(kvlab, "--port", port, "--requests", "500", "--keys", "500",
                        "--key-prefix", "hm:")
    check("hits/s" in out and "misses/s" in out, "table hits/s and misses/s columns")


def case_ns(kvlab, redis):
    args = ["--port", str(redis.port), "--rate", "50M", "--duration", "1s", "--keys", "100",
            "--drain-timeout", "500ms"]
    code, _, _ = load(kvlab, *args)
    check(code == 0, "an NS step is reported, not an error (exit %d)" % code)
    code, _, err = load(kvlab, *args, "--fail-on-ns")
    check(code == 4 and "not sustained" in err, "--fail-on-ns exits 4 (got %d)" % code)


def hdr_total(b64):
    """The total count of an HdrHistogram V2 compressed histogram (base64): cookie, length,
    zlib data; inside, a 40-byte header and ZigZag LEB128 counts (negative = a run of zeros)."""
    import base64
    import struct
    import zlib
    raw = base64.b64decode(b64)
    cookie, length = struct.unpack(">ii", raw[:8])
    assert cookie == 0x1c849314, hex(cookie)
    body = zlib.decompress(raw[8:8 + length])
    assert struct.unpack(">i", body[:4])[0] == 0x1c849313
    payload_len = struct.unpack(">i", body[4:8])[0]
    p, end, total = 40, 40 + payload_len, 0
    while p < end:
        v, shift = 0, 0
        while True:
            b = body[p]
            p += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                break
        v = (v >> 1) ^ -(v & 1)
        if v > 0:
            total += v
    return total


def case_hdr(kvlab, redis):
    # The .hgrm's 50 % and 90 % lines are the table's p50 and p90; its count is the step's; the
    # interval log has one histogram per second whose counts add up to the replies; the JSON's
    # latency_hdr decodes to the step's histogram. With HdrHistogram's Java library installed
    # (Debian's libhdrhistogram-java), its log processor reads the log and agrees.
    with tempfile.TemporaryDirectory() as d:
        hgrm, hlog, js = (os.path.join(d, n) for n in ("r.hgrm", "r.hlog", "r.json"))
        code, out, err = load(kvlab, "--port", str(redis.port), "--rate", "1k,3k", "--duration",
                              "2s", "--warmup", "1s", "--keys", "1000", "--format", "json",
                              "--out", js, "--hdr-out", hgrm, "--hdr-log", hlog)
        check(code == 0, "the run succeeds (%d: %s)" % (code, err))
        j = json.load(open(js))
        for n, (target, step) in enumerate(zip(("1,000", "3,000"), j["steps"]), 1):
            row = [l for l in out.splitlines() if l.strip().startswith(target)][0].split()
            p50, p90 = row[2], row[3]
            path = os.path.join(d, "r.step%d.hgrm" % n)
            lines = [l.split() for l in open(path) if l.strip() and not l.startswith("#")][1:]
            at = {float(l[1]): l for l in lines}
            check(at[0.5][0] == p50, "step %d: hgrm 50 %% line %s == table p50 %s" %
                  (n, at[0.5][0], p50))
            check(at[0.9][0] == p90, "step %d: hgrm 90 %% line %s == table p90 %s" %
                  (n, at[0.9][0], p90))
            check(int(lines[-1][2]) == step["latency_us"]["count"],
                  "step %d: hgrm total %s == the step's count %d" %
                  (n, lines[-1][2], step["latency_us"]["count"]))
            check(hdr_total(step["latency_hdr"]) == step["latency_us"]["count"],
                  "step %d: the JSON's latency_hdr decodes to the step's count" % n)
        replies = sum(s["replies"] for s in j["steps"])
        log = open(hlog).read().splitlines()
        check(log[0].startswith("#[") and "#[Histogram log format version 1.3]" in log,
              "the log header")
        rows = [l.split(",") for l in log if l and l[0].isdigit()]
        check(5 <= len(rows) <= 7, "one interval per second of both steps (%d)" % len(rows))
        starts = [float(r[0]) for r in rows]
        check(starts == sorted(starts) and all(float(r[1]) == 1.0 for r in rows),
              "intervals in time order, 1 s each")
        counted = sum(hdr_total(r[3]) for r in rows)
        check(0.9 * replies <= counted <= replies,
              "interval counts %d add up to the replies %d" % (counted, replies))
        jar = "/usr/share/java/hdrhistogram.jar"
        if os.path.exists(jar) and os.path.exists("/usr/bin/java"):
            p = subprocess.run(["/usr/bin/java", "-cp", jar,
                                "org.HdrHistogram.HistogramLogProcessor", "-i", hlog, "-o",
                                os.path.join(d, "proc")], capture_output=True, text=True,
                               timeout=60)
            proc = [l.split() for l in open(os.path.join(d, "proc.hgrm"))
                    if l.strip() and not l.startswith("#")][1:]
            check(p.returncode == 0 and int(proc[-1][2]) == counted,
                  "HdrHistogram's HistogramLogProcessor reads the log (total %s)" % proc[-1][2])
        else:
            print("HdrHistogram's Java library not installed: log processor check skipped")


def commandstats(port):
    out = subprocess.run(["redis-cli", "-p", str(port), "INFO", "commandstats"],
                         capture_output=True, text=True, timeout=10).stdout
    calls = {}
    for line in out.splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[len("cmdstat_"):].split(":", 1)
            calls[name] = int(rest.split("calls=")[1].split(",")[0])
    return calls


def rcli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port)] + list(args), capture_output=True,
                          text=True, timeout=10).stdout.strip()


def ycsb_against(kvlab, server, name):
    """YCSB's load phase, then 2,000 requests of each of A-F: the records are YCSB's Redis layout,
    the server's command counts give the operation mix, every read finds its record."""
    port = str(server.port)
    n = 2000
    code, _, err = load(kvlab, "--port", port, "--workload", "ycsb-a", "--keys", "5000",
                        "--prefill", "--requests", "1")
    check(code == 0, "%s: load phase (%s)" % (name, err.strip()))
    check(rcli(port, "DBSIZE") == "5001" and rcli(port, "ZCARD", "_indices") == "5000",
          "%s: 5,000 records and the _indices sorted set" % name)
    first = rcli(port, "ZRANGE", "_indices", "0", "0")
    check(first.startswith("user") and rcli(port, "HLEN", first) == "10" and
          rcli(port, "HSTRLEN", first, "field9") == "100",
          "%s: a record is a hash of field0..field9, 100 bytes each" % name)
    # Expected command counts per workload for n requests (binomial; +-120 is > 5 sd).
    expect = {"a": {"hgetall": n / 2, "hset": n / 2},
              "b": {"hgetall": n * 0.95, "hset": n * 0.05},
              "c": {"hgetall": n, "hset": 0},
              "d": {"hgetall": n * 0.95, "hset": n * 0.05, "zadd": n * 0.05},
              "e": {"zrangebyscore": n * 0.95, "hset": n * 0.05, "zadd": n * 0.05},
              "f": {"hgetall": n, "hset": n / 2}}
    for w in "abcdef":
        # Each workload on a freshly loaded store, as YCSB runs them: the run's inserts continue
        # the load phase's sequence.
        rcli(port, "FLUSHALL")
        code, _, err = load(kvlab, "--port", port, "--workload", "ycsb-" + w, "--keys", "5000",
                            "--prefill", "--requests", "1")
        rcli(port, "CONFIG", "RESETSTAT")
        size0 = int(rcli(port, "DBSIZE"))
        code, j, err = load_json(kvlab, "--port", port, "--workload", "ycsb-" + w, "--keys",
                                 "5000", "--requests", str(n), "--connections", "4")
        s = j["steps"][0]
        check(code == 0 and s["errors"] == 0, "%s ycsb-%s: exit 0, no error (%d: %s)" %
              (name, w, code, err.strip()))
        calls = commandstats(port)
        for cmd, count in expect[w].items():
            got = calls.get(cmd, 0)
            check(abs(got - count) <= 120, "%s ycsb-%s: %s %d ~ %d" % (name, w, cmd, got, count))
        reads = expect[w].get("hgetall", 0) - (n / 2 if w == "f" else 0)
        check(s["misses"] == 0 and abs(s["hits"] - reads) <= 120,
              "%s ycsb-%s: every read found its record (%d hits, %d misses)" %
              (name, w, s["hits"], s["misses"]))
        inserted = int(rcli(port, "DBSIZE")) - size0
        check(inserted == calls.get("zadd", 0) and (inserted > 0) == (w in "de"),
              "%s ycsb-%s: the run's inserts are new records (%d)" % (name, w, inserted))
        check(j["manifest"]["workload"].startswith("ycsb-" + w), "%s ycsb-%s: manifest" % (name, w))
    code, _, err = load(kvlab, "--port", port, "--workload", "ycsb-z", "--requests", "1")
    check(code == 2, "an unknown workload is a usage error")
    code, _, err = load(kvlab, "--port", port, "--workload", "ycsb-a", "--ratio", "1:1",
                        "--requests", "1")
    check(code == 2, "--workload with --ratio is a usage error")


def case_ycsb(kvlab, redis, kvlab_server=None):
    ycsb_against(kvlab, redis, "redis-server")
    if kvlab_server:
        srv = Redis(kvlab_server, kvlab=True)
        try:
            ycsb_against(kvlab, srv, "kvlab-server")
        finally:
            srv.stop()


def case_counters(kvlab, redis):
    """--server-counters PID: the server's events per request for each step."""
    code, j, err = load_json(kvlab, "--port", str(redis.port), "--rate", "1k,2k", "--duration",
                             "1s", "--server-counters", str(redis.proc.pid))
    check(code == 0, "the run succeeds (%d: %s)" % (code, err))
    for s in j["steps"]:
        k = s["server_counters_per_request"]
        # redis-server answers one request in a few microseconds of CPU, plus its timers.
        check(500 < k["task_clock_ns"] < 500000,
              "server CPU per request %.0f ns" % k["task_clock_ns"])
        check(k["context_switches"] is not None, "context switches counted")
        check(k["cycles"] is not None or "hardware counters unavailable" in
              s["server_counters_note"], "hardware events or the one-line note")
    code, _, err = load(kvlab, "--port", str(redis.port), "--requests", "10",
                        "--server-counters", "999999999")
    check(code == 2 and "no process" in err, "an unknown pid is a usage error")


def main():
    kvlab, redis_bin, case = sys.argv[1:4]
    kvlab_server = sys.argv[4] if len(sys.argv) > 4 else None
    if not redis_bin or not os.path.exists(redis_bin):
        print("redis-server not installed: skipped")
        return 77
    redis = Redis(redis_bin)
    try:
        if case == "ycsb":
            case_ycsb(kvlab, redis, kvlab_server)
        else:
            {"usage": case_usage, "errors": case_errors, "killed": case_killed,
             "hits": case_hits, "ns": case_ns, "hdr": case_hdr,
             "counters": case_counters}[case](kvlab, redis)
    finally:
        redis.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

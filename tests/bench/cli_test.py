"""`kvlab bench` as a script sees it.

    cli_test.py KVLAB_CLI CASE

CASE:
  sigint    SIGINT after the first measurement: exit 130, the partial table on stdout, the JSON
            of the finished runs (interrupted: true), the running one dropped.
  manifest  the JSON manifest: every repetition's value, compiler and flags, build type,
            allocator, kernel, governor, THP, SMT; prefill progress lines (and none with -q).
  busy      the busy-machine warning follows other processes' CPU use (two spinning
            processes during the run), not the requested thread count (oversubscribed runs get
            their own note).
  counters  --counters: perf events per operation (software events on a VM without a PMU).
  ycsb      YCSB A-F in process over a hash and a skiplist backend, every run valid; E refused
            on a hash backend.
Every child is bounded by a timeout.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def bench(kvlab, *args, timeout=120):
    return subprocess.run([kvlab, "bench"] + list(args), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def case_sigint(kvlab):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.Popen([kvlab, "bench", "--backend", "hash/locked,hash/global-lock,hash/tbb",
                              "--threads", "1", "--keys", "10000", "--duration", "0.5s", "--reps",
                              "2", "--no-floor", "--format", "json", "--out", out],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Wait for the first finished measurement's progress line, then interrupt the second.
        deadline = time.monotonic() + 60
        seen = ""
        while time.monotonic() < deadline:
            line = p.stderr.readline()
            if not line:
                break
            seen += line
            if line.startswith("[1/"):
                break
        time.sleep(0.3)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=30)
        took = time.monotonic() - t0
        check(p.returncode == 130, "SIGINT exits 130 (got %d: %s)" % (p.returncode, stderr))
        check(took < 5, "it stops promptly (%.2f s)" % took)
        check("interrupted" in stdout and "Mops/s" in stdout, "the partial table is printed")
        rows = [l for l in stdout.splitlines() if l.startswith("hash/")]
        check(len(rows) == 1, "one finished row in the table (%d)" % len(rows))
        j = json.load(open(out))
        check(j["manifest"]["interrupted"] is True, "JSON says interrupted")
        check(len(j["results"]) == 1 and j["results"][0]["valid"],
              "JSON holds the finished run only (%d)" % len(j["results"]))
    # SIGTERM (what `timeout` sends) the same way: 143.
    p = subprocess.Popen([kvlab, "bench", "--backend", "hash/locked", "--threads", "1", "--keys",
                          "10000", "--duration", "2s", "--reps", "3", "--no-floor"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    p.send_signal(signal.SIGTERM)
    stdout, _ = p.communicate(timeout=30)
    check(p.returncode == 143 and "interrupted" in stdout,
          "SIGTERM exits 143 with the (empty) table (%d)" % p.returncode)


def case_manifest(kvlab):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        # Progress is printed once a second: 2,000,000 keys filled in under a second on an idle
        # 2-vCPU machine (no line printed); 8,000,000 took 4.6 s there.
        r = bench(kvlab, "--backend", "hash/locked", "--threads", "1", "--keys", "8000000",
                  "--prefill", "1", "--duration", "0.1s", "--reps", "3", "--no-floor",
                  "--format", "json", "--out", out)
        check(r.returncode == 0, "the run succeeds (%s)" % r.stderr[-300:])
        m = json.load(open(out))["manifest"]
        res = json.load(open(out))["results"][0]
    check(len(res["rep_mops"]) == 3 and all(v > 0 for v in res["rep_mops"]),
          "every repetition's value (%s)" % res["rep_mops"])
    check(min(res["rep_mops"]) == res["mops_min"] and max(res["rep_mops"]) == res["mops_max"],
          "min and max are the repetitions' extremes")
    b = m["build"]
    check(b["compiler"].startswith(("gcc", "clang")) and "-O" in b["flags"] and b["build_type"],
          "compiler, flags, build type (%s)" % b)
    mc = m["machine"]
    for k in ("kernel", "allocator", "cpu_governor", "transparent_hugepages", "smt"):
        check(mc.get(k), "machine.%s = %s" % (k, mc.get(k)))
    check(mc["kernel"].startswith("Linux") and "malloc" in mc["allocator"],
          "kernel and allocator named")
    check("prefill hash/locked:" in r.stderr and "ETA" in r.stderr,
          "prefill progress with rate and ETA on stderr")
    r = bench(kvlab, "-q", "--backend", "hash/locked", "--threads", "1", "--keys", "2000000",
              "--prefill", "1", "--duration", "0.1s", "--reps", "1", "--no-floor")
    check(r.returncode == 0 and "prefill" not in r.stderr, "-q silences it")


def case_busy(kvlab):
    args = ["--backend", "hash/locked", "--keys", "10000", "--duration", "0.5s", "--reps", "2",
            "--no-floor", "--format", "json"]
    cpus = os.cpu_count() or 1
    # Oversubscribed on an otherwise quiet machine: a note, and the busy warning only if other
    # processes really ran (this machine may be shared; then the warning must say so).
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        r = bench(kvlab, "--threads", str(cpus * 2), *args, "--out", out)
        j = json.load(open(out))
    warnings = j["manifest"]["warnings"]
    check(any(w.startswith("oversubscribed") for w in warnings), "oversubscription noted")
    busy = [w for w in warnings if w.startswith("busy machine")]
    other = j["manifest"]["machine"]["other_cpu_load"]
    check((other > 0.25) == bool(busy),
          "the busy warning follows other processes' load (%.2f), not the threads" % other)
    # Two spinning processes during a 1-thread run: the warning appears.
    spinners = [subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()+30\n"
                                  "while time.time()<t: pass"]) for _ in range(2)]
    try:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            bench(kvlab, "--threads", "1", *args, "--out", out)
            j = json.load(open(out))
    finally:
        for s in spinners:
            s.kill()
            s.wait(timeout=10)
    other = j["manifest"]["machine"]["other_cpu_load"]
    check(other > 0.8, "two spinners are seen as other load (%.2f CPUs)" % other)
    check(any(w.startswith("busy machine") for w in j["manifest"]["warnings"]),
          "and the busy warning fires")


def case_ycsb(kvlab):
    base = ["--threads", "2", "--keys", "20000", "--duration", "0.2s", "--reps", "1",
            "--format", "json"]
    for w in "abcdef":
        backends = "hash/locked,hash/kvlab,skiplist/kvlab" if w != "e" else "skiplist/kvlab,skiplist/tbb"
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            r = bench(kvlab, "--workload", "ycsb-" + w, "--backend", backends, *base, "--out", out)
            j = json.load(open(out))
        check(r.returncode == 0, "ycsb-%s: exit 0 (%s)" % (w, r.stderr[-300:]))
        res = j["results"]
        check(len(res) == len(backends.split(",")) and all(x["valid"] for x in res),
              "ycsb-%s: every backend valid (%s)" %
              (w, [(x["backend"], x.get("invalid_reason")) for x in res]))
        check(all(x["mops"] > 0 and x["workload"]["ycsb"] == "ycsb-" + w for x in res),
              "ycsb-%s: rates recorded" % w)
        check(j["floor"] == [], "ycsb-%s: no memory floor" % w)
    r = bench(kvlab, "--workload", "ycsb-e", "--backend", "hash/locked,skiplist/kvlab", *base)
    check(r.returncode == 2 and "ordered backend" in r.stderr and "hash/locked" in r.stderr,
          "ycsb-e on a hash backend is refused, naming it (%d)" % r.returncode)
    r = bench(kvlab, "--workload", "ycsb-q", "--backend", "hash/locked", *base)
    check(r.returncode == 2, "an unknown workload is a usage error")


def case_counters(kvlab):
    """--counters: per-operation events in the JSON and the table; the software events here
    (task-clock per operation matches the measured rate), the hardware ones where the PMU is
    exposed, and otherwise one line saying that they are not."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        r = bench(kvlab, "--counters", "--backend", "hash/locked", "--threads", "1", "--keys",
                  "10000", "--duration", "0.3s", "--reps", "2", "--no-floor", "--format", "json",
                  "--out", out)
        check(r.returncode == 0, "the run succeeds (%s)" % r.stderr[-200:])
        j = json.load(open(out))
    res = j["results"][0]
    k = res["counters_per_op"]
    check(set(k) >= {"cycles", "instructions", "llc_misses", "l1d_misses", "branch_misses",
                     "task_clock_ns", "context_switches", "page_faults", "ipc"},
          "every event has a field")
    # CPU nanoseconds per operation vs. the rate: 1e9 / ops-per-second of one thread, within a
    # factor that allows for Google Benchmark's own work and a busy machine.
    per_op_ns = 1e3 / res["mops"]
    check(0.3 * per_op_ns < k["task_clock_ns"] < 3 * per_op_ns,
          "task-clock per op %.1f ns ~ 1/rate %.1f ns" % (k["task_clock_ns"], per_op_ns))
    check(k["context_switches"] is not None and k["page_faults"] is not None,
          "context switches and page faults counted")
    note = j["manifest"]["counters_note"]
    if k["cycles"] is None:
        check("hardware counters unavailable" in note, "the hidden PMU is said in one line")
        check(("note: " + note) in r.stdout, "and in the table")
    else:
        check(k["cycles"] > 0 and k["instructions"] > 0 and k["ipc"] > 0, "hardware events")
    check("perf events per operation" in r.stdout and "task-ns" in r.stdout,
          "the table has the counters")


def main():
    kvlab, case = sys.argv[1:3]
    {"sigint": case_sigint, "manifest": case_manifest, "busy": case_busy,
     "ycsb": case_ycsb, "counters": case_counters}[case](kvlab)
    return 0


if __name__ == "__main__":
    sys.exit(main())

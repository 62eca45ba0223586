"""The six experiments. Each one plans its runs, drives `kvlab load` / `kvlab bench` through the
Session (framework.py), and returns its per-run rows and per-point summary; figures.py draws them
and report.py writes report.md."""

import json
import subprocess

from framework import (SUSTAIN, ExperimentError, Progress, grouped, human, median)

# ------------------------------------------------------------------------------------------------
# Shared helpers


def load_common(a, gen_threads, connections):
    """--threads/--connections for kvlab load: `connections` in total, split over the threads."""
    per = max(1, connections // gen_threads)
    return ["--threads", str(gen_threads), "--connections", str(per)]


def run_len(a, extra=0.6):
    return a.duration + a.warmup + extra


def dur(s):
    return "%gs" % s


def round2(x):
    """Two significant digits: 123456 -> 120000."""
    if x <= 0:
        return x
    from math import floor, log10
    e = floor(log10(x)) - 1
    return int(round(x / 10 ** e) * 10 ** e) if e >= 0 else round(x / 10 ** e) * 10 ** e


def parse_rates(text):
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        mult = 1
        if part.endswith("k"):
            mult, part = 1e3, part[:-1]
        elif part.endswith("m"):
            mult, part = 1e6, part[:-1]
        try:
            v = float(part) * mult
            out.append(int(v) if v == int(v) else v)
        except ValueError:
            raise ExperimentError("bad rate '%s' in --rates" % part)
    return out


def lat_ms(summary, key):
    v = summary.get(key) if summary else None
    return None if v is None else v / 1000.0


def step_row(base, run, step):
    lat = step.get("latency_us", {})
    svc = step.get("service_us", {})
    ps = step.get("pubsub", {})
    row = dict(base)
    row.update({
        "target_rate": step.get("target_rate"),
        "achieved_rate": step.get("achieved_rate"),
        "served_rate": step.get("served_rate") if step.get("target_rate") is not None else None,
        "sustained": step.get("sustained") if step.get("target_rate") is not None else None,
        "requests": step.get("requests"),
        "errors": step.get("errors"),
        "unsent": step.get("unsent"),
        "p50_ms": lat_ms(lat, "p50"), "p90_ms": lat_ms(lat, "p90"), "p99_ms": lat_ms(lat, "p99"),
        "p999_ms": lat_ms(lat, "p999"), "max_ms": lat_ms(lat, "max"),
        "svc_p50_ms": lat_ms(svc, "p50"), "svc_p99_ms": lat_ms(svc, "p99"),
        "lost": ps.get("lost"), "delivered": ps.get("delivered"),
        "window_s": step.get("window_s"),
        "gen_cpu_util": run["gen_util"], "generator_bound": run["generator_bound"],
        "server_cpu_s": run["server_cpu_s"], "raw": run["raw"],
    })
    cpu = run["server_cpu_s"]
    row["ops_per_server_cpu_s"] = (step.get("requests", 0) / cpu) if cpu else None
    row["hgrm"] = run.get("hgrm")
    row["hits"], row["misses"] = step.get("hits"), step.get("misses")
    k = step.get("server_counters_per_request")
    if k:  # --counters: the server's perf events per request
        for name in COUNTER_COLUMNS:
            row["srv_%s_per_req" % name] = k.get(name)
    return row


COUNTER_COLUMNS = ["cycles", "instructions", "llc_misses", "l1d_misses", "branch_misses",
                   "task_clock_ns", "context_switches", "page_faults"]


RUN_COLUMNS = ["experiment", "server", "server_version", "workload", "param", "target_rate",
               "repeat", "achieved_rate", "served_rate", "sustained", "requests", "errors", "unsent",
               "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "svc_p50_ms", "svc_p99_ms",
               "lost", "delivered", "window_s", "gen_cpu_util", "generator_bound", "server_cpu_s",
               "ops_per_server_cpu_s", "hits", "misses", "hgrm", "raw"]

SUMMARY_COLUMNS = ["experiment", "server", "workload", "param", "target_rate", "repeats",
                   "sustained_repeats", "sustained", "achieved_rate", "achieved_min", "achieved_max",
                   "p50_ms", "p99_ms", "p99_min_ms", "p99_max_ms", "p999_ms", "ops_per_server_cpu_s",
                   "generator_bound", "scaled"]


def summarize(rows, keys):
    """One summary row per point (median over repeats). A rate step is sustained when more than
    half of its repeats were (each by kvlab load's own 97 % rule); its latencies are the medians
    over the sustained repeats only."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    out = []
    for key, rs in groups.items():
        s = {k: v for k, v in zip(keys, key)}
        s["experiment"] = rs[0]["experiment"]
        s["repeats"] = len(rs)
        ach = [r["achieved_rate"] for r in rs]
        s["achieved_rate"] = median(ach)
        s["achieved_min"], s["achieved_max"] = min(ach), max(ach)
        open_loop = rs[0].get("target_rate") is not None
        good = rs
        if open_loop:
            good = [r for r in rs if r["sustained"]]
            s["sustained_repeats"] = len(good)
            s["sustained"] = 2 * len(good) > len(rs)
            if not s["sustained"]:
                good = []
        s["p50_ms"] = median(r.get("p50_ms") for r in good)
        s["p99_ms"] = median(r.get("p99_ms") for r in good)
        p99s = [r["p99_ms"] for r in good if r.get("p99_ms") is not None]
        s["p99_min_ms"] = min(p99s) if p99s else None
        s["p99_max_ms"] = max(p99s) if p99s else None
        s["p999_ms"] = median(r.get("p999_ms") for r in good)
        s["ops_per_server_cpu_s"] = median(r.get("ops_per_server_cpu_s") for r in rs)
        s["generator_bound"] = any(r.get("generator_bound") for r in rs)
        out.append(s)
    return out


def version_of(srv):
    return srv.version() or ""


# ------------------------------------------------------------------------------------------------
# 1. latency-sweep (seed 000)

class LatencySweep:
    name = "latency-sweep"
    seed = "000 (HotKV latency benchmark, Spanish)"
    summary = ("fixed request rates stepped up to saturation, GET-only and 1:10 SET:GET, 256-byte "
               "values, pipeline 1, open loop with coordinated-omission correction; p50/p99/p99.9 "
               "per step, NS when achieved < 97 % of the target; plus pub/sub delivery latency")

    @staticmethod
    def add_args(p):
        p.add_argument("--workloads", default="get,mixed,pubsub",
                       help="any of get, mixed (1:10 SET:GET), pubsub (default: all three)")
        p.add_argument("--rates", help="request rates, e.g. 20k,50k,100k (default: 10 steps up to "
                       "the saturation measured by a closed-loop probe)")
        p.add_argument("--steps", type=int, default=10, help="steps of the automatic rate list")
        p.add_argument("--pubsub-rates", default="1k,2k,5k,10k,20k,50k,100k",
                       help="messages/s for the pub/sub variant")
        p.add_argument("--connections", default="48",
                       help="connections in total; a list (48,816) sweeps each count as its own "
                            "table (seed 000: 48 = 4x12 and 816 = 24x34)")
        p.add_argument("--keys", type=int, default=1000000, help="prefilled keys")
        p.add_argument("--data-size", type=int, default=256)
        p.add_argument("--publishers", type=int, default=64)
        p.add_argument("--subscribers", type=int, default=100)
        p.add_argument("--payload", type=int, default=128)
        p.add_argument("--keep-going", action="store_true",
                       help="do not end a server's sweep after two NS steps in a row")
        p.add_argument("--one-client", action="store_true",
                       help="one sequential client: one connection, pipeline 1, from one "
                            "generator thread, at 1k and 5k requests/s unless --rates says "
                            "otherwise (GET-only and 1:10 SET:GET)")
        p.set_defaults(duration=5.0, warmup=1.0)

    @staticmethod
    def quick(a):
        a.rates = a.rates or "1k,100M"
        if a.workloads == "get,mixed,pubsub":
            a.workloads = "get,pubsub"
        a.pubsub_rates = "1k"
        a.keys = 1000
        if a.connections == "48":
            a.connections = "8"
        a.publishers, a.subscribers = 4, 4
        a.duration, a.warmup = 0.8, 0.2

    def run(self, ses, a, servers):
        if a.one_client:
            a.connections, a.gen_threads = "1", 1
            a.rates = a.rates or "1k,5k"
            if a.workloads == "get,mixed,pubsub":
                a.workloads = "get,mixed"
        workloads = [w.strip() for w in a.workloads.split(",") if w.strip()]
        for w in workloads:
            if w not in ("get", "mixed", "pubsub"):
                raise ExperimentError("unknown workload '%s' (get, mixed, pubsub)" % w)
        gt = a.gen_threads or ses.pin.generator_threads_default()
        try:
            conns = [int(c) for c in str(a.connections).split(",") if c.strip()]
        except ValueError:
            raise ExperimentError("bad --connections '%s' (e.g. 48 or 48,816)" % a.connections)
        kv = [(w, c) for w in workloads if w != "pubsub" for c in conns]
        ps_rates = parse_rates(a.pubsub_rates) if "pubsub" in workloads else []
        rates = parse_rates(a.rates) if a.rates else None
        n_rates = len(rates) if rates else a.steps
        per_run = run_len(a)
        total = len(servers) * (len(kv) * n_rates + len(ps_rates)) * a.repeats
        probe_s = 4.0
        ses.progress = Progress(total + (len(servers) if kv and rates is None else 0),
                                total * per_run + (len(servers) * probe_s if rates is None else 0))
        probes = {}
        rows = []
        if kv and rates is None:
            # Every server is probed first (closed loop at the largest connection count), so that
            # all of them are swept at the same rates, up to the highest saturation rate.
            for srv in servers:
                ses.start_server(srv)
                ses.progress.show("%s: prefill and closed-loop probe for the saturation rate" %
                                  srv.name)
                ses.prefill(srv, a.keys, a.data_size)
                r = ses.load(srv, "saturation-probe", load_common(a, gt, max(conns)) +
                             ["--keys", str(a.keys), "--data-size", str(a.data_size),
                              "--duration", "2s", "--warmup", "0.5s"], 3, gt)
                probes[srv.name] = r["steps"][0]["achieved_rate"]
                ses.stop_server(srv)
                ses.progress.advance(probe_s)
            top = max(probes.values())
            rates = [round2(top * (i + 1) / a.steps) for i in range(a.steps)]
            self.auto_rates = rates
        for srv in servers:
            ses.start_server(srv)
            if kv:
                ses.progress.show("%s: prefill %s keys" % (srv.name, grouped(a.keys)))
                ses.prefill(srv, a.keys, a.data_size)
            srv_rates = rates
            for w, nconn in kv:
                label_w = w if len(conns) == 1 else "%s, %d conn" % (w, nconn)
                ns_run = 0
                for rate in srv_rates:
                    if ns_run >= 2 and not a.keep_going:
                        ses.progress.advance(per_run * a.repeats)
                        ses.progress.done += a.repeats - 1
                        continue
                    step_rows = []
                    for rep in range(a.repeats):
                        label = "%s %s/s rep %d" % (label_w, human(rate), rep + 1)
                        ses.progress.show("%s: %s" % (srv.name, label))
                        args = load_common(a, gt, nconn) + [
                            "--keys", str(a.keys), "--data-size", str(a.data_size),
                            "--pipeline", "1", "--rate", "%d" % rate,
                            "--duration", dur(a.duration), "--warmup", dur(a.warmup),
                            "--sustain-threshold", str(SUSTAIN)]
                        if w == "mixed":
                            args += ["--ratio", "1:10"]
                        r = ses.load(srv, label, args, per_run, gt)
                        base = {"experiment": self.name, "server": srv.name,
                                "server_version": version_of(srv), "workload": label_w,
                                "param": rate, "repeat": rep + 1, "connections": nconn}
                        step_rows.append(step_row(base, r, r["steps"][0]))
                        ses.progress.advance(per_run)
                    rows += step_rows
                    ok = sum(1 for r in step_rows if r["sustained"]) * 2 > len(step_rows)
                    ns_run = 0 if ok else ns_run + 1
            ns_run = 0
            for rate in ps_rates:
                if ns_run >= 2 and not a.keep_going:
                    ses.progress.advance(per_run * a.repeats)
                    ses.progress.done += a.repeats - 1
                    continue
                step_rows = []
                for rep in range(a.repeats):
                    label = "pubsub %s/s rep %d" % (human(rate), rep + 1)
                    ses.progress.show("%s: %s" % (srv.name, label))
                    args = ["--pubsub", "--publishers", str(a.publishers), "--subscribers",
                            str(a.subscribers), "--channels", str(a.subscribers), "--payload",
                            str(a.payload), "--threads", str(gt), "--rate", "%d" % rate,
                            "--duration", dur(a.duration), "--warmup", dur(a.warmup)]
                    r = ses.load(srv, label, args, per_run, gt)
                    st = r["steps"][0]
                    if st.get("pubsub", {}).get("lost", 0) > 0:
                        raise ExperimentError("server '%s' lost %d pub/sub messages during %s" %
                                              (srv.name, st["pubsub"]["lost"], label))
                    base = {"experiment": self.name, "server": srv.name,
                            "server_version": version_of(srv), "workload": "pubsub",
                            "param": rate, "repeat": rep + 1}
                    step_rows.append(step_row(base, r, st))
                    ses.progress.advance(per_run)
                rows += step_rows
                ok = sum(1 for r in step_rows if r["sustained"]) * 2 > len(step_rows)
                ns_run = 0 if ok else ns_run + 1
            ses.stop_server(srv)
        ses.progress.finish()
        summary = summarize(rows, ["server", "workload", "param"])
        for s in summary:
            s["target_rate"] = s["param"]
        params = {"workloads": workloads, "rates": rates or getattr(self, "auto_rates", None),
                  "rates_source": "given" if rates else "10 steps up to the highest closed-loop "
                  "saturation rate (probes: %s)" % ", ".join("%s %s/s" % (k, grouped(v))
                                                           for k, v in probes.items()),
                  "saturation_probes": probes,
                  "pubsub_rates": ps_rates, "connections": conns, "generator_threads": gt,
                  "keys": a.keys, "data_size": a.data_size, "pipeline": 1,
                  "duration_s": a.duration, "warmup_s": a.warmup, "repeats": a.repeats,
                  "sustain_threshold": SUSTAIN, "publishers": a.publishers,
                  "subscribers": a.subscribers, "channels": a.subscribers, "payload": a.payload,
                  "stop_after_two_ns": not a.keep_going}
        return rows, summary, params


# ------------------------------------------------------------------------------------------------
# 2. commands (seed 002)

COMMANDS = ["SET", "GET", "MGET", "SETNX", "APPEND", "INCR", "LPUSH", "RPUSH", "SADD", "HSET",
            "MSET", "PING"]
GROWING = {"APPEND", "LPUSH", "RPUSH", "SADD"}


def command_template(cmd, width):
    """(kvlab load --command templates, key prefix) for one command of seed 002."""
    if cmd in ("GET", "SET"):
        t = {"GET": "GET __key__", "SET": "SET __key__ __data__"}[cmd]
        return t, "memtier-"
    if cmd == "MGET":
        return "MGET " + " ".join(["__key__"] * width), "memtier-"
    if cmd == "MSET":
        return "MSET " + " ".join(["__key__ __data__"] * width), "mset-"
    if cmd == "PING":
        return "PING", "memtier-"
    if cmd == "INCR":
        return "INCR __key__", "incr-"
    if cmd == "HSET":
        return "HSET __key__ field __data__", "hset-"
    return "%s __key__ __data__" % cmd, cmd.lower() + "-"


class Commands:
    name = "commands"
    seed = "002 (HotKV per-command throughput, Hungarian)"
    summary = ("throughput at pipeline 30 of SET GET MGET SETNX APPEND INCR LPUSH RPUSH SADD HSET "
               "MSET PING, 256-byte values, median of 3 runs, each bar scaled to the fastest "
               "server for that command, plus ops per server CPU-second")

    @staticmethod
    def add_args(p):
        p.add_argument("--commands", default=",".join(COMMANDS))
        p.add_argument("--pipeline", type=int, default=30)
        p.add_argument("--connections", type=int, default=50, help="connections in total")
        p.add_argument("--keys", type=int, default=100000)
        p.add_argument("--data-size", type=int, default=256)
        p.add_argument("--width", type=int, default=10, help="keys per MGET/MSET")
        p.set_defaults(duration=3.0, warmup=0.0)

    @staticmethod
    def quick(a):
        a.keys, a.connections, a.duration = 1000, 8, 0.25

    def run(self, ses, a, servers):
        cmds = [c.strip().upper() for c in a.commands.split(",") if c.strip()]
        for c in cmds:
            if c not in COMMANDS:
                raise ExperimentError("unknown command '%s' (%s)" % (c, ", ".join(COMMANDS)))
        gt = a.gen_threads or ses.pin.generator_threads_default()
        per_run = run_len(a)
        ses.progress = Progress(len(servers) * len(cmds) * a.repeats,
                                len(servers) * len(cmds) * a.repeats * per_run)
        rows = []
        for srv in servers:
            ses.start_server(srv)
            ses.control(srv, "FLUSHALL")
            filled = False
            for cmd in cmds:
                template, prefix = command_template(cmd, a.width)
                for rep in range(a.repeats):
                    if cmd in ("GET", "MGET") and not filled:
                        ses.progress.show("%s: prefill" % srv.name)
                        ses.prefill(srv, a.keys, a.data_size)
                        filled = True
                    label = "%s rep %d" % (cmd, rep + 1)
                    ses.progress.show("%s: %s" % (srv.name, label))
                    args = load_common(a, gt, a.connections) + [
                        "--command", template, "--key-prefix", prefix, "--keys", str(a.keys),
                        "--data-size", str(a.data_size), "--pipeline", str(a.pipeline),
                        "--duration", dur(a.duration), "--warmup", dur(a.warmup)]
                    r = ses.load(srv, label, args, per_run, gt)
                    base = {"experiment": self.name, "server": srv.name,
                            "server_version": version_of(srv), "workload": cmd, "param": cmd,
                            "repeat": rep + 1}
                    rows.append(step_row(base, r, r["steps"][0]))
                    ses.progress.advance(per_run)
                    if cmd in GROWING:
                        ses.control(srv, "FLUSHALL")
                        filled = False
            ses.stop_server(srv)
        ses.progress.finish()
        summary = summarize(rows, ["server", "workload"])
        best = {}
        for s in summary:
            best[s["workload"]] = max(best.get(s["workload"], 0), s["achieved_rate"] or 0)
        for s in summary:
            s["param"] = s["workload"]
            s["scaled"] = (s["achieved_rate"] / best[s["workload"]]) if best[s["workload"]] else None
        params = {"commands": cmds, "pipeline": a.pipeline, "connections": a.connections,
                  "generator_threads": gt, "keys": a.keys, "data_size": a.data_size,
                  "mget_mset_width": a.width, "duration_s": a.duration, "warmup_s": a.warmup,
                  "repeats": a.repeats,
                  "templates": {c: command_template(c, a.width)[0] for c in cmds},
                  "flushall_after": sorted(GROWING)}
        return rows, summary, params


# ------------------------------------------------------------------------------------------------
# 3. threads (seeds 001 and 004) and 5. placement

SHAPES = {
    # seed 001: redis-benchmark -c 500 -n 50000 -t get,set (one key, 3-byte values, -P 1)
    "rb": {"desc": "seed 001's redis-benchmark -c 500 -n 50000 -t get,set: closed loop, 500 "
                   "connections, pipeline 1, one key, 3-byte values, GET and SET runs of 50,000 "
                   "requests", "connections": 500, "pipeline": 1, "keys": 1, "data_size": 3,
           "requests": 50000, "workloads": [("get", []), ("set", ["--command", "SET __key__ __data__"])]},
    # seed 004: memtier_benchmark-like: many connections, 1:10 SET:GET, pipelined
    "memtier": {"desc": "seed 004's memtier_benchmark-like load: closed loop, 200 connections, "
                        "pipeline 10, 1:10 SET:GET over 100,000 keys, 32-byte values",
                "connections": 200, "pipeline": 10, "keys": 100000, "data_size": 32,
                "requests": None, "workloads": [("1:10", ["--ratio", "1:10"])]},
}


def default_thread_list(n):
    out, t = [], 1
    while t < n:
        out.append(t)
        t *= 2
    out.append(n)
    return out


class Threads:
    name = "threads"
    seed = "001 (KeyDB vs Redis, Spanish) and 004 (Redis 8 / Valkey 8 io-threads, Spanish)"
    summary = ("throughput and p50 vs server threads (kvlab --threads, Redis --io-threads, any "
               "--server with {threads}), at seed 001's redis-benchmark shape and seed 004's "
               "pipelined memtier-like shape, per kvlab placement policy")
    kvlab_only = False

    @classmethod
    def add_args(cls, p):
        p.add_argument("--threads", help="server thread counts, e.g. 1,2,4 (default: 1, 2, 4 … "
                       "up to the server's CPUs)")
        p.add_argument("--shapes", default="rb,memtier" if not cls.kvlab_only else "memtier",
                       help="client shapes: rb (seed 001), memtier (seed 004)")
        p.add_argument("--placements",
                       default="none" if not cls.kvlab_only else "none,compact,scatter,per-l3,per-numa",
                       help="kvlab-server --placement policies")
        p.set_defaults(duration=3.0, warmup=0.5)

    @staticmethod
    def quick(a):
        a.threads = a.threads or "1,2"
        a.duration, a.warmup = 0.3, 0.1
        a.quick_requests, a.quick_connections = 2000, 50

    def run(self, ses, a, servers):
        gt = a.gen_threads or ses.pin.generator_threads_default()
        threads = ([int(t) for t in a.threads.split(",")] if a.threads
                   else default_thread_list(ses.pin.server_threads_default()))
        shapes = [s.strip() for s in a.shapes.split(",") if s.strip()]
        for s in shapes:
            if s not in SHAPES:
                raise ExperimentError("unknown shape '%s' (rb, memtier)" % s)
        placements = [p.strip() for p in a.placements.split(",") if p.strip()]
        # (server, threads, placement) configurations
        configs = []
        for srv in servers:
            sweeps = srv.kind == "kvlab" or bool(srv.threads_args) or \
                any("{threads}" in x for x in (srv.template or []))
            for t in (threads if sweeps else [None]):
                for pl in (placements if srv.kind == "kvlab" else [None]):
                    configs.append((srv, t, pl))
        runs_per_config = sum(len(SHAPES[s]["workloads"]) for s in shapes) * a.repeats
        per_run = run_len(a)
        ses.progress = Progress(len(configs) * runs_per_config, len(configs) * runs_per_config * per_run)
        rows = []
        for srv, t, pl in configs:
            # kvlab's series carry the policy unless it is the only one and it is "none"
            plain = pl is None or (len(placements) == 1 and pl == "none")
            series = srv.name if plain else "%s %s" % (srv.name, pl)
            if srv.kind == "kvlab":
                srv.extra = ["--placement", pl] if pl else []
            try:
                ses.start_server(srv, threads=t)
            except ExperimentError as e:
                if srv.kind == "kvlab" and pl not in (None, "none") and srv.proc is not None \
                        and srv.proc.poll() is not None:
                    ses.warnings.append("%s at %s threads: placement %s refused: %s" %
                                        (srv.name, t, pl, str(e).splitlines()[-1].strip()))
                    ses.progress.advance(per_run * runs_per_config)
                    ses.progress.done += runs_per_config - 1
                    ses.running = [s for s in ses.running if s is not srv]
                    continue
                raise
            for shape in shapes:
                sh = SHAPES[shape]
                filled = False
                for wname, wargs in sh["workloads"]:
                    for rep in range(a.repeats):
                        if not filled and wname != "set":
                            ses.prefill(srv, sh["keys"], sh["data_size"])
                            filled = True
                        label = "%s %s threads=%s%s rep %d" % (shape, wname, t if t else "-",
                                                               " " + pl if pl else "", rep + 1)
                        ses.progress.show("%s: %s" % (srv.name, label))
                        conns = getattr(a, "quick_connections", None) or sh["connections"]
                        args = load_common(a, gt, conns) + wargs + [
                            "--keys", str(sh["keys"]), "--data-size", str(sh["data_size"]),
                            "--pipeline", str(sh["pipeline"])]
                        if sh["requests"]:
                            n = getattr(a, "quick_requests", None) or sh["requests"]
                            args += ["--requests", str(n)]
                        else:
                            args += ["--duration", dur(a.duration), "--warmup", dur(a.warmup)]
                        r = ses.load(srv, label, args, per_run, gt)
                        base = {"experiment": self.name, "server": series,
                                "server_version": version_of(srv),
                                "workload": "%s %s" % (shape, wname), "param": t,
                                "repeat": rep + 1, "placement": pl or ""}
                        rows.append(step_row(base, r, r["steps"][0]))
                        ses.progress.advance(per_run)
            ses.stop_server(srv)
        ses.progress.finish()
        summary = summarize(rows, ["server", "workload", "param"])
        params = {"threads": threads, "shapes": {s: SHAPES[s]["desc"] for s in shapes},
                  "placements": placements, "generator_threads": gt,
                  "duration_s": a.duration, "warmup_s": a.warmup, "repeats": a.repeats}
        return rows, summary, params


class Placement(Threads):
    name = "placement"
    seed = "(no seed: the NUMA/CCX study DESIGN.md asks for)"
    summary = ("every kvlab-server placement policy (none, compact, scatter, per-l3, per-numa) at "
               "each thread count, memtier-like pipelined load; trivial on a 2-CPU VM, the "
               "NUMA/CCX study on a many-core EPYC")
    kvlab_only = True

    def run(self, ses, a, servers):
        kv = [s for s in servers if s.kind == "kvlab"]
        if not kv:
            raise ExperimentError("the placement experiment measures kvlab-server's --placement "
                                  "policies: it needs a kvlab server (drop --no-kvlab)")
        return Threads.run(self, ses, a, kv)


# ------------------------------------------------------------------------------------------------
# 4. backends

class Backends:
    name = "backends"
    seed = "(no seed: the comparison only kvlab can make)"
    summary = ("the same RESP workload over every map backend behind kvlab-server, beside the "
               "in-process `kvlab bench` figure for the same backend, threads and update share")

    @staticmethod
    def add_args(p):
        p.add_argument("--backends", help="map backends (default: all of `kvlab backends`)")
        p.add_argument("--threads", type=int, help="server and bench threads (default: the "
                       "server's CPUs)")
        p.add_argument("--keys", type=int, default=100000)
        p.add_argument("--connections", type=int, default=50)
        p.add_argument("--pipeline", type=int, default=16)
        p.add_argument("--update", type=int, default=10, help="percent of writes (SET)")
        p.add_argument("--data-size", type=int, default=8,
                       help="value bytes (8 = the bench's std::uint64_t values)")
        p.set_defaults(duration=3.0, warmup=0.5)

    @staticmethod
    def quick(a):
        a.backends = a.backends or "hash/locked,hash/kvlab"
        a.keys, a.connections, a.duration, a.warmup = 1000, 8, 0.5, 0.1

    def run(self, ses, a, servers):
        out = subprocess.run([a.kvlab_bin, "backends", "--format", "json"], capture_output=True,
                             text=True, timeout=30)
        try:
            table = {b["name"]: b for b in json.loads(out.stdout)}
        except ValueError:
            raise ExperimentError("`kvlab backends --format json` gave no JSON: %s" % out.stderr)
        names = ([b.strip() for b in a.backends.split(",")] if a.backends
                 else [n for n, b in table.items() if b["family"] != "queue"])
        for n in names:
            if n not in table:
                raise ExperimentError("unknown backend '%s' (`kvlab backends` lists them)" % n)
        kv = [s for s in servers if s.kind == "kvlab"]
        if not kv:
            raise ExperimentError("the backends experiment needs kvlab-server (drop --no-kvlab)")
        srv = kv[0]
        others = [s for s in servers if s.kind != "kvlab"]
        gt = a.gen_threads or ses.pin.generator_threads_default()
        want = a.threads or ses.pin.server_threads_default()
        per_run = run_len(a)
        n_runs = (len(names) + len(others)) * a.repeats + len(names)
        ses.progress = Progress(n_runs, n_runs * per_run)
        ratio = "%d:%d" % (a.update, 100 - a.update)
        rows = []

        def resp(s, label_server, backend, threads):
            ses.prefill(s, a.keys, a.data_size)
            for rep in range(a.repeats):
                label = "%s rep %d" % (backend, rep + 1)
                ses.progress.show("%s: RESP %s" % (label_server, label))
                args = load_common(a, gt, a.connections) + [
                    "--ratio", ratio, "--keys", str(a.keys), "--data-size", str(a.data_size),
                    "--pipeline", str(a.pipeline), "--duration", dur(a.duration),
                    "--warmup", dur(a.warmup)]
                r = ses.load(s, label, args, per_run, gt)
                base = {"experiment": self.name, "server": label_server,
                        "server_version": version_of(s), "workload": "resp", "param": backend,
                        "repeat": rep + 1, "threads": threads}
                rows.append(step_row(base, r, r["steps"][0]))
                ses.progress.advance(per_run)

        for b in names:
            threads = want
            if not table[b]["capabilities"].get("concurrent_erase", True) and want > 1:
                threads = 1
                ses.warnings.append("%s lacks concurrent_erase: kvlab-server runs it with 1 thread "
                                    "(and so does its bench row)" % b)
            srv.extra = ["--backend", b]
            ses.start_server(srv, threads=threads)
            resp(srv, srv.name, b, threads)
            ses.stop_server(srv)
            # the in-process figure for the same backend
            ses.progress.show("kvlab bench %s" % b)
            ses.run_count += 1
            raw = "%04d-bench-%s.json" % (ses.run_count, b.replace("/", "_"))
            argv = ["bench", "--backend", b, "--threads", str(threads), "--keys", str(a.keys),
                    "--update", str(a.update), "--duration", dur(a.duration),
                    "--reps", str(a.repeats), "--format", "json", "--no-floor", "--quiet"]
            if a.counters:
                argv.append("--counters")
            data, _, _ = ses.run_tool(argv, raw, per_run * a.repeats, threads, "bench %s" % b)
            for w in data.get("manifest", {}).get("warnings", []):
                ses.warnings.append("kvlab bench %s: %s" % (b, w))
            for res in data.get("results", []):
                rows.append({"experiment": self.name, "server": "in-process (kvlab bench)",
                             "server_version": data["manifest"].get("git_sha"),
                             "workload": "in-process", "param": b, "repeat": 1,
                             "achieved_rate": res["mops"] * 1e6, "threads": res["threads"],
                             "achieved_min": res["mops_min"] * 1e6,
                             "achieved_max": res["mops_max"] * 1e6,
                             "generator_bound": False, "raw": "raw/" + raw})
            ses.progress.advance(per_run)
        for s in others:
            ses.start_server(s)
            resp(s, s.name, s.name, None)
            ses.stop_server(s)
        ses.progress.finish()
        summary = summarize(rows, ["server", "workload", "param"])
        for s in summary:
            if s["workload"] == "in-process":
                src = [r for r in rows if r["workload"] == "in-process" and r["param"] == s["param"]][0]
                s["achieved_min"], s["achieved_max"] = src["achieved_min"], src["achieved_max"]
        params = {"backends": names, "threads": want, "keys": a.keys, "connections": a.connections,
                  "pipeline": a.pipeline, "update_pct": a.update, "data_size": a.data_size,
                  "generator_threads": gt, "duration_s": a.duration, "warmup_s": a.warmup,
                  "repeats": a.repeats,
                  "bench": "kvlab bench --backend B --threads T --keys K --update U (uniform "
                           "keys, 8-byte values, median of --reps)"}
        return rows, summary, params


# ------------------------------------------------------------------------------------------------
# 6. ycsb

YCSB_DESC = {"a": "50/50 read/update", "b": "95/5 read/update", "c": "read only",
             "d": "95/5 read/insert, latest", "e": "95/5 scan/insert", "f": "50/50 read/RMW"}


class Ycsb:
    name = "ycsb"
    seed = "(no seed: YCSB's core workloads, Cooper et al., SoCC 2010)"
    summary = ("YCSB core workloads A-F: over RESP against every server (YCSB's Redis record "
               "layout, kvlab load --workload) and in process over map backends (kvlab bench "
               "--workload; E on ordered backends only)")

    @staticmethod
    def add_args(p):
        p.add_argument("--workloads", default="a,b,c,d,e,f", help="any of a..f")
        p.add_argument("--records", type=int, default=100000, help="records (the load phase)")
        p.add_argument("--backends", default="hash/kvlab,hash/tbb,skiplist/kvlab",
                       help="map backends for the in-process runs (E runs on the ordered ones)")
        p.add_argument("--threads", type=int, help="bench threads (default: the server's CPUs)")
        p.add_argument("--connections", type=int, default=50)
        p.add_argument("--pipeline", type=int, default=1)
        p.set_defaults(duration=5.0, warmup=1.0)

    @staticmethod
    def quick(a):
        a.records, a.connections, a.duration, a.warmup = 2000, 8, 0.5, 0.1
        a.backends = "hash/locked,skiplist/kvlab"

    def run(self, ses, a, servers):
        ws = [w.strip().lower().replace("ycsb-", "") for w in a.workloads.split(",") if w.strip()]
        for w in ws:
            if w not in YCSB_DESC:
                raise ExperimentError("unknown YCSB workload '%s' (a..f)" % w)
        out = subprocess.run([a.kvlab_bin, "backends", "--format", "json"], capture_output=True,
                             text=True, timeout=30)
        try:
            table = {b["name"]: b for b in json.loads(out.stdout)}
        except ValueError:
            raise ExperimentError("`kvlab backends --format json` gave no JSON: %s" % out.stderr)
        backends = [b.strip() for b in a.backends.split(",") if b.strip()]
        for b in backends:
            if b not in table or table[b]["family"] == "queue":
                raise ExperimentError("'%s' is not a map backend of `kvlab backends`" % b)
        gt = a.gen_threads or ses.pin.generator_threads_default()
        threads = a.threads or ses.pin.server_threads_default()
        per_run = run_len(a)
        n_runs = len(ws) * (len(servers) * a.repeats + 1)
        bench_s = per_run * a.repeats * len(backends)  # one bench call: every backend, every rep
        ses.progress = Progress(n_runs, len(ws) * (len(servers) * a.repeats * per_run + bench_s))
        rows = []
        for srv in servers:
            ses.start_server(srv)
            for w in ws:
                # Each workload on a freshly loaded store, as YCSB runs them.
                ses.control(srv, "FLUSHALL")
                ses.load(srv, "ycsb-%s load phase" % w,
                         ["--workload", "ycsb-" + w, "--keys", str(a.records), "--prefill",
                          "--requests", "1", "--threads", "1", "--connections", "1"],
                         max(5, a.records / 20000.0), 1, judge=False)
                for rep in range(a.repeats):
                    label = "ycsb-%s rep %d" % (w, rep + 1)
                    ses.progress.show("%s: %s" % (srv.name, label))
                    args = load_common(a, gt, a.connections) + [
                        "--workload", "ycsb-" + w, "--keys", str(a.records),
                        "--pipeline", str(a.pipeline), "--duration", dur(a.duration),
                        "--warmup", dur(a.warmup)]
                    r = ses.load(srv, label, args, per_run, gt)
                    base = {"experiment": self.name, "server": srv.name,
                            "server_version": version_of(srv), "workload": "ycsb-" + w,
                            "param": "resp", "repeat": rep + 1}
                    rows.append(step_row(base, r, r["steps"][0]))
                    ses.progress.advance(per_run)
            ses.stop_server(srv)
        for w in ws:
            chosen = [b for b in backends if w != "e" or table[b]["capabilities"].get("ordered")]
            if not chosen:
                ses.warnings.append("ycsb-e: no ordered backend among --backends; skipped in "
                                    "process")
                ses.progress.advance(bench_s)
                continue
            ses.progress.show("kvlab bench ycsb-%s" % w)
            ses.run_count += 1
            raw = "%04d-bench-ycsb-%s.json" % (ses.run_count, w)
            argv = ["bench", "--workload", "ycsb-" + w, "--backend", ",".join(chosen),
                    "--threads", str(threads), "--keys", str(a.records),
                    "--duration", dur(a.duration), "--reps", str(a.repeats), "--format", "json",
                    "--quiet"]
            if a.counters:
                argv.append("--counters")
            data, _, _ = ses.run_tool(argv, raw, per_run * a.repeats * len(chosen) + 30,
                                      threads, "bench ycsb-%s" % w)
            for res in data.get("results", []):
                if not res.get("valid"):
                    raise ExperimentError("kvlab bench ycsb-%s %s: invalid run: %s" %
                                          (w, res["backend"], res.get("invalid_reason")))
                rows.append({"experiment": self.name, "server": "in-process",
                             "server_version": data["manifest"].get("git_sha"),
                             "workload": "ycsb-" + w, "param": res["backend"], "repeat": 1,
                             "achieved_rate": res["mops"] * 1e6, "threads": res["threads"],
                             "achieved_min": res["mops_min"] * 1e6,
                             "achieved_max": res["mops_max"] * 1e6,
                             "generator_bound": False, "raw": "raw/" + raw})
            ses.progress.advance(bench_s)
        ses.progress.finish()
        summary = summarize(rows, ["server", "workload", "param"])
        for srow in summary:
            if srow["server"] == "in-process":
                src = [r for r in rows if r["server"] == "in-process" and
                       r["workload"] == srow["workload"] and r["param"] == srow["param"]][0]
                srow["achieved_min"], srow["achieved_max"] = src["achieved_min"], src["achieved_max"]
        params = {"workloads": ["ycsb-" + w for w in ws], "records": a.records,
                  "backends": backends, "bench_threads": threads, "connections": a.connections,
                  "pipeline": a.pipeline, "generator_threads": gt, "duration_s": a.duration,
                  "warmup_s": a.warmup, "repeats": a.repeats,
                  "record_layout": "hash user<FNV> of field0..field9 x 100 B, _indices sorted set",
                  "distribution": "scrambled zipfian theta 0.99 (latest for D)"}
        return rows, summary, params


EXPERIMENTS = [LatencySweep(), Commands(), Threads(), Backends(), Placement(), Ycsb()]
BY_NAME = {e.name: e for e in EXPERIMENTS}

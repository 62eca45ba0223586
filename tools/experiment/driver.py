#!/usr/bin/python3
"""`kvlab experiment`: the driver behind the kvlab CLI's experiment subcommand.

The CLI execs Debian's /usr/bin/python3 on this file with --kvlab-bin, --server-bin and
--results-root first, then the user's arguments. See tools/experiment/README.md."""

import argparse
import os
import shlex
import shutil
import signal
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from framework import (ExperimentError, Interrupted, Pinning, Server, Session,  # noqa: E402
                       install_signal_handlers)
import experiments  # noqa: E402

SUMMARY_RUN = "results.csv"


def split_named(value, what):
    if "=" not in value:
        raise ExperimentError("%s wants NAME=VALUE, got '%s'" % (what, value))
    name, rest = value.split("=", 1)
    if not name:
        raise ExperimentError("%s wants NAME=VALUE, got '%s'" % (what, value))
    return name, rest


def build_servers(a):
    servers = []
    if a.target:
        for t in a.target:
            name, hp = split_named(t, "--target")
            host, _, port = hp.rpartition(":")
            if not host or not port.isdigit():
                raise ExperimentError("--target wants NAME=HOST:PORT, got '%s'" % t)
            servers.append(Server(name, "target", host=host, port=int(port),
                                  params={"given": hp}))
    kvlabs = a.kvlab or ([] if (a.no_kvlab or a.target) else ["kvlab="])
    for k in kvlabs:
        name, flags = split_named(k, "--kvlab")
        if not os.access(a.server_bin, os.X_OK):
            raise ExperimentError("kvlab-server not found at %s (build it: meson compile -C build "
                                  "server/kvlab-server, or set KVLAB_SERVER)" % a.server_bin)
        user = shlex.split(flags)
        tmpl = [a.server_bin, "--port", "{port}", "--bind", "127.0.0.1"] + user
        servers.append(Server(name, "kvlab", template=tmpl, params={"flags": flags},
                              threads_args=[] if "--threads" in user else ["--threads", "{threads}"]))
    names = {s.name for s in servers}
    for sv in a.server or []:
        name, cmd = split_named(sv, "--server")
        if "{port}" not in cmd:
            raise ExperimentError("--server %s: the command line needs {port}" % name)
        servers.append(Server(name, "command", template=shlex.split(cmd), params={"given": cmd}))
        names.add(name)
    redis = shutil.which("redis-server")
    if not a.no_redis and not a.target and "redis" not in names and redis:
        tmpl = [redis, "--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly",
                "no", "--daemonize", "no"]
        servers.append(Server("redis", "command", template=tmpl, params={"default": True},
                              threads_args=["--io-threads", "{threads}"]))
    if not servers:
        raise ExperimentError("no server to measure (give --kvlab, --server or --target)")
    seen = set()
    for s in servers:
        if s.name in seen:
            raise ExperimentError("two servers are named '%s'; every table and figure needs a "
                                  "distinct name (NAME=...)" % s.name)
        seen.add(s.name)
    return servers


def common_args(p):
    g = p.add_argument_group("servers")
    g.add_argument("--kvlab", action="append", metavar="NAME=FLAGS",
                   help="a kvlab-server with these flags (repeatable), e.g. "
                        "--kvlab kvlab-1='--threads 1 --backend hash/locked'; default: one named "
                        "'kvlab' with its default flags")
    g.add_argument("--server", action="append", metavar="NAME=COMMAND",
                   help="another server started by the experiment, {port} (and {threads}) "
                        "substituted, e.g. --server redis='redis-server --port {port} --save \"\" "
                        "--appendonly no'")
    g.add_argument("--target", action="append", metavar="NAME=HOST:PORT",
                   help="a server already running (not started or stopped here); with --target "
                        "no default server is started")
    g.add_argument("--no-kvlab", action="store_true", help="no default kvlab-server")
    g.add_argument("--no-redis", action="store_true",
                   help="no default redis-server (used when installed)")
    g = p.add_argument_group("method")
    g.add_argument("--repeats", type=int, default=3, help="runs per point; the median is reported")
    g.add_argument("--duration", type=float, help="measured seconds per run")
    g.add_argument("--warmup", type=float, help="unmeasured seconds before each run")
    g.add_argument("--gen-threads", type=int, help="kvlab load threads (default: the generator's "
                   "CPUs when pinned, else 1)")
    g.add_argument("--pin", choices=["auto", "on", "off"], default="auto",
                   help="disjoint CPU sets for servers and generator: auto = when >= 4 CPUs")
    g.add_argument("--quick", action="store_true",
                   help="seconds, not minutes: tiny keyspace, short runs, 1 repeat (the test mode)")
    g.add_argument("--results", help="output folder (default: experiments/results/NAME/TIMESTAMP)")
    g.add_argument("--title", help="a title line for report.md")
    g.add_argument("--counters", action="store_true",
                   help="perf events: the server's per request (kvlab load --server-counters) and "
                        "the structures' per operation (kvlab bench --counters); software events "
                        "only where the PMU is hidden")


def make_parser():
    p = argparse.ArgumentParser(prog="kvlab experiment",
                                description="Run a published benchmark method against kvlab-server "
                                "and other Redis-protocol servers.")
    p.add_argument("--kvlab-bin", required=True, help=argparse.SUPPRESS)
    p.add_argument("--server-bin", required=True, help=argparse.SUPPRESS)
    p.add_argument("--results-root", required=True, help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="experiment", metavar="NAME")
    sub.add_parser("list", help="describe the experiments")
    rp = sub.add_parser("report", help="redraw the figures and rewrite report.md of a result "
                        "folder from its manifest.json and summary.csv")
    rp.add_argument("folder")
    rp.add_argument("--title")
    for e in experiments.EXPERIMENTS:
        sp = sub.add_parser(e.name, help=e.summary.replace("%", "%%"),
                            description=("%s. Seed: %s." % (e.summary, e.seed)).replace("%", "%%"))
        common_args(sp)
        e.add_args(sp)
    return p


def list_experiments():
    print("kvlab experiment NAME [options]   (kvlab experiment NAME --help for the options)\n")
    for e in experiments.EXPERIMENTS:
        print("%-14s %s" % (e.name, e.summary))
        print("%-14s seed %s" % ("", e.seed))
    print("\nOutputs: experiments/results/NAME/TIMESTAMP/ (manifest.json, results.csv, summary.csv, "
          "raw/, figures PNG+SVG, report.md). --quick runs any of them in seconds.")


def main(argv):
    user = argv[6:]  # after --kvlab-bin, --server-bin and --results-root (the CLI adds them)
    p = make_parser()
    a = p.parse_args(argv)
    a.argv = user
    if a.experiment in (None, "list"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `kvlab experiment list | head`
        if a.experiment is None:
            p.print_usage(sys.stderr)
            print("", file=sys.stderr)
        list_experiments()
        return 0 if a.experiment == "list" else 2
    if a.experiment == "report":
        return rereport(a)
    exp = experiments.BY_NAME[a.experiment]
    if a.quick:
        exp.quick(a)
        if "--repeats" not in user:
            a.repeats = 1
    if a.repeats < 1:
        print("kvlab experiment: --repeats must be >= 1", file=sys.stderr)
        return 2
    if a.results:
        a.results_root = os.path.abspath(a.results)
    install_signal_handlers()
    ses = None
    try:
        servers = build_servers(a)
        pin = Pinning(a.pin)
        ses = Session(exp.name, a, pin)
        print("kvlab experiment %s -> %s" % (exp.name, ses.dir), file=sys.stderr)
        print("servers: %s" % ", ".join(s.name for s in servers), file=sys.stderr)
        print(pin.note, file=sys.stderr)
        rows, summary, params = exp.run(ses, a, servers)
        ses.stop_all()
        finish(ses, exp, a, rows, summary, params)
        return 0
    except (ExperimentError, Interrupted, KeyboardInterrupt) as e:
        if ses:
            ses.stop_all()
            if ses.progress:
                ses.progress.finish()
        msg = str(e) or "interrupted"
        print("\nkvlab experiment %s FAILED: %s" % (a.experiment, msg), file=sys.stderr)
        if ses:
            ses.write_json("manifest.json", ses.manifest("failed", error=msg))
            with open(os.path.join(ses.dir, "FAILED"), "w") as f:
                f.write(msg + "\n")
            print("no results were reported; the manifest and raw files are in %s" % ses.dir,
                  file=sys.stderr)
        return 130 if isinstance(e, (Interrupted, KeyboardInterrupt)) else 3
    except Exception:
        if ses:
            ses.stop_all()
        traceback.print_exc()
        if ses:
            ses.write_json("manifest.json", ses.manifest("failed", error=traceback.format_exc()))
            with open(os.path.join(ses.dir, "FAILED"), "w") as f:
                f.write(traceback.format_exc())
        return 1


def _cell(v):
    if v == "":
        return None
    if v in ("true", "false"):
        return v == "true"
    try:
        f = float(v)
        return int(f) if f.is_integer() and "e" not in v and "." not in v else f
    except ValueError:
        return v


def rereport(a):
    import csv
    import json
    import figures
    import report
    d = os.path.abspath(a.folder)
    with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
    if m.get("status") != "ok":
        print("kvlab experiment report: %s is a failed run (%s)" % (d, m.get("error")), file=sys.stderr)
        return 3
    with open(os.path.join(d, "summary.csv"), newline="") as f:
        summary = [{k: _cell(v) for k, v in r.items()} for r in csv.DictReader(f)]
    exp = experiments.BY_NAME[m["experiment"]]
    figs = figures.draw(exp.name, d, summary, m["parameters"])
    m["figures"] = figs
    _, table = report.write(exp, d, m, None, summary, m["parameters"], figs, a.title)
    print(table)
    print("rewrote the figures and report.md in %s" % d)
    return 0


def spectrum_runs(rows):
    """The runs whose latency spectrum figures.spectrum draws: per server and workload, the
    first repeat of the highest sustained step (of the closed-loop run, when there is no rate)."""
    best = {}
    for r in rows:
        if not r.get("hgrm") or r.get("repeat") not in (1, None) or r.get("sustained") is False:
            continue
        key = (r["server"], r["workload"])
        p = r.get("param")
        score = p if isinstance(p, (int, float)) else 0
        if key not in best or score > best[key][0]:
            best[key] = (score, r)
    out = []
    for (srv, w), (_, r) in sorted(best.items(), key=lambda kv: (str(kv[0][1]), str(kv[0][0]))):
        label = "%s, %s" % (srv, w) + (" @ %s/s" % r["param"] if r.get("target_rate") else "")
        out.append([label, r["hgrm"]])
    return out


def finish(ses, exp, a, rows, summary, params):
    import report
    params["hdr_spectrum"] = spectrum_runs(rows)
    cols = list(experiments.RUN_COLUMNS)
    for name in experiments.COUNTER_COLUMNS:
        if any(("srv_%s_per_req" % name) in r for r in rows):
            cols.insert(cols.index("hgrm"), "srv_%s_per_req" % name)
    for extra in ("connections", "placement", "threads"):
        if any(extra in r for r in rows):
            cols.insert(cols.index("repeat"), extra)
    ses.write_csv("results.csv", cols, rows)
    ses.write_csv("summary.csv", experiments.SUMMARY_COLUMNS, summary)
    # The figures and report.md are drawn from summary.csv as written (rounded), exactly as
    # `kvlab experiment report` redraws them: from the unrounded values, a ratio on a rounding
    # boundary printed differently in the two (the quick test caught it once in a few runs).
    import csv
    with open(os.path.join(ses.dir, "summary.csv"), newline="") as f:
        summary = [{k: _cell(v) for k, v in r.items()} for r in csv.DictReader(f)]
    manifest = ses.manifest("ok", parameters=params)
    ses.write_json("manifest.json", manifest)
    figs = []
    try:
        import figures
        figs = figures.draw(exp.name, ses.dir, summary, params)
    except ImportError as e:
        ses.warnings.append("no figures: matplotlib is missing (%s); install python3-matplotlib" % e)
        print("kvlab experiment: no figures: %s" % e, file=sys.stderr)
    manifest = ses.manifest("ok", parameters=params, extra={"figures": figs})
    ses.write_json("manifest.json", manifest)
    text, table = report.write(exp, ses.dir, manifest, rows, summary, params, figs, a.title)
    print(table)
    print("results: %s" % ses.dir)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

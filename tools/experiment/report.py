"""report.md: the seeds' tables (NS cells, generator-bound marks, medians with ranges), the figures
and a "how this was measured" section generated from the manifest. Also the terminal summary."""

import os

from framework import grouped, human


def ms(v):
    return "–" if v is None else "%.3f" % v


def md_table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def plain_table(header, rows):
    w = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda r: "  ".join(str(c).rjust(n) if i else str(c).ljust(n)  # noqa: E731
                               for i, (c, n) in enumerate(zip(r, w)))
    return "\n".join([line(header)] + [line(r) for r in rows])


def servers_of(summary):
    seen = []
    for s in summary:
        if s["server"] not in seen:
            seen.append(s["server"])
    return seen


def gb(s):
    return " †" if s.get("generator_bound") else ""


# -- latency-sweep -------------------------------------------------------------------------------

def latency_tables(summary, params):
    parts, plain = [], []
    names = {"get": "GET only", "mixed": "1:10 SET:GET", "pubsub": "pub/sub delivery latency"}
    servers = servers_of(summary)
    order = []
    for s in sorted(summary, key=lambda s: s["workload"] == "pubsub"):
        if s["workload"] not in order:
            order.append(s["workload"])
    titles = {w: names.get(w.split(",")[0], w) + (", " + w.split(", ", 1)[1] + "ections"
                                                  if ", " in w else "") for w in order}
    for w in order:
        pts = [s for s in summary if s["workload"] == w]
        if not pts:
            continue
        rates = sorted({s["param"] for s in pts})
        rows = []
        for r in rates:
            row = [grouped(r)]
            for srv in servers:
                s = next((s for s in pts if s["server"] == srv and s["param"] == r), None)
                if s is None:
                    row.append("–")
                elif not s["sustained"]:
                    row.append("NS (%s)%s" % (grouped(s["achieved_rate"]), gb(s)))
                else:
                    rng = ""
                    if s["repeats"] > 1 and s["p99_min_ms"] is not None:
                        rng = " (%s–%s)" % (ms(s["p99_min_ms"]), ms(s["p99_max_ms"]))
                    row.append("%s / %s%s / %s%s" % (ms(s["p50_ms"]), ms(s["p99_ms"]), rng,
                                                      ms(s["p999_ms"]), gb(s)))
            rows.append(row)
        head = ["target/s"] + servers
        parts.append("### %s\n\nCells: p50 / p99 (range over repeats) / p99.9 in ms, latency from "
                     "the intended send time; `NS (achieved/s)` = not sustained (achieved or "
                     "served < 97 %% of the target in most repeats), latency not shown; `–` = that "
                     "server's sweep had stopped (two NS steps in a row); † = generator-bound.\n\n%s"
                     % (titles[w], md_table(head, rows)))
        plain.append(titles[w] + " (p50 / p99 / p99.9 ms)\n" + plain_table(head, [
            [c.replace(" (", "\n(").split("\n")[0] if i and "NS" not in c else c
             for i, c in enumerate(r)] for r in rows]))
    return "\n\n".join(parts), "\n\n".join(plain)


# -- commands ------------------------------------------------------------------------------------

def commands_tables(summary, params):
    servers = servers_of(summary)
    rows, eff_rows = [], []
    for c in params["commands"]:
        pts = {s["server"]: s for s in summary if s["workload"] == c}
        if not pts:
            continue
        best = max(pts.values(), key=lambda s: s["achieved_rate"] or 0)
        row = [c]
        for srv in servers:
            s = pts.get(srv)
            if s is None:
                row.append("–")
                continue
            cell = "%s (%s–%s)" % (grouped(s["achieved_rate"]), human(s["achieved_min"]),
                                   human(s["achieved_max"]))
            if s is best and len(pts) > 1:
                cell = "**%s**" % cell
            row.append(cell + gb(s))
        if len(servers) > 1:
            base = pts.get(servers[0])
            for srv in servers[1:]:
                s = pts.get(srv)
                row.append("%.2fx" % (base["achieved_rate"] / s["achieved_rate"])
                           if base and s and s["achieved_rate"] else "–")
        rows.append(row)
        eff_rows.append([c] + [grouped(pts[srv]["ops_per_server_cpu_s"])
                               if srv in pts and pts[srv]["ops_per_server_cpu_s"] else "–"
                               for srv in servers])
    head = ["command"] + servers + ["%s vs %s" % (servers[0], s) for s in servers[1:]]
    text = ("### Median ops/s (min–max over repeats)\n\nBold = the highest result for that "
            "command; † = generator-bound (the generator's CPU use was above 85 %%, so this is the "
            "generator's ceiling, not the server's).\n\n%s\n\n### Ops per server CPU-second "
            "(median)\n\n%s" % (md_table(head, rows),
                                md_table(["command"] + servers, eff_rows)))
    plain = plain_table(["command"] + servers, [[r[0]] + [c.replace("**", "").split(" (")[0] +
                                                          (" †" if "†" in c else "")
                                                          for c in r[1:1 + len(servers)]]
                                               for r in rows])
    return text, "median ops/s\n" + plain


# -- threads / placement -------------------------------------------------------------------------

def threads_tables(summary, params):
    servers = servers_of(summary)
    workloads = []
    for s in summary:
        if s["workload"] not in workloads:
            workloads.append(s["workload"])
    parts, plain = [], []
    for w in workloads:
        ts = sorted({s["param"] for s in summary if s["workload"] == w and s["param"] is not None})
        rows = []
        for srv in servers:
            row = [srv]
            for t in ts:
                s = next((s for s in summary if s["server"] == srv and s["workload"] == w
                          and (s["param"] == t or s["param"] is None)), None)
                row.append("–" if s is None else "%s / %s%s" % (human(s["achieved_rate"]),
                                                              ms(s["p50_ms"]), gb(s)))
            rows.append(row)
        head = ["server"] + ["%s thr" % t for t in ts]
        parts.append("### %s\n\nCells: median ops/s / p50 ms; † = generator-bound.\n\n%s" %
                     (w, md_table(head, rows)))
        plain.append(w + " (ops/s / p50 ms)\n" + plain_table(head, rows))
    return "\n\n".join(parts), "\n\n".join(plain)


# -- backends ------------------------------------------------------------------------------------

def backends_tables(summary, params):
    rows = []
    resp = {s["param"]: s for s in summary if s["workload"] == "resp"}
    inproc = {s["param"]: s for s in summary if s["workload"] == "in-process"}
    for name in list(params["backends"]) + [p for p in resp if p not in params["backends"]]:
        r, i = resp.get(name), inproc.get(name)
        rows.append([name,
                     "%s (%s–%s)%s" % (grouped(r["achieved_rate"]), human(r["achieved_min"]),
                                       human(r["achieved_max"]), gb(r)) if r else "–",
                     "%s (%s–%s)" % (grouped(i["achieved_rate"]), human(i["achieved_min"]),
                                     human(i["achieved_max"])) if i else "–",
                     "%.1f%%" % (100 * r["achieved_rate"] / i["achieved_rate"])
                     if r and i and i["achieved_rate"] else "–",
                     grouped(r["ops_per_server_cpu_s"]) if r and r["ops_per_server_cpu_s"] else "–"])
    head = ["backend", "over RESP ops/s", "in-process ops/s", "RESP / in-process",
            "RESP ops per server CPU-s"]
    return ("### Backends\n\n%s" % md_table(head, rows),
            plain_table(head, [[c.split(" (")[0] for c in r] for r in rows]))


# -- ycsb ----------------------------------------------------------------------------------------

def ycsb_tables(summary, params):
    series = []
    for s in summary:
        if (s["server"], s["param"]) not in series:
            series.append((s["server"], s["param"]))
    series.sort(key=lambda k: (k[0] == "in-process", str(k[0]), str(k[1])))
    head = ["workload"] + ["%s (RESP)" % srv if p == "resp" else "%s (in process)" % p
                           for srv, p in series]
    rows = []
    for w in params["workloads"]:
        row = [w]
        for srv, p in series:
            m = [s for s in summary if s["server"] == srv and s["param"] == p and s["workload"] == w]
            if not m or not m[0]["achieved_rate"]:
                row.append("–")
                continue
            cell = grouped(m[0]["achieved_rate"])
            if p == "resp" and m[0].get("p99_ms") is not None:
                cell += " (p99 %s ms)" % ms(m[0]["p99_ms"])
            row.append(cell + gb(m[0]))
        rows.append(row)
    return ("### YCSB (operations/s, median; p99 over RESP)\n\n%s" % md_table(head, rows),
            plain_table(head, rows))


TABLES = {"latency-sweep": latency_tables, "commands": commands_tables,
          "threads": threads_tables, "placement": threads_tables, "backends": backends_tables,
          "ycsb": ycsb_tables}


def how_measured(m):
    p = m["parameters"]
    mach = m["machine"]
    lines = [
        "- Command: `%s`" % m["command_line"],
        "- kvlab: %s, commit %s" % (m["kvlab"]["version"], m["kvlab"]["commit"]),
        "- Time: %s to %s (UTC)" % (m["start_time"], m["end_time"]),
        "- Machine: %s, %s, %s CPUs online, allowed %s; kernel %s; CPU governor: %s; memory %s" %
        (mach["hostname"], mach["cpu_model"], mach["cpus_online"], mach["cpus_allowed"],
         mach["kernel"], mach["cpu_governor"], mach["memory"]),
        "- Topology: %s" % m["topology"],
        "- CPU placement: %s" % m["pinning"]["note"],
        "- Load average before %s, after %s%s" % (
            m["load_average"]["before"], m["load_average"]["after"],
            " — the machine was busy with other work: read absolute numbers with that in mind"
            if max((m["load_average"]["before"] or [0])[0], (m["load_average"]["after"] or [0])[0])
            > 1.5 else ""),
        "- Parameters: " + "; ".join("%s = %s" % (k, v) for k, v in p.items()
                                      if k not in ("saturation_probes",)),
    ]
    lines.append("- Servers (every process started, in order):")
    seen = set()
    for s in m["server_starts"]:
        key = s["command_line"].split(" --port ")[0] + str(s.get("threads"))
        lines.append("  - %s: `%s` (pid %s, %s)" % (s["name"], s["command_line"], s["pid"],
                                                     s["version"]))
        seen.add(key)
    for s in m["servers"]:
        if s["kind"] == "target":
            lines.append("  - %s: given as %s:%s (%s)" % (s["name"], s["host"], s["port"],
                                                         s["version"]))
    lines.append("- Generator command lines: %d runs, each with its raw JSON under `raw/` "
                 "(manifest.json lists every one); the first: `%s`" %
                 (len(m["generator_commands"]), m["generator_commands"][0]["command_line"]
                  if m["generator_commands"] else "–"))
    if m["generator_bound"]:
        lines.append("- Generator-bound runs (generator CPU > 85 %% of its threads): %d, e.g. %s" %
                     (len(m["generator_bound"]), "; ".join(m["generator_bound"][:5])))
    else:
        lines.append("- No run was generator-bound (generator CPU stayed at or below 85 %).")
    for w in m["warnings"]:
        lines.append("- Warning: %s" % w)
    if m.get("quick"):
        lines.append("- **--quick**: a test run (tiny keyspace, short runs, 1 repeat); the numbers "
                     "show that the method works, not what the servers can do.")
    return "\n".join(lines)


def write(exp, folder, manifest, rows, summary, params, figs, title=None):
    tables, plain = TABLES[exp.name](summary, params)
    fig_md = "\n".join("![%s](%s)" % (f, f) for f in figs if f.endswith(".png"))
    svgs = ", ".join("[%s](%s)" % (f, f) for f in figs if f.endswith(".svg"))
    text = "# %s\n\n%s\n\nMethod (seed %s): %s.\n\n%s\n\n%s%s\n\n## How this was measured\n\n%s\n" % (
        title or "kvlab experiment %s" % exp.name,
        "Generated by `kvlab experiment %s` from manifest.json and summary.csv in this folder "
        "(per-run rows: results.csv)." % exp.name,
        exp.seed, exp.summary, tables, fig_md, ("\n\nSVG: " + svgs) if svgs else "",
        how_measured(manifest))
    with open(os.path.join(folder, "report.md"), "w") as f:
        f.write(text)
    return text, plain

"""Figures (PNG + SVG) with matplotlib (Debian python3-matplotlib), drawn from summary rows:
latency vs rate with NS marked (seed 000), grouped bars per command scaled to the fastest server
(seed 002), throughput and p50 vs threads (seeds 001/004), backend bars beside the in-process
figure."""

import os

import matplotlib

from framework import human

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402
from matplotlib.transforms import blended_transform_factory  # noqa: E402

# Reproducible SVG text (no date, fixed ids), so checked-in figures diff cleanly.
matplotlib.rcParams["svg.hashsalt"] = "kvlab"
matplotlib.rcParams["font.size"] = 9
matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: smaller SVGs
METADATA_SVG = {"Date": None, "Creator": "kvlab experiment"}
METADATA_PNG = {"Software": "kvlab experiment"}

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf"]


def _save(fig, folder, stem):
    out = []
    for ext, meta in (("png", METADATA_PNG), ("svg", METADATA_SVG)):
        path = os.path.join(folder, "%s.%s" % (stem, ext))
        fig.savefig(path, dpi=120, metadata=meta, bbox_inches="tight")
        out.append(os.path.basename(path))
    plt.close(fig)
    return out


def _fmt_rate(v, _pos=None):
    if v >= 1e6:
        return "%gM" % (v / 1e6)
    if v >= 1e3:
        return "%gk" % (v / 1e3)
    return "%g" % v


def _servers(summary):
    seen = []
    for s in summary:
        if s["server"] not in seen:
            seen.append(s["server"])
    return seen


def latency(folder, summary, params):
    """One panel per workload: p50 (dashed) and p99 (solid) vs target rate, log-log; an NS step
    is an x on the floor of the panel, labelled NS, with no latency drawn."""
    workloads = []
    for s in sorted(summary, key=lambda s: s["workload"] == "pubsub"):
        if s["workload"] not in workloads:
            workloads.append(s["workload"])
    names = {"get": "GET only", "mixed": "1:10 SET:GET", "pubsub": "pub/sub delivery"}
    titles = {w: names.get(w.split(",")[0], w) + (", " + w.split(", ", 1)[1] + "ections"
                                                  if ", " in w else "") for w in workloads}
    servers = _servers(summary)
    fig, axes = plt.subplots(1, len(workloads), figsize=(5.2 * len(workloads), 4), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        floor = blended_transform_factory(ax.transData, ax.transAxes)
        for i, srv in enumerate(servers):
            pts = sorted((s for s in summary if s["server"] == srv and s["workload"] == w),
                         key=lambda s: s["param"])
            ok = [s for s in pts if s["sustained"] and s["p99_ms"] is not None]
            ns = [s for s in pts if not s["sustained"]]
            c = COLORS[i % len(COLORS)]
            if ok:
                x = [s["param"] for s in ok]
                ax.plot(x, [s["p99_ms"] for s in ok], "-o", color=c, ms=4, label="%s p99" % srv)
                ax.plot(x, [s["p50_ms"] for s in ok], "--", color=c, marker=".", label="%s p50" % srv)
                lo = [s["p99_ms"] - s["p99_min_ms"] for s in ok]
                hi = [s["p99_max_ms"] - s["p99_ms"] for s in ok]
                ax.errorbar(x, [s["p99_ms"] for s in ok], yerr=[lo, hi], fmt="none", ecolor=c,
                            alpha=0.5, capsize=2)
            for j, s in enumerate(ns):
                ax.plot([s["param"]], [0.03 + 0.05 * i], "x", color=c, ms=7, mew=2,
                        transform=floor, clip_on=False,
                        label="%s NS (not sustained)" % srv if j == 0 else None)
                ax.annotate("NS", (s["param"], 0.03 + 0.05 * i), xycoords=floor,
                            textcoords="offset points", xytext=(4, -3), color=c, fontsize=7)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = sorted({s["param"] for s in summary if s["workload"] == w})
        if len(ticks) <= 12:
            ax.set_xticks(ticks)
            ax.tick_params(axis="x", labelrotation=45)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_formatter(_fmt_rate)
        ax.set_xlabel("target rate (%s/s)" % ("messages" if w == "pubsub" else "requests"))
        ax.set_ylabel("latency (ms), from the intended send time")
        ax.set_title(titles[w])
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("Fixed-rate latency sweep (seed 000 method): p50 dashed, p99 solid; x on the "
                 "floor = NS (achieved < 97 % of target)", fontsize=9)
    handles, labels = {}, []
    for ax in axes[0]:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in handles:
                handles[l] = h
                labels.append(l)
    fig.legend([handles[l] for l in labels], labels, loc="lower center", fontsize=7,
               ncol=min(6, len(labels)), bbox_to_anchor=(0.5, -0.02 - 0.035 * (len(labels) // 6)))
    fig.tight_layout(rect=(0, 0.06 + 0.035 * (len(labels) // 6), 1, 0.96))
    return _save(fig, folder, "latency")


def commands(folder, summary, params):
    cmds = [c for c in params["commands"] if any(s["workload"] == c for s in summary)]
    servers = _servers(summary)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(max(8, 0.4 * len(cmds) * max(1, len(servers)) + 3), 7))
    width = 0.8 / max(1, len(servers))
    for i, srv in enumerate(servers):
        xs, ys, labels, eff = [], [], [], []
        for k, c in enumerate(cmds):
            s = next((s for s in summary if s["server"] == srv and s["workload"] == c), None)
            if s is None:
                continue
            xs.append(k + (i - (len(servers) - 1) / 2) * width)
            ys.append(s["scaled"] or 0)
            labels.append(human(s["achieved_rate"]) + ("†" if s["generator_bound"] else ""))
            eff.append(s["ops_per_server_cpu_s"] or 0)
        bars = ax.bar(xs, ys, width, color=COLORS[i % len(COLORS)], label=srv)
        for b, lab in zip(bars, labels):
            ax.annotate(lab, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                        va="bottom", fontsize=6, rotation=90, xytext=(0, 2),
                        textcoords="offset points")
        ax2.bar(xs, eff, width, color=COLORS[i % len(COLORS)], label=srv)
    ax.set_xticks(range(len(cmds)), cmds)
    ax.set_ylim(0, 1.3)
    ax.set_ylabel("ops/s, scaled to the fastest server")
    ax.set_title("Per-command throughput, pipeline %d (seed 002 method); labels = median ops/s, "
                 "† = generator-bound (generator CPU > 85 %%)" % params["pipeline"], fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    ax2.set_xticks(range(len(cmds)), cmds)
    ax2.set_ylabel("ops per server CPU-second")
    ax2.yaxis.set_major_formatter(_fmt_rate)
    ax2.grid(True, axis="y", alpha=0.3)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, folder, "commands")


def threads(folder, summary, params):
    workloads = []
    for s in summary:
        if s["workload"] not in workloads:
            workloads.append(s["workload"])
    servers = _servers(summary)
    fig, axes = plt.subplots(2, len(workloads), figsize=(4.6 * len(workloads), 6.4), squeeze=False)
    all_t = sorted({s["param"] for s in summary if s["param"] is not None})
    for col, w in enumerate(workloads):
        ax, ax2 = axes[0][col], axes[1][col]
        for i, srv in enumerate(servers):
            pts = [s for s in summary if s["server"] == srv and s["workload"] == w]
            c = COLORS[i % len(COLORS)]
            swept = sorted((s for s in pts if s["param"] is not None), key=lambda s: s["param"])
            if swept:
                x = [s["param"] for s in swept]
                ax.plot(x, [s["achieved_rate"] for s in swept], "-o", color=c, label=srv, ms=4)
                ax.fill_between(x, [s["achieved_min"] for s in swept],
                                [s["achieved_max"] for s in swept], color=c, alpha=0.12)
                ax2.plot(x, [s["p50_ms"] for s in swept], "-o", color=c, label=srv, ms=4)
            for s in pts:
                if s["param"] is None:  # a server without a thread knob: one horizontal line
                    ax.axhline(s["achieved_rate"], color=c, ls="--", label="%s (fixed)" % srv)
                    ax2.axhline(s["p50_ms"], color=c, ls="--", label="%s (fixed)" % srv)
        for a_ in (ax, ax2):
            a_.set_xticks(all_t)
            a_.grid(True, alpha=0.3)
            a_.set_xlabel("server threads (kvlab --threads, Redis --io-threads)")
        ax.yaxis.set_major_formatter(_fmt_rate)
        ax.set_ylim(bottom=0)
        ax2.set_ylim(bottom=0)
        ax.set_ylabel("ops/s (median; band = min–max)")
        ax2.set_ylabel("p50 latency (ms)")
        ax.set_title(w)
        ax.legend(fontsize=7)
    fig.suptitle("Throughput and p50 vs server threads", fontsize=10)
    fig.tight_layout()
    return _save(fig, folder, "threads")


def backends(folder, summary, params):
    names = params["backends"]
    resp = {s["param"]: s for s in summary if s["workload"] == "resp"}
    inproc = {s["param"]: s for s in summary if s["workload"] == "in-process"}
    others = [s for s in summary if s["workload"] == "resp" and s["param"] not in names]
    labels = names + [s["param"] for s in others]
    fig, ax = plt.subplots(figsize=(max(7, 0.9 * len(labels)), 4.5))
    x = range(len(labels))
    r = [resp[n]["achieved_rate"] if n in resp else 0 for n in labels]
    ip = [inproc[n]["achieved_rate"] if n in inproc else 0 for n in labels]
    ax.bar([i - 0.2 for i in x], r, 0.4, color=COLORS[0], label="over RESP (kvlab-server + kvlab load)")
    ax.bar([i + 0.2 for i in x], ip, 0.4, color=COLORS[2],
           label="in-process (kvlab bench, same backend, threads, update %)")
    ax.set_yscale("log")
    top = max(r + ip + [1])
    ax.set_ylim(top=top * 12)
    ax.yaxis.set_major_formatter(_fmt_rate)
    ax.set_xticks(list(x), labels, rotation=30, ha="right")
    ax.set_ylabel("ops/s (median)")
    ax.set_title("Map backends: the server around the structure (%d threads, %d%% updates)" %
                 (params["threads"], params["update_pct"]), fontsize=9)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, folder, "backends")


def ycsb(folder, summary, params):
    """Grouped bars per YCSB workload: each server over RESP and each backend in process."""
    ws = params["workloads"]
    series = []
    for srow in summary:
        key = (srow["server"], srow["param"])
        if key not in series:
            series.append(key)
    series.sort(key=lambda k: (k[0] == "in-process", str(k[0]), str(k[1])))
    fig, ax = plt.subplots(figsize=(max(7, 1.4 * len(ws) + 2), 4.5))
    width = 0.8 / max(1, len(series))
    for i, (srv, param) in enumerate(series):
        by_w = {srow["workload"]: srow for srow in summary
                if srow["server"] == srv and srow["param"] == param}
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(ws))]
        ys = [by_w[w]["achieved_rate"] if w in by_w and by_w[w]["achieved_rate"] else 0 for w in ws]
        label = "%s (RESP)" % srv if param == "resp" else "%s (in process)" % param
        ax.bar(xs, ys, width, color=COLORS[i % len(COLORS)], label=label)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_fmt_rate)
    ax.set_xticks(list(range(len(ws))), ws)
    ax.set_ylabel("operations/s (median)")
    ax.set_title("YCSB core workloads, %s records" % human(params["records"]), fontsize=9)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return _save(fig, folder, "ycsb")


def read_hgrm(path):
    """(percentile fraction, value ms) pairs of an HdrHistogram percentile-distribution file."""
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3 or line.startswith("#"):
                continue
            try:
                out.append((float(parts[1]), float(parts[0])))
            except ValueError:
                continue
    return out


def spectrum(folder, runs):
    """Latency by percentile, HdrHistogram's plot: x = 1/(1-p) on a log axis (50 %, 90 %,
    99 % … evenly spaced), y = latency (ms, log), one line per run's .hgrm file."""
    series = []
    for label, rel in runs:
        path = os.path.join(folder, rel)
        if os.path.exists(path):
            pts = [(1.0 / (1.0 - p), v) for p, v in read_hgrm(path) if p < 1.0 and v > 0]
            if pts:
                series.append((label, pts))
    if not series:
        return []
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, (label, pts) in enumerate(series):
        ax.plot([x for x, _ in pts], [v for _, v in pts], color=COLORS[i % len(COLORS)],
                label=label, linewidth=1.3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = [1, 2, 10, 100, 1000, 10000, 100000]
    names = ["0%", "50%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
    right = max(x for _, pts in series for x, _ in pts)
    keep = [(t, n) for t, n in zip(ticks, names) if t <= right * 1.01]
    ax.set_xticks([t for t, _ in keep], [n for _, n in keep])
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms, from the intended send time)")
    ax.set_title("Latency by percentile (HdrHistogram .hgrm files in hdr/)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, folder, "percentiles")


def draw(name, folder, summary, params):
    if not summary:
        return []
    extra = spectrum(folder, params.get("hdr_spectrum") or [])
    return _draw(name, folder, summary, params) + extra


def _draw(name, folder, summary, params):
    if name == "latency-sweep":
        return latency(folder, summary, params)
    if name == "commands":
        return commands(folder, summary, params)
    if name in ("threads", "placement"):
        return threads(folder, summary, params)
    if name == "backends":
        return backends(folder, summary, params)
    if name == "ycsb":
        return ycsb(folder, summary, params)
    return []

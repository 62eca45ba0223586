"""The machinery every `kvlab experiment` shares: servers (started or given), CPU pinning, runs of
`kvlab load` / `kvlab bench` with their checks, repeats, the progress line, the manifest and the
output folder. Debian python3 only (matplotlib is imported by figures.py alone)."""

import csv
import datetime
import json
import os
import platform
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time

GENERATOR_BOUND = 0.85  # generator CPU above this fraction of its CPUs marks a result
SUSTAIN = 0.97  # the NS rule of seed 000


class ExperimentError(Exception):
    """A failure that ends the experiment with a clear message and no numbers."""


class Interrupted(Exception):
    pass


def _on_signal(signum, _frame):
    raise Interrupted("interrupted by signal %d" % signum)


def install_signal_handlers():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def free_port():
    """A free TCP port on 127.0.0.1 (bound, read, closed: the server binds it next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def human(v):
    """1234567 -> 1.23M, 4567 -> 4.57k."""
    if v is None:
        return "–"
    a = abs(v)
    if a >= 1e6:
        return "%.3gM" % (v / 1e6)
    if a >= 1e3:
        return "%.3gk" % (v / 1e3)
    return "%.3g" % v


def grouped(v):
    return "{:,.0f}".format(v) if v is not None else "–"


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ------------------------------------------------------------------------------------------------
# A tiny RESP client for control only (PING, INFO, CONFIG GET, FLUSHALL); the load is kvlab load's.

class Resp:
    def __init__(self, host, port, timeout=3.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+",):
            return rest.decode()
        if t == b"-":
            return RespError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n).decode(errors="replace")
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ConnectionError("unexpected reply %r" % line[:40])

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self._reply()


class RespError(str):
    pass


def parse_info(text):
    out = {}
    for line in (text or "").splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


# ------------------------------------------------------------------------------------------------
# Machine facts for the manifest.

def read_first(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_facts():
    govs = sorted({read_first(p) for p in
                   ["/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor" % c
                    for c in sorted(os.sched_getaffinity(0))]} - {None})
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":", 1)[1].strip()
    except OSError:
        pass
    return {
        "hostname": socket.gethostname(),
        "kernel": " ".join(platform.uname()[0:3]) + " " + platform.uname()[3],
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpus_online": os.cpu_count(),
        "cpus_allowed": cpu_list(sorted(os.sched_getaffinity(0))),
        "cpu_governor": ", ".join(govs) if govs else "not readable (no cpufreq in this VM/container)",
        "memory": mem,
        "python": sys.version.split()[0],
    }


def loadavg():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return None


def cpu_list(cpus):
    """[0,1,2,5] -> '0-2,5'."""
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


def proc_cpu_seconds(pid):
    """utime + stime of a whole process (all threads), from /proc/PID/stat."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / tick
    except (OSError, IndexError, ValueError):
        return None


# ------------------------------------------------------------------------------------------------
# CPU pinning: the generator and the servers on disjoint CPU sets when the machine has enough.

class Pinning:
    def __init__(self, mode):
        allowed = sorted(os.sched_getaffinity(0))
        n = len(allowed)
        self.mode = mode
        self.server_cpus = None
        self.generator_cpus = None
        if mode == "off":
            self.note = "not pinned (--pin off): generator and servers share CPUs %s" % cpu_list(allowed)
        elif mode == "auto" and n < 4:
            self.note = ("not pinned: this machine allows %d CPU%s (%s), and disjoint generator and "
                         "server sets of at least 2 CPUs each need 4; generator and server compete "
                         "for the same CPUs (--pin on forces a %d+%d split)" %
                         (n, "" if n == 1 else "s", cpu_list(allowed), (n + 1) // 2, n // 2))
        elif n < 2:
            self.note = "not pinned: only 1 CPU allowed"
        else:
            half = (n + 1) // 2
            self.server_cpus = allowed[:half]
            self.generator_cpus = allowed[half:]
            self.note = "pinned: servers on CPUs %s, load generator on CPUs %s" % (
                cpu_list(self.server_cpus), cpu_list(self.generator_cpus))
        self.pinned = self.server_cpus is not None

    def generator_threads_default(self):
        return max(1, len(self.generator_cpus)) if self.pinned else 1

    def server_threads_default(self):
        return len(self.server_cpus) if self.pinned else len(os.sched_getaffinity(0))

    def manifest(self):
        return {"mode": self.mode, "pinned": self.pinned, "note": self.note,
                "server_cpus": cpu_list(self.server_cpus) if self.pinned else None,
                "generator_cpus": cpu_list(self.generator_cpus) if self.pinned else None}


def _child_setup(cpus, die_with_parent=True):
    """preexec_fn for servers and generators: pin to cpus, and (Linux) receive SIGTERM if this
    driver dies without stopping them (SIGKILL, crash) — the normal path stops them by pid."""
    def pre():
        if cpus:
            os.sched_setaffinity(0, cpus)
        if die_with_parent:
            try:
                import ctypes
                ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
            except (OSError, AttributeError):
                pass
    return pre


# ------------------------------------------------------------------------------------------------
# Servers.

class Server:
    """One product under test: a process we start (and stop, by pid) or a target given as
    host:port. `name` labels it in every table and figure."""

    def __init__(self, name, kind, template=None, host="127.0.0.1", port=None, params=None,
                 threads_args=None):
        self.threads_args = threads_args or []  # appended when a thread count is asked for
        self.extra = []
        self.threads = None
        self.name = name
        self.kind = kind  # kvlab | command | target
        self.template = template  # argv list with {port}/{threads} for started servers
        self.host = host
        self.port = port
        self.params = params or {}
        self.proc = None
        self.log_path = None
        self.argv = None
        self.info = {}
        self.config = None
        self.started_at = None

    @property
    def started(self):
        return self.kind != "target"

    def describe(self):
        return {"name": self.name, "kind": self.kind,
                "command_line": shlex.join(self.argv) if self.argv else None,
                "host": self.host, "port": self.port,
                "pid": self.proc.pid if self.proc else None,
                "params": self.params, "threads": self.threads, "log": self.log_path,
                "version": self.version(), "info_server": self.info,
                "config": self.config}

    def version(self):
        i = self.info
        if "kvlab_version" in i:
            return "kvlab-server %s (%s)" % (i["kvlab_version"], i.get("kvlab_git_sha1", "?"))
        for k in ("valkey_version", "dragonfly_version", "keydb_version", "redis_version"):
            if k in i:
                return "%s %s" % (k.split("_")[0], i[k])
        return None


class Session:
    """One experiment run: the output folder, the manifest, the servers, the runs, cleanup."""

    def __init__(self, name, args, pinning):
        self.name = name
        self.args = args
        self.pin = pinning
        self.start = utc_now()
        stamp = self.start.strftime("%Y%m%dT%H%M%SZ")
        self.dir = os.path.join(args.results_root, name, stamp)
        n = 1
        while os.path.exists(self.dir):
            n += 1
            self.dir = os.path.join(args.results_root, name, "%s-%d" % (stamp, n))
        self.raw = os.path.join(self.dir, "raw")
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.raw)
        os.makedirs(self.logs)
        self.running = []  # servers whose process is alive
        self.all_servers = []
        self.server_starts = []  # every server process started, in order
        self.commands = []  # every generator / bench command line, with its raw file
        self.generator_bound = []
        self.warnings = []
        self.load_before = loadavg()
        self.progress = None
        self.kvlab_version = None
        self.topology = None
        self.run_count = 0

    # -- servers ---------------------------------------------------------------------------------
    def start_server(self, srv, threads=None):
        """Starts a server on a free loopback port and waits until it answers PING."""
        if not srv.started:
            self.check_target(srv)
            return srv
        port = free_port()
        if threads is None and any("{threads}" in a for a in srv.template):
            threads = self.pin.server_threads_default()
        subst = {"port": str(port), "threads": str(threads)}
        template = list(srv.template)
        if threads is not None and not any("{threads}" in a for a in template):
            template += srv.threads_args
        template += getattr(srv, "extra", [])
        argv = [a.replace("{port}", subst["port"]).replace("{threads}", subst["threads"])
                for a in template]
        srv.threads = threads
        srv.argv = argv
        srv.port = port
        srv.host = "127.0.0.1"
        srv.log_path = os.path.join(self.logs, "%s-%d.log" % (safe(srv.name), port))
        log = open(srv.log_path, "wb")
        try:
            srv.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=_child_setup(self.pin.server_cpus))
        except OSError as e:
            raise ExperimentError("cannot start server '%s' (%s): %s" % (srv.name, shlex.join(argv), e))
        finally:
            log.close()
        self.running.append(srv)
        if srv not in self.all_servers:
            self.all_servers.append(srv)
        srv.started_at = time.monotonic()
        self._wait_ready(srv)
        self._read_identity(srv)
        self.server_starts.append({"name": srv.name, "command_line": shlex.join(argv),
                                   "pid": srv.proc.pid, "port": port, "threads": threads,
                                   "cpus": cpu_list(self.pin.server_cpus) if self.pin.pinned else "any",
                                   "version": srv.version(), "log": os.path.relpath(srv.log_path, self.dir)})
        return srv

    def _wait_ready(self, srv, timeout=15.0):
        deadline = time.monotonic() + timeout
        last = "no connection"
        while time.monotonic() < deadline:
            if srv.proc.poll() is not None:
                raise ExperimentError("server '%s' exited with status %s before answering; its log "
                                      "(%s) ends with:\n%s" % (srv.name, srv.proc.returncode,
                                                              srv.log_path, tail(srv.log_path)))
            try:
                c = Resp(srv.host, srv.port, timeout=2.0)
            except OSError as e:
                last = str(e)
                time.sleep(0.05)
                continue
            try:
                r = c.call("PING")
                if r == "PONG":
                    return
                last = "PING answered %r" % (r,)
            except socket.timeout:
                raise ExperimentError("server '%s' accepted a connection on port %d but did not "
                                      "answer PING within 2 s: it is not serving" % (srv.name, srv.port))
            except OSError as e:
                last = str(e)
            finally:
                c.close()
            time.sleep(0.05)
        raise ExperimentError("server '%s' did not answer PING within %.0f s on %s:%d (%s)" %
                              (srv.name, timeout, srv.host, srv.port, last))

    def check_target(self, srv):
        if srv not in self.all_servers:
            self.all_servers.append(srv)
        try:
            c = Resp(srv.host, srv.port, timeout=3.0)
            r = c.call("PING")
            c.close()
        except socket.timeout:
            raise ExperimentError("target '%s' (%s:%d) accepted a connection but did not answer "
                                  "PING within 3 s" % (srv.name, srv.host, srv.port))
        except OSError as e:
            raise ExperimentError("target '%s' (%s:%d): %s" % (srv.name, srv.host, srv.port, e))
        if r != "PONG":
            raise ExperimentError("target '%s' answered PING with %r" % (srv.name, r))
        self._read_identity(srv)

    def _read_identity(self, srv):
        try:
            c = Resp(srv.host, srv.port, timeout=3.0)
            srv.info = parse_info(c.call("INFO", "server"))
            cfg = c.call("CONFIG", "GET", "*")
            if isinstance(cfg, list):
                srv.config = {cfg[i]: cfg[i + 1] for i in range(0, len(cfg) - 1, 2)}
            else:
                srv.config = {"error": str(cfg)}
            c.close()
        except OSError as e:
            raise ExperimentError("server '%s' stopped answering during INFO/CONFIG GET: %s" %
                                  (srv.name, e))

    def control(self, srv, *cmd, timeout=30.0):
        try:
            c = Resp(srv.host, srv.port, timeout=timeout)
            r = c.call(*cmd)
            c.close()
        except OSError as e:
            raise ExperimentError("server '%s' did not answer %s: %s" % (srv.name, cmd[0], e))
        if isinstance(r, RespError):
            raise ExperimentError("server '%s' answered %s with an error: %s" % (srv.name, cmd[0], r))
        return r

    def check_alive(self, srv):
        if srv.proc is not None and srv.proc.poll() is not None:
            raise ExperimentError("server '%s' (pid %d) exited with status %s during the run; its "
                                  "log (%s) ends with:\n%s" % (srv.name, srv.proc.pid,
                                                              srv.proc.returncode, srv.log_path,
                                                              tail(srv.log_path)))

    def stop_server(self, srv):
        p = srv.proc
        if p is None:
            return
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=5)
        if srv in self.running:
            self.running.remove(srv)

    def stop_all(self):
        for srv in list(self.running):
            try:
                self.stop_server(srv)
            except Exception as e:  # keep stopping the others
                print("kvlab experiment: could not stop %s (pid %s): %s" %
                      (srv.name, srv.proc.pid if srv.proc else "?", e), file=sys.stderr)

    def server_cpu(self, srv):
        if srv.proc is not None:
            return proc_cpu_seconds(srv.proc.pid)
        try:
            c = Resp(srv.host, srv.port, timeout=3.0)
            i = parse_info(c.call("INFO", "cpu"))
            c.close()
            return float(i["used_cpu_sys"]) + float(i["used_cpu_user"])
        except (OSError, KeyError, ValueError):
            return None

    # -- generator runs --------------------------------------------------------------------------
    def run_tool(self, argv, raw_name, expect_s, gen_threads, label):
        """Runs kvlab load/bench (argv without the binary), pinned to the generator CPUs, with a
        timeout; returns (parsed JSON, generator CPU seconds, wall seconds)."""
        raw = os.path.join(self.raw, raw_name)
        full = [self.args.kvlab_bin] + argv + ["--out", raw]
        self.commands.append({"label": label, "command_line": shlex.join(full),
                              "raw": os.path.relpath(raw, self.dir)})
        t0 = time.monotonic()
        err_path = raw + ".stderr"
        with open(err_path, "wb") as err:
            try:
                p = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=err,
                                     stdin=subprocess.DEVNULL,
                                     start_new_session=True,
                                     preexec_fn=_child_setup(self.pin.generator_cpus))
            except OSError as e:
                raise ExperimentError("cannot run %s: %s" % (full[0], e))
            deadline = t0 + expect_s * 3 + 60
            status, ru = 0, None
            try:
                while True:
                    pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                    if pid:
                        p.returncode = os.waitstatus_to_exitcode(status)
                        break
                    if time.monotonic() > deadline:
                        os.kill(p.pid, signal.SIGKILL)
                        _, status, ru = os.wait4(p.pid, 0)
                        p.returncode = -9
                        raise ExperimentError("%s: the load generator did not finish within %.0f s "
                                              "(killed); is the server answering?" %
                                              (label, deadline - t0))
                    time.sleep(0.02)
            except BaseException:
                if p.returncode is None:
                    os.kill(p.pid, signal.SIGKILL)
                    os.wait4(p.pid, 0)
                raise
        wall = time.monotonic() - t0
        # kvlab load exits 1 (error replies) or 3 (the server closed connections) after writing
        # its JSON; load() then names the server and the step from it.
        judged_later = argv[0] == "load" and p.returncode in (1, 3) and os.path.exists(raw)
        if p.returncode != 0 and not judged_later:
            raise ExperimentError("%s: `%s` failed (exit %s):\n%s" %
                                  (label, shlex.join(full), p.returncode, tail(err_path)))
        try:
            with open(raw) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise ExperimentError("%s: no JSON from the generator (%s)" % (label, e))
        gen_cpu = ru.ru_utime + ru.ru_stime
        return data, gen_cpu, wall

    def load(self, srv, label, load_args, expect_s, gen_threads, check_errors=True, judge=True):
        """One `kvlab load` run (one step) against srv with the server's CPU time around it.
        Fails the experiment when the server stopped answering (timeouts, disconnects, error
        replies) or did not move at all."""
        self.run_count += 1
        raw_name = "%04d-%s-%s.json" % (self.run_count, safe(srv.name), safe(label))
        cpu0 = self.server_cpu(srv)
        argv = ["load", "--host", srv.host, "--port", str(srv.port), "-q", "--format", "json"] + load_args
        # Every step's corrected histogram beside results.csv, in HdrHistogram's formats: the
        # .hgrm percentile table (one step per run here) and the per-second interval log.
        hdr_dir = os.path.join(self.dir, "hdr")
        os.makedirs(hdr_dir, exist_ok=True)
        stem = os.path.join(hdr_dir, raw_name[:-len(".json")])
        argv += ["--hdr-out", stem + ".hgrm", "--hdr-log", stem + ".hlog"]
        if getattr(self.args, "counters", False) and srv.proc is not None:
            argv += ["--server-counters", str(srv.proc.pid)]
        data, gen_cpu, wall = self.run_tool(argv, raw_name, expect_s, gen_threads,
                                            "%s %s" % (srv.name, label))
        cpu1 = self.server_cpu(srv)
        self.check_alive(srv)
        if self.topology is None:
            self.topology = data.get("manifest", {}).get("topology")
        steps = data.get("steps", [])
        if not steps:
            raise ExperimentError("%s %s: the generator reported no step" % (srv.name, label))
        for s in steps:
            errs = s.get("errors_by_kind", {})
            if check_errors and s.get("errors", 0) > 0:
                raise ExperimentError(
                    "server '%s' failed during %s: %d of %d requests failed (%d timeouts, %d "
                    "disconnects, %d error replies). A server that stops answering or refuses the "
                    "workload gives no numbers; see %s and the server log %s" %
                    (srv.name, label, s["errors"], s.get("requests", 0) + s["errors"],
                     errs.get("timeouts", 0), errs.get("disconnects", 0),
                     errs.get("error_replies", 0), os.path.join(self.raw, raw_name),
                     srv.log_path or "(not started here)"))
            if s.get("achieved_rate", 0) <= 0 and s.get("target_rate") is None:
                raise ExperimentError("server '%s' served nothing during %s" % (srv.name, label))
        util = gen_cpu / (wall * max(1, gen_threads)) if wall > 0 else None
        bound = judge and util is not None and util > GENERATOR_BOUND
        if bound:
            self.generator_bound.append("%s %s (generator CPU %.0f%%)" % (srv.name, label, util * 100))
        hgrm = stem + ".hgrm"
        return {"steps": steps, "gen_cpu_s": gen_cpu, "wall_s": wall, "gen_util": util,
                "hgrm": os.path.relpath(hgrm, self.dir) if os.path.exists(hgrm) else None,
                "hlog": os.path.relpath(stem + ".hlog", self.dir),
                "generator_bound": bound,
                "server_cpu_s": (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None,
                "raw": os.path.relpath(os.path.join(self.raw, raw_name), self.dir)}

    def prefill(self, srv, keys, data_size, key_prefix="memtier-", label="prefill"):
        args = ["--prefill", "--keys", str(keys), "--data-size", str(data_size), "--key-prefix",
                key_prefix, "--requests", "1", "--connections", "1", "--threads", "1"]
        return self.load(srv, label, args, expect_s=max(5, keys / 50000.0), gen_threads=1,
                         judge=False)

    # -- output ----------------------------------------------------------------------------------
    def manifest(self, status, error=None, parameters=None, extra=None):
        m = {
            "experiment": self.name,
            "status": status,
            "error": error,
            "command_line": shlex.join(["kvlab", "experiment"] + self.args.argv),
            "kvlab": self.kvlab_identity(),
            "start_time": iso(self.start),
            "end_time": iso(utc_now()),
            "machine": machine_facts(),
            "load_average": {"before": self.load_before, "after": loadavg()},
            "topology": self.topology or self.topology_summary(),
            "pinning": self.pin.manifest(),
            "servers": [s.describe() for s in self.all_servers],
            "server_starts": self.server_starts,
            "generator_commands": self.commands,
            "generator_bound": self.generator_bound,
            "warnings": self.warnings,
            "parameters": parameters or {},
            "quick": bool(getattr(self.args, "quick", False)),
            "files": {"results": "results.csv", "summary": "summary.csv", "report": "report.md",
                      "raw": "raw/", "logs": "logs/"},
        }
        if extra:
            m.update(extra)
        return m

    def kvlab_identity(self):
        if self.kvlab_version is None:
            try:
                v = subprocess.run([self.args.kvlab_bin, "--version"], capture_output=True,
                                   text=True, timeout=10).stdout.strip()
            except (OSError, subprocess.TimeoutExpired):
                v = None
            commit = None
            src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            if os.path.isdir(os.path.join(src, ".git")) or os.path.isfile(os.path.join(src, ".git")):
                try:
                    commit = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True,
                                            text=True, timeout=10).stdout.strip() or None
                    dirty = subprocess.run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no"],
                                           capture_output=True, text=True, timeout=10).stdout.strip()
                    if commit and dirty:
                        commit += " (with uncommitted changes)"
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if commit is None and v and "(" in v:  # installed: the commit kvlab was built from
                commit = v.rsplit("(", 1)[1].rstrip(")") + " (from kvlab --version)"
            self.kvlab_version = {"version": v, "commit": commit,
                                  "kvlab_bin": self.args.kvlab_bin, "server_bin": self.args.server_bin}
        return self.kvlab_version

    def topology_summary(self):
        try:
            out = subprocess.run([self.args.kvlab_bin, "topo", "report", "--format", "json"],
                                 capture_output=True, text=True, timeout=20).stdout
            return json.loads(out).get("summary")
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return None

    def write_json(self, name, obj):
        with open(os.path.join(self.dir, name), "w") as f:
            json.dump(obj, f, indent=2, sort_keys=False)
            f.write("\n")

    def write_csv(self, name, columns, rows):
        with open(os.path.join(self.dir, name), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow({k: fmt_cell(r.get(k)) for k in columns})


def fmt_cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "%.10g" % v if abs(v) < 1e9 else "%.1f" % v
    return v


def safe(s):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(s))


def tail(path, n=15):
    try:
        with open(path, "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
        return "\n".join("    " + l for l in lines[-n:]) or "    (empty)"
    except OSError:
        return "    (no log)"


# ------------------------------------------------------------------------------------------------
# Progress: step i/n with an ETA from the planned seconds, corrected by how long runs really took.

class Progress:
    def __init__(self, total_runs, planned_s):
        self.total = total_runs
        self.planned = planned_s
        self.done = 0
        self.done_planned = 0.0
        self.t0 = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last_len = 0

    def show(self, label):
        elapsed = time.monotonic() - self.t0
        remaining = max(0.0, self.planned - self.done_planned)
        if self.done_planned > 0:
            remaining *= elapsed / self.done_planned
        line = "[%d/%d] %s  elapsed %s  ETA %s" % (self.done + 1, self.total, label,
                                                   mmss(elapsed), mmss(remaining))
        if self.tty:
            sys.stderr.write("\r" + line[:160].ljust(self.last_len) + "\x1b[K")
            self.last_len = min(len(line), 160)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def advance(self, planned_s):
        self.done += 1
        self.done_planned += planned_s

    def finish(self):
        if self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()


def mmss(s):
    s = int(round(s))
    return "%d:%02d" % (s // 60, s % 60) if s < 3600 else "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60)

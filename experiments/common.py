#!/usr/bin/env python3
"""What the experiment scripts share: a free loopback port, a server process started on 127.0.0.1
and stopped by its pid, readers of a process's CPU time, and a wait until that time stops moving.

Standard library only, so that every script can import it: a .py script puts experiments/ on
sys.path, the Python inside a .sh heredoc does the same from $KVLAB_ROOT or PYTHONPATH, and the
shell scripts reach it through experiments/common.sh, which runs this file as a program:

  common.py free-port                   prints a free port on 127.0.0.1
  common.py cpu-ticks PID               prints utime + stime of PID, in clock ticks
  common.py wait-ping PORT [SECONDS]    exits 0 once PORT answers PING (default 10 s), else 1
"""
import os
import socket
import subprocess
import sys
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of utime and stime in /proc/PID/stat

# redis-server on loopback only, never writing an RDB or AOF: a dump would spend CPU inside a
# measured window, and one left in the working directory would be loaded by the next start.
REDIS_FLAGS = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago: bound to port 0, read and closed, so
    that the server binds it next. It is not reserved: a process that takes it in between makes
    the server's bind fail."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat_fields(pid):
    """The fields of /proc/PID/stat after the command name, so that field n of proc(5) is
    [n - 3]. Split at the last ')': the name itself may hold spaces or parentheses."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_ticks(pid):
    """utime + stime of the whole process (fields 14 and 15), in clock ticks. Includes threads
    that have ended; the resolution is one tick (CLOCK_TICKS per second)."""
    fields = _stat_fields(pid)
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pid):
    """cpu_ticks(pid) in seconds."""
    return cpu_ticks(pid) / CLOCK_TICKS


def minor_faults(pid):
    """The process's minor page faults so far (field 10, minflt)."""
    return int(_stat_fields(pid)[7])


def sched_cpu_seconds(pid):
    """The time every live thread of pid has spent on a CPU, in seconds, from
    /proc/PID/task/*/schedstat (nanoseconds): fine enough for windows of a few milliseconds, where
    cpu_ticks moves by whole ticks. A thread that ends between two readings drops out of the sum,
    so use it on servers whose threads live as long as the process."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total / 1e9


def settle(pid, read=cpu_ticks, interval=0.1, timeout=5.0):
    """Returns once two readings of read(pid) `interval` seconds apart are equal, or after
    `timeout` seconds. kvlab-server frees a flushed keyspace through its reclamation a little
    after FLUSHALL has replied; without the wait that CPU would be charged to the next measured
    window (Redis frees synchronously, before the reply)."""
    last, deadline = read(pid), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(interval)
        now = read(pid)
        if now == last:
            return
        last = now


def answers_ping(port):
    """True when redis-cli gets +PONG from 127.0.0.1:port."""
    r = subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True, text=True)
    return r.stdout.strip() == "PONG"


def accepts(port, timeout=0.2):
    """True when 127.0.0.1:port accepts a TCP connection: the readiness test for servers that
    speak too little RESP for redis-cli."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=timeout).close()
        return True
    except OSError:
        return False


def wait_ready(port, ready=answers_ping, timeout=10.0, interval=0.05, proc=None):
    """Polls ready(port) every `interval` seconds for up to `timeout` seconds; True once it holds.
    Given the server's Popen, gives up as soon as the process has exited (a port taken, a bad
    flag) instead of waiting out the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            return False  # an exited server never becomes ready
        if ready(port):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


class Server:
    """A server process on 127.0.0.1 that this script started, and stops by its pid only (never
    by name: other servers on a shared machine are not ours).

    argv is the whole command line; without `port` a free one is chosen and `--port N` appended.
    The constructor returns once `ready(port)` holds (redis-cli PING by default); otherwise it
    kills the process and exits the script with "NAME did not start". Output goes to /dev/null.
    Persistence is the caller's flags: REDIS_FLAGS for redis-server; kvlab-server keeps none by
    default."""

    def __init__(self, name, argv, port=None, *, ready=answers_ping, timeout=10.0, interval=0.05):
        if port is None:
            port = free_port()
            argv = [*argv, "--port", str(port)]
        self.name, self.port = name, port
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_ready(port, ready, timeout, interval, self.proc):
            self.proc.kill()
            self.proc.wait()
            raise SystemExit(f"{name} did not start")

    @property
    def pid(self):
        return self.proc.pid

    def cli(self, *words):
        """One redis-cli command against the server; its reply, stripped."""
        r = subprocess.run(["redis-cli", "-p", str(self.port), *words], capture_output=True,
                           text=True)
        return r.stdout.strip()

    def settle(self, **kwargs):
        """settle() on this server's pid; the keyword arguments are settle()'s."""
        settle(self.proc.pid, **kwargs)

    def stop(self, timeout=10, kill=False):
        """SIGTERM (SIGKILL with kill=True), then waits up to `timeout` seconds (None: for good)."""
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        self.proc.wait(timeout=timeout)


def _main(argv):
    if argv[:1] == ["free-port"] and len(argv) == 1:
        print(free_port())
    elif argv[:1] == ["cpu-ticks"] and len(argv) == 2:
        print(cpu_ticks(int(argv[1])))
    elif argv[:1] == ["wait-ping"] and len(argv) in (2, 3):
        port = int(argv[1])
        if not wait_ready(port, timeout=float(argv[2]) if len(argv) == 3 else 10.0):
            print(f"no PONG from port {port}", file=sys.stderr)
            return 1
    else:
        print(__doc__.split("\n\n")[-1].rstrip(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

#!/usr/bin/env python3
"""One sequential client: the default configuration must not answer a lone unpipelined client
much slower than one worker does. Two servers of the same build run side by side, one with the
default flags (as many workers as allowed CPUs, `--yield auto`) and one with `--threads 1`; one
connection sends SET and GET alternately, one request at a time, to each in turn for several
short rounds. The check is a ratio of the two rates on the same machine in the same moment, so
the machine's speed and load cancel: the default must reach at least a third of `--threads 1`'s
requests/s (the median over the rounds; a median below that is measured once more and the better
of the two counts, since a shared machine can slow either server for a round, while the failure
this test exists for repeats every round). It is checked twice: on the machine as it is, and while
one CPU-bound process per allowed CPU competes for the CPUs (a build, another test), because a
worker that hands its CPU to another runnable task (a yield) loses a scheduler time slice per
request only when such a task exists, and then runs at a small fraction of `--threads 1`'s rate.

  sequential_client_test.py KVLAB_SERVER [--rounds N] [--seconds S]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "soak"))
from soakcommon import Checks, Client, Server  # noqa: E402


def rate(port, seconds):
    """Requests/s of one connection sending SET and GET alternately, one at a time."""
    c = Client(port, timeout=10)
    c.cmd("SET", "seq:key", "x" * 32)  # connect and warm up outside the timed part
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        c.cmd("SET", "seq:key", "v%d" % n)
        c.cmd("GET", "seq:key")
        n += 2
        if n % 64 == 0 and time.perf_counter() >= deadline:
            break
        if n >= 2_000_000:  # a bound on the loop whatever the clock does
            break
    elapsed = time.perf_counter() - t0
    c.close()
    return n / elapsed


def spin(seconds):
    """A CPU-bound child process at normal priority, for at most `seconds`."""
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + seconds
        x = 0
        while time.monotonic() < end:
            for _ in range(10000):
                x += 1
        os._exit(0)
    return pid


def measure(default, one, rounds, seconds, label):
    first = measure_once(default, one, rounds, seconds, label)
    if first >= 1 / 3.0:
        return first
    return max(first, measure_once(default, one, rounds, seconds, label + " (again)"))


def measure_once(default, one, rounds, seconds, label):
    ratios = []
    for r in range(rounds):
        order = [default, one] if r % 2 == 0 else [one, default]  # alternate who goes first
        got = {id(s): rate(s.port, seconds) for s in order}
        d, o = got[id(default)], got[id(one)]
        ratios.append(d / o)
        print("%s, round %d: default %.0f req/s, --threads 1 %.0f req/s, ratio %.2f" %
              (label, r + 1, d, o, d / o), flush=True)
    return statistics.median(ratios)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=0.4)
    args = ap.parse_args()
    checks = Checks()
    with Server(args.server) as default, Server(args.server, ["--threads", "1"]) as one:
        med = measure(default, one, args.rounds, args.seconds, "as it is")
        checks.check(med >= 1 / 3.0,
                     "a lone sequential client gets at least 1/3 of --threads 1's rate with "
                     "the default flags (median ratio %.2f)" % med)
        n = len(os.sched_getaffinity(0))
        budget = 2 * 2 * args.rounds * (args.seconds + 0.5) + 5  # two measurements at most
        spinners = [spin(budget) for _ in range(n)]
        try:
            med = measure(default, one, args.rounds, args.seconds, "%d busy processes" % n)
        finally:
            for pid in spinners:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
        checks.check(med >= 1 / 3.0,
                     "... and while %d CPU-bound processes compete for the CPUs (median ratio "
                     "%.2f)" % (n, med))
    checks.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Real Redis clients against kvlab-server: redis-py transactions (pipeline with
transaction=True, WATCH-based optimistic updates), redis-py's Lock (SET NX PX and Lua scripts) and
BLPOP, and python-rq (Debian's python3-rq 1.13: a queue of jobs run by a burst SimpleWorker,
whose results rq stores in streams, XADD MAXLEN ~ 10 and XREVRANGE), under both --atomicity
schemes. Debian's python3-redis on Debian's python3; exit 77 (skip) when it is not installed; the
rq check is skipped alone when python3-rq is not.

Usage: clients_test.py KVLAB_SERVER
"""
import os
import socket
import subprocess
import sys
import threading
import time

try:
    import redis
except ImportError as e:
    print("skipped: %s (apt-get install python3-redis)" % e)
    sys.exit(77)

failures = []
checks = [0]


def check(cond, what):
    checks[0] += 1
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(binary, extra):
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--threads", "2"] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("kvlab-server did not start")


def transactions(r):
    p = r.pipeline(transaction=True)
    p.set("a", 1).incr("a").get("a")
    check(p.execute() == [True, 2, b"2"], "pipeline(transaction=True) runs MULTI/EXEC")

    # Optimistic increments from 4 threads with WATCH and retries: none is lost.
    def worker():
        c = redis.Redis(port=r.connection_pool.connection_kwargs["port"])
        for _ in range(100):
            with c.pipeline() as p:
                while True:
                    try:
                        p.watch("counter")
                        v = int(p.get("counter") or 0)
                        p.multi()
                        p.set("counter", v + 1)
                        p.execute()
                        break
                    except redis.WatchError:
                        continue
    ts = [threading.Thread(target=worker) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    check(r.get("counter") == b"400", "WATCH-based increments from 4 clients end at 400")


def locks(r):
    # A read-modify-write under redis-py's Lock (SET NX PX to take it, Lua scripts to release):
    # the count is exact only if the lock excludes.
    port = r.connection_pool.connection_kwargs["port"]

    def worker():
        c = redis.Redis(port=port)
        for _ in range(50):
            with c.lock("mylock", timeout=10, blocking_timeout=10):
                v = int(c.get("locked") or 0)
                c.set("locked", v + 1)
    ts = [threading.Thread(target=worker) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    check(r.get("locked") == b"200", "redis-py Lock excludes: 4 x 50 increments end at 200")
    lock = r.lock("other", timeout=5)
    check(lock.acquire(blocking=False), "Lock.acquire")
    check(lock.extend(5), "Lock.extend (a Lua script)")
    lock.release()
    check(r.get("other") is None, "Lock.release (a Lua script) deletes the key")


def blocking(r):
    port = r.connection_pool.connection_kwargs["port"]

    def push():
        time.sleep(0.2)
        redis.Redis(port=port).rpush("jobs", "j1")
    t = threading.Thread(target=push)
    t.start()
    check(r.blpop("jobs", timeout=5) == (b"jobs", b"j1"), "BLPOP is woken by a push")
    t.join()
    check(r.blpop("nothing", timeout=0.1) is None, "BLPOP times out with None")


def rq_jobs(r):
    try:
        import rq
        from rq.results import Result
    except ImportError as e:
        print("skipped: python-rq (%s)" % e)
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import rq_tasks
    q = rq.Queue("kvlab", connection=r)
    adds = [q.enqueue(rq_tasks.add, i, 10 * i) for i in range(6)]
    shout = q.enqueue(rq_tasks.shout, "kvlab")
    failing = q.enqueue(rq_tasks.divide, 1, 0)
    check(len(q) == 8, "rq enqueues 8 jobs")
    worker = rq.SimpleWorker([q], connection=r)
    worker.work(burst=True, logging_level="CRITICAL")
    check(len(q) == 0, "a burst SimpleWorker empties the queue")
    ok = True
    for i, job in enumerate(adds):
        job.refresh()
        ok = ok and job.get_status() == "finished" and job.return_value() == 11 * i
    check(ok, "every add job finished with its return value (Job.return_value)")
    latest = shout.latest_result()
    check(latest is not None and latest.type == Result.Type.SUCCESSFUL
          and latest.return_value == {"word": "KVLAB", "length": 5},
          "Job.latest_result() reads the stored result back (XREVRANGE + - COUNT 1)")
    failing.refresh()
    res = failing.latest_result()
    check(failing.get_status() == "failed" and res is not None
          and res.type == Result.Type.FAILED and "ZeroDivisionError" in res.exc_string,
          "a failing job is failed, its result holds the exception")
    check(r.type(Result.get_key(shout.id)) == b"stream", "rq stored the result in a stream")
    # Each run of a job adds a result (XADD MAXLEN ~ 10, which trims whole nodes only).
    for _ in range(3):
        failing.requeue()
        rq.SimpleWorker([q], connection=r).work(burst=True, logging_level="CRITICAL")
    results = failing.results()
    check(len(results) == 4 and all(x.type == Result.Type.FAILED for x in results)
          and results[0].created_at >= results[-1].created_at,
          "a requeued job has one result per run, the latest first")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for scheme in ("key-locks", "global", "stripes"):
        print("== --atomicity %s" % scheme)
        proc, port = start_server(sys.argv[1], ["--atomicity", scheme])
        try:
            r = redis.Redis(port=port)
            r.flushall()
            transactions(r)
            locks(r)
            blocking(r)
            try:
                rq_jobs(r)
            except redis.RedisError as e:  # a command kvlab lacks fails the check, not the run
                check(False, "python-rq: %s" % e)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    print("%d passed, %d failed" % (checks[0] - len(failures), len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

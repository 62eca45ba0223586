# Security cases, area "patterns": glob patterns a client chooses (KEYS, SCAN/SSCAN/HSCAN/ZSCAN
# MATCH, PSUBSCRIBE, PUBSUB CHANNELS) must cost at most pattern x string work and never freeze
# the server (server/util/strings_util.cpp, glob_match). Each case times the command on its own
# connection and checks that another client is answered meanwhile; the runner checks PING after.
import threading
import time

from seccommon import Error, advisory, expect

# A pattern that backtracked exponentially before Redis 7.0.10: 20 stars over 40 a's.
NESTED = "a*" * 20 + "b"
KEY40 = "a" * 40
BUDGET = 2.0  # seconds; the linear matcher answers these in milliseconds


def fresh(ctx):
    ctx.kv.cmd("FLUSHALL")
    if ctx.redis:
        ctx.redis.cmd("FLUSHALL")


def timed(client, *args):
    t0 = time.time()
    reply = client.cmd(*args)
    return reply, time.time() - t0


def answered_meanwhile(ctx, *args):
    """Runs args on a fresh connection while another connection PINGs; returns (reply, seconds,
    the longest PING round trip seen meanwhile)."""
    worker = ctx.connect()
    result = {}

    def run():
        result["reply"], result["took"] = timed(worker, *args)

    th = threading.Thread(target=run)
    th.start()
    worst = 0.0
    deadline = time.time() + 30
    while th.is_alive() and time.time() < deadline:
        _, dt = timed(ctx.kv, "PING")
        worst = max(worst, dt)
        time.sleep(0.005)
    th.join(30)
    worker.close()
    expect("reply" in result, "%s did not answer within 30 s" % args[0])
    return result["reply"], result["took"], worst


@advisory("CVE-2022-36021", "Redis 7.0.10", "server/util/strings_util.cpp glob_match (KEYS)")
def case_keys_nested_stars(ctx):
    fresh(ctx)
    ctx.kv.cmd("SET", KEY40, "1")
    reply, took, ping = answered_meanwhile(ctx, "KEYS", NESTED)
    expect(reply == [], "KEYS %s answered %r" % (NESTED, reply))
    expect(took < BUDGET, "KEYS with 20 nested stars took %.2f s" % took)
    expect(ping < BUDGET, "a PING waited %.2f s behind KEYS" % ping)
    # Valkey 8.0.1's keyspace test "Regression for pattern matching long nested loops".
    ctx.kv.cmd("SET", "a" * 50, "1")
    long_pattern = "a*" * 50 + "b"
    reply, took = timed(ctx.kv, "KEYS", long_pattern)
    expect(reply == [] and took < BUDGET, "KEYS over 50 a's: %r in %.2f s" % (reply, took))
    if ctx.redis:
        ctx.redis.cmd("SET", "a" * 50, "1")
        expect(ctx.redis.cmd("KEYS", long_pattern) == reply, "redis-server answers otherwise")


@advisory("CVE-2022-36021", "Redis 7.0.10",
          "server/commands/keys.cpp, sets.cpp, hashes.cpp, zsets.cpp (SCAN MATCH)")
def case_scan_match_nested_stars(ctx):
    fresh(ctx)
    ctx.kv.cmd("SET", KEY40, "1")
    ctx.kv.cmd("SADD", "s", KEY40, "b")
    ctx.kv.cmd("HSET", "h", KEY40, "v")
    ctx.kv.cmd("ZADD", "z", "1", KEY40)
    for args in (("SCAN", "0", "MATCH", NESTED, "COUNT", "1000"),
                 ("SSCAN", "s", "0", "MATCH", NESTED, "COUNT", "1000"),
                 ("HSCAN", "h", "0", "MATCH", NESTED, "COUNT", "1000"),
                 ("ZSCAN", "z", "0", "MATCH", NESTED, "COUNT", "1000")):
        reply, took = timed(ctx.kv, *args)
        expect(not isinstance(reply, Error) and reply[1] == [],
               "%s answered %r" % (args[0], reply))
        expect(took < BUDGET, "%s MATCH with 20 nested stars took %.2f s" % (args[0], took))


@advisory("CVE-2022-36021", "Redis 7.0.10", "server/features/pubsub.cpp visit_receivers (PSUBSCRIBE)")
def case_psubscribe_nested_stars(ctx):
    # Every PUBLISH matches its channel against every pattern subscription.
    sub = ctx.connect()
    sub.cmd("PSUBSCRIBE", NESTED)
    reply, took = timed(ctx.kv, "PUBLISH", KEY40, "m")
    expect(reply == 0, "PUBLISH answered %r" % (reply,))
    expect(took < BUDGET, "PUBLISH against a 20-star pattern took %.2f s" % took)
    reply, took = timed(ctx.kv, "PUBSUB", "CHANNELS", NESTED)
    expect(reply == [] and took < BUDGET, "PUBSUB CHANNELS: %r in %.2f s" % (reply, took))
    sub.close()


@advisory("CVE-2024-31228", "Redis 7.2.6, 7.0.15 (Debian's patch); Valkey 7.2.7, 8.0.1",
          "server/util/strings_util.cpp glob_match (nesting limit)")
def case_very_long_nested_pattern(ctx):
    # Redis's "Regression for pattern matching very long nested loops": Redis limits recursion
    # to 1000 nested runs of '*', after which the pattern matches nothing; kvlab's matcher does
    # not recurse but keeps the same answer.
    fresh(ctx)
    for server in (ctx.kv, ctx.redis):
        if server:
            server.cmd("SET", "a" * 1100, "1")
    for runs, want in ((1000, 1), (1001, 0)):
        got = ctx.kv.cmd("KEYS", "*a" * runs)
        expect(len(got) == want, "KEYS (*a) x %d found %d keys, not %d" % (runs, len(got), want))
        if ctx.redis:
            theirs = ctx.redis.cmd("KEYS", "*a" * runs)
            expect(theirs == got, "redis-server found %d keys" % len(theirs))
    fresh(ctx)
    for server in (ctx.kv, ctx.redis):
        if server:
            server.cmd("SET", "a" * 50000, "1")
    reply, took = timed(ctx.kv, "KEYS", "*?" * 50000)
    expect(reply == [], "KEYS *? x 50000 answered %d keys" % len(reply))
    expect(took < BUDGET, "KEYS *? x 50000 took %.2f s" % took)
    if ctx.redis:
        expect(ctx.redis.cmd("KEYS", "*?" * 50000) == [], "redis-server found the key")

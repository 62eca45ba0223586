# Blocked clients must always be answered: a wake-up that cannot complete the move answers the
# blocked client with the error Redis gives, and leaves the element where it was.
from seccommon import advisory, expect, Error


def _wait_blocked(conn, n):
    for _ in range(200):
        if conn.cmd("INFO", "clients").find(b"blocked_clients:%d" % n) >= 0:
            return


def _blocked_move_to_wrong_type(ctx, which, block_cmd):
    setup = ctx.connect(which)
    setup.cmd("DEL", "blist", "target")
    setup.cmd("SET", "target", "nolist")
    blocked = ctx.connect(which)
    blocked.send(block_cmd)
    _wait_blocked(setup, 1)  # the push must find the client blocked
    setup.cmd("RPUSH", "blist", "foo")
    reply = blocked.read(1)[0]  # a hang here is the bug (the socket times out)
    left = setup.cmd("LRANGE", "blist", "0", "-1")
    target = setup.cmd("GET", "target")
    blocked.close()
    setup.close()
    return reply, left, target


@advisory("finding: BRPOPLPUSH wrong destination type", "-",
          "server/commands/blocking.cpp (serving a blocked move)")
def case_brpoplpush_to_wrong_type_answers_wrongtype(ctx):
    cmd = ("BRPOPLPUSH", "blist", "target", "0")
    got = _blocked_move_to_wrong_type(ctx, "kv", cmd)
    expect(isinstance(got[0], Error) and got[0].startswith("WRONGTYPE"),
           "blocked client answered %r, not WRONGTYPE" % (got[0],))
    expect(got[1] == [b"foo"], "the element left the source list: %r" % (got[1],))
    expect(got[2] == b"nolist", "the destination changed: %r" % (got[2],))
    if ctx.redis_proc:
        want = _blocked_move_to_wrong_type(ctx, "redis", cmd)
        expect(got == want, "kvlab %r, redis %r" % (got, want))


@advisory("finding: BLMOVE wrong destination type", "-",
          "server/commands/blocking.cpp (serving a blocked move)")
def case_blmove_to_wrong_type_answers_wrongtype(ctx):
    cmd = ("BLMOVE", "blist", "target", "LEFT", "RIGHT", "0")
    got = _blocked_move_to_wrong_type(ctx, "kv", cmd)
    expect(isinstance(got[0], Error) and got[0].startswith("WRONGTYPE"),
           "blocked client answered %r, not WRONGTYPE" % (got[0],))
    expect(got[1] == [b"foo"], "the element left the source list: %r" % (got[1],))
    if ctx.redis_proc:
        want = _blocked_move_to_wrong_type(ctx, "redis", cmd)
        expect(got == want, "kvlab %r, redis %r" % (got, want))


def _wrong_type_waiter_then_pop_waiter(ctx, which):
    setup = ctx.connect(which)
    setup.cmd("DEL", "blist", "target")
    setup.cmd("SET", "target", "nolist")
    mover, popper = ctx.connect(which), ctx.connect(which)
    mover.send(("BRPOPLPUSH", "blist", "target", "0"))
    _wait_blocked(setup, 1)
    popper.send(("BLPOP", "blist", "0"))
    _wait_blocked(setup, 2)
    setup.cmd("RPUSH", "blist", "foo")
    got = (mover.read(1)[0], popper.read(1)[0], setup.cmd("EXISTS", "blist"))
    for c in (mover, popper, setup):
        c.close()
    return got



@advisory("finding: BRPOPLPUSH wrong destination type", "-",
          "server/commands/blocking.cpp (serving a blocked move)")
def case_waiter_after_a_wrong_type_move_gets_the_element(ctx):
    got = _wrong_type_waiter_then_pop_waiter(ctx, "kv")
    expect(isinstance(got[0], Error) and got[0].startswith("WRONGTYPE"),
           "the move waiter got %r" % (got[0],))
    expect(got[1] == [b"blist", b"foo"], "the BLPOP waiter got %r" % (got[1],))
    expect(got[2] == 0, "the element stayed in the list")
    if ctx.redis_proc:
        want = _wrong_type_waiter_then_pop_waiter(ctx, "redis")
        expect(got == want, "kvlab %r, redis %r" % (got, want))

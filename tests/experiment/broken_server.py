#!/usr/bin/python3
"""A planted broken RESP server for the `kvlab experiment` tests.

It listens on 127.0.0.1:PORT, answers like a server for its first N commands (PING, INFO,
CONFIG GET, FLUSHALL, SET, GET, ... all get a plausible reply), and then keeps accepting
connections and reading requests but never answers again: a server that stops answering.
    broken_server.py PORT [N]      (N = 0: it never answers at all)
"""
import selectors
import socket
import sys

port = int(sys.argv[1])
answer_first = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
answered = 0
sel = selectors.DefaultSelector()
lsock = socket.socket()
lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lsock.bind(("127.0.0.1", port))
lsock.listen(1024)
lsock.setblocking(False)
sel.register(lsock, selectors.EVENT_READ)
buffers = {}


def parse(buf):
    """Yields complete commands (lists of bytes) and returns the unparsed rest."""
    cmds = []
    while buf:
        if buf[:1] != b"*":
            end = buf.find(b"\r\n")
            if end < 0:
                break
            cmds.append(buf[:end].split())
            buf = buf[end + 2:]
            continue
        end = buf.find(b"\r\n")
        if end < 0:
            break
        n = int(buf[1:end])
        pos, args = end + 2, []
        for _ in range(n):
            e = buf.find(b"\r\n", pos)
            if e < 0:
                return cmds, buf
            ln = int(buf[pos + 1:e])
            if len(buf) < e + 2 + ln + 2:
                return cmds, buf
            args.append(buf[e + 2:e + 2 + ln])
            pos = e + 2 + ln + 2
        cmds.append(args)
        buf = buf[pos:]
    return cmds, buf


def reply(cmd):
    name = cmd[0].upper() if cmd else b""
    if name == b"PING":
        return b"+PONG\r\n"
    if name == b"INFO":
        body = b"# Server\r\nredis_version:0.0.0-broken\r\ntcp_port:%d\r\n" % port
        return b"$%d\r\n%s\r\n" % (len(body), body)
    if name == b"CONFIG":
        return b"*0\r\n"
    if name in (b"GET",):
        return b"$-1\r\n"
    if name in (b"INCR", b"LPUSH", b"RPUSH", b"SADD", b"HSET", b"SETNX", b"APPEND", b"DBSIZE"):
        return b":1\r\n"
    if name == b"MGET":
        return b"*%d\r\n" % (len(cmd) - 1) + b"$-1\r\n" * (len(cmd) - 1)
    return b"+OK\r\n"


while True:
    for key, _ in sel.select(timeout=1):
        if key.fileobj is lsock:
            try:
                c, _ = lsock.accept()
            except BlockingIOError:
                continue
            c.setblocking(False)
            sel.register(c, selectors.EVENT_READ)
            buffers[c] = b""
            continue
        c = key.fileobj
        try:
            data = c.recv(65536)
        except (BlockingIOError, ConnectionError):
            data = b""
        if not data:
            sel.unregister(c)
            buffers.pop(c, None)
            c.close()
            continue
        if answered >= answer_first:
            continue  # read and drop: the server has stopped answering
        cmds, buffers[c] = parse(buffers[c] + data)
        cmds = cmds[:max(0, answer_first - answered)]
        answered += len(cmds)
        out = b"".join(reply(cmd) for cmd in cmds)
        try:
            c.sendall(out)
        except (BlockingIOError, ConnectionError):
            pass

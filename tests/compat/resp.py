"""A small RESP2/RESP3 client over a blocking socket (stdlib only).

Replies are parsed into typed, hashable values so that two servers' replies compare exactly:
  ('simple', b'OK')        +OK
  ('error', b'ERR ...')    -ERR ...  (and RESP3's blob error !N)
  ('int', 5)               :5
  ('bulk', b'...')         $3 / ('bulk', None) for $-1
  ('array', (...))         *N / ('array', None) for *-1
RESP3 (Client(port, proto=3) sends HELLO 3 first):
  ('null', None)           _
  ('double', b'1.5')       ,1.5  (the text as sent: Redis's "%.17g", inf, -inf, nan)
  ('bool', True)           #t / #f
  ('bignum', 123)          (123
  ('verbatim', (b'txt', b'...'))  =N txt:...
  ('map', ((k, v), ...))   %N, key/value pairs in the order sent
  ('set', (...))           ~N, elements in the order sent
  ('push', (...))          >N
  ('attr', (map, reply))   |N: the attribute map and the reply it annotates
A closed connection or a timeout raises ConnectionError / socket.timeout.
"""
import socket

CRLF = b"\r\n"


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Client:
    def __init__(self, port, timeout=5.0, host="127.0.0.1", proto=2):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        if proto != 2:
            r = self.call("HELLO", str(proto))
            if r[0] != "map":
                raise ConnectionError("HELLO %d refused: %r" % (proto, r))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def call(self, *args):
        self.sock.sendall(encode(args))
        return self.read()

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(CRLF)
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[: i + 2]
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[: n + 2]
        return data

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return ("simple", rest)
        if t == b"-":
            return ("error", rest)
        if t == b":":
            return ("int", int(rest))
        if t == b"$":
            n = int(rest)
            return ("bulk", None if n < 0 else self._exact(n))
        if t == b"*":
            n = int(rest)
            if n < 0:
                return ("array", None)
            return ("array", tuple(self.read() for _ in range(n)))
        if t == b"_":
            return ("null", None)
        if t == b",":
            return ("double", rest)
        if t == b"#":
            if rest not in (b"t", b"f"):
                raise ConnectionError("bad boolean %r" % line[:80])
            return ("bool", rest == b"t")
        if t == b"(":
            return ("bignum", int(rest))
        if t == b"!":
            return ("error", self._exact(int(rest)))
        if t == b"=":
            data = self._exact(int(rest))
            if data[3:4] != b":":
                raise ConnectionError("bad verbatim string %r" % data[:80])
            return ("verbatim", (data[:3], data[4:]))
        if t in (b"%", b"|"):
            pairs = tuple((self.read(), self.read()) for _ in range(int(rest)))
            if t == b"|":
                return ("attr", (pairs, self.read()))
            return ("map", pairs)
        if t == b"~":
            return ("set", tuple(self.read() for _ in range(int(rest))))
        if t == b">":
            return ("push", tuple(self.read() for _ in range(int(rest))))
        raise ConnectionError("unparsable reply line %r" % line[:80])


def quote(arg):
    """An argument as redis-cli reads it back: bare when plain, else "..." with escapes."""
    if arg and all(33 <= b < 127 and b not in b'"\'\\' for b in arg):
        return arg.decode()
    out = ['"']
    for b in arg:
        if b == 0x22:
            out.append('\\"')
        elif b == 0x5C:
            out.append("\\\\")
        elif b == 0x0A:
            out.append("\\n")
        elif b == 0x0D:
            out.append("\\r")
        elif b == 0x09:
            out.append("\\t")
        elif 32 <= b < 127:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    out.append('"')
    return "".join(out)


def cli_line(args):
    return " ".join(quote(a) for a in args)


def show(reply, indent=0):
    """A reply as redis-cli prints it, with the RESP type spelled out where redis-cli hides it."""
    t, v = reply
    pad = " " * indent
    if t == "simple":
        return pad + "(status) " + v.decode("latin-1")
    if t == "error":
        return pad + "(error) " + v.decode("latin-1")
    if t == "int":
        return pad + "(integer) %d" % v
    if t == "bulk":
        return pad + ("(nil)" if v is None else '"%s"' % quote(v).strip('"'))
    if t == "array":
        if v is None:
            return pad + "(nil array)"
        if not v:
            return pad + "(empty array)"
        return "\n".join(
            "%s%d) %s" % (pad, i + 1, show(e, indent + 3).lstrip()) for i, e in enumerate(v)
        )
    if t == "null":
        return pad + "(null)"
    if t == "double":
        return pad + "(double) " + v.decode("latin-1")
    if t == "bool":
        return pad + "(%s)" % ("true" if v else "false")
    if t == "bignum":
        return pad + "(big number) %d" % v
    if t == "verbatim":
        return pad + '(verbatim %s) "%s"' % (v[0].decode("latin-1"), quote(v[1]).strip('"'))
    if t in ("map", "set", "push"):
        if not v:
            return pad + "(empty %s)" % t
        if t == "map":
            lines = []
            for i, (k, x) in enumerate(v):
                lines.append("%s%d# %s => %s" % (pad, i + 1, show(k).lstrip(),
                                                 show(x, indent + 3).lstrip()))
            return "\n".join(lines)
        return "\n".join("%s%d~ %s" % (pad, i + 1, show(e, indent + 3).lstrip())
                         for i, e in enumerate(v)) + "  (%s)" % t
    if t == "attr":
        return pad + "(attribute %r)\n" % (v[0],) + show(v[1], indent)
    if t in ("shape", "unordered", "tolerance"):
        return pad + "(%s) %r" % (t, v)
    return pad + repr(reply)


# ---------------------------------------------------------------------------------------------
# The fast path (compat.py's pipelined mode): the same typed values as Client.read, parsed from an
# immutable bytes buffer at an offset, so that a pipelined reply stream is parsed without a
# system call or a buffer copy per reply.
class Incomplete(Exception):
    """The buffer ends inside a reply: read more and parse it again from its start."""


def parse(buf, pos):
    """One reply from bytes `buf` at `pos` -> (value, position after it). Raises Incomplete when
    buf ends inside the reply, ConnectionError when it is not RESP."""
    i = buf.find(b"\r\n", pos)
    if i < 0:
        raise Incomplete
    t = buf[pos]
    rest = buf[pos + 1:i]
    pos = i + 2
    if t == 43:  # +
        return ("simple", rest), pos
    if t == 45:  # -
        return ("error", rest), pos
    if t == 58:  # :
        return ("int", int(rest)), pos
    if t == 36 or t == 33 or t == 61:  # $ ! =
        n = int(rest)
        if n < 0:
            return ("bulk", None), pos
        end = pos + n
        if len(buf) < end + 2:
            raise Incomplete
        data = buf[pos:end]
        if t == 36:
            return ("bulk", data), end + 2
        if t == 33:
            return ("error", data), end + 2
        if data[3:4] != b":":
            raise ConnectionError("bad verbatim string %r" % data[:80])
        return ("verbatim", (data[:3], data[4:])), end + 2
    if t == 42 or t == 126 or t == 62:  # * ~ >
        n = int(rest)
        if n < 0:
            return ("array", None), pos
        items = []
        for _ in range(n):
            v, pos = parse(buf, pos)
            items.append(v)
        return ({42: "array", 126: "set", 62: "push"}[t], tuple(items)), pos
    if t == 95:  # _
        return ("null", None), pos
    if t == 44:  # ,
        return ("double", rest), pos
    if t == 35:  # #
        if rest not in (b"t", b"f"):
            raise ConnectionError("bad boolean %r" % buf[pos - 4:pos])
        return ("bool", rest == b"t"), pos
    if t == 40:  # (
        return ("bignum", int(rest)), pos
    if t == 37 or t == 124:  # % |
        pairs = []
        for _ in range(int(rest)):
            k, pos = parse(buf, pos)
            v, pos = parse(buf, pos)
            pairs.append((k, v))
        if t == 124:
            reply, pos = parse(buf, pos)
            return ("attr", (tuple(pairs), reply)), pos
        return ("map", tuple(pairs)), pos
    raise ConnectionError("unparsable reply line %r" % buf[pos - 2 - len(rest) - 1:pos][:80])

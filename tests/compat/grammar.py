"""Command sequences generated from Redis's own argument grammar.

The command list comes from kvlab (`COMMAND`: names, arity, flags, subcommands), so a command that
kvlab adds is generated with no change here; the argument grammar of each comes from the Redis
oracle (`COMMAND DOCS`: key, string, integer, double, pattern, unix-time, pure-token, oneof,
block; flags optional / multiple / multiple_token). Values are drawn from small domains so that
keys collide across types (WRONGTYPE), and edge cases (empty strings, overflowing integers, inf,
nan, out-of-range indexes, duplicates, binary bytes, expiries in the past) come up often.
"""
import time

# Six key names shared by every type: collisions and WRONGTYPE are the common case.
KEYS = [b"k1", b"k2", b"k3", b"k4", b"", b"\x00b\xff"]
MEMBERS = [b"a", b"b", b"c", b"1", b"2", b"-1", b"1.5", b"", b"a\x00b"]
VALUES = [b"", b"v", b"1", b"10", b"-5", b"3.5", b"abc", b"9223372036854775807", b"1e3",
          b"\x00\xff\r\n", b"hello world"]
INTS = [b"0", b"1", b"-1", b"2", b"3", b"-2", b"5", b"10", b"-100"]
INTS_EDGE = [b"9223372036854775807", b"-9223372036854775808", b"9223372036854775808",
             b"-9223372036854775809", b"99999999999999999999", b"abc", b"", b"1.5", b" 1",
             b"+1", b"007", b"0x10", b"1e3", b"-0"]
DOUBLES = [b"0", b"1", b"-1", b"1.5", b"2", b"-2.5", b"10", b"3.0e-5"]
DOUBLES_EDGE = [b"inf", b"-inf", b"+inf", b"-0", b"1e308", b"-1e308", b"1e309", b"nan", b"abc",
                b"", b"0x10", b" 1", b"1.7976931348623157e308", b"5e-324", b".5", b"1."]
SCORE_RANGE = [b"(1", b"(-inf", b"(+inf", b"(", b"((1", b"(nan"]
LEX_RANGE = [b"-", b"+", b"[a", b"(a", b"[b", b"(c", b"[", b"(", b"a", b"[\x00"]
PATTERNS = [b"*", b"k*", b"k?", b"[k]*", b"*1", b"\\*", b"", b"[a-", b"*\x00*", b"a*"]
# Only cursors whose meaning does not depend on the implementation: 0 and invalid ones ("" is 0
# for Redis).
CURSORS = [b"0", b"0", b"0", b"", b"abc", b"18446744073709551616", b" 0", b"0x"]
# Blocking commands never get 0 (forever) nor a long timeout: a few milliseconds or invalid.
TIMEOUTS = [b"0.01", b"0.001", b"0.02", b"-1", b"abc", b"inf", b"nan"]
TIMEOUTS_MS = [b"10", b"1", b"20", b"-1", b"abc", b"1.5"]
# Expiries are either long (never reached during a sequence) or already past/zero/negative, so
# the outcome does not depend on how fast each server runs the sequence. Valid relative expiries
# come from Generator.relative_expiry: no two in one sequence name the same instant, since
# EXPIRE ... GT/LT against an equal expiry set a millisecond earlier answers by the clock.
SECONDS = [b"0", b"-1", b"-100", b"9223372036854775807", b"99999999999999999", b"abc", b"1.5"]
MILLIS = [b"0", b"-1", b"9223372036854775807", b"9223372036854775", b"abc"]
# Stream IDs (XADD, XRANGE, XDEL, XREAD, XSETID, MINID): explicit, incomplete, "ms-*", the
# special ones ("*", "-", "+", "$", exclusive "(") and invalid ones. Small milliseconds, so that
# explicit IDs meet each other and the auto IDs ("*", far larger) come after them.
STREAM_IDS = [b"0-1", b"1-0", b"1-1", b"1-2", b"2-0", b"1", b"2", b"3-5", b"5", b"1-*", b"2-*",
              b"0-0", b"0", b"-", b"+"]
STREAM_IDS_EDGE = [b"*", b"$", b">", b"(1-0", b"(1", b"(0-1", b"(-", b"(+", b"(", b"abc", b"",
                   b"1-", b"-1", b"1-abc", b"1-2-3", b" 1", b"+1", b"01", b"-0",
                   b"18446744073709551615-18446744073709551615", b"18446744073709551615",
                   b"18446744073709551616", b"0-*", b"*-1", b"1\x00"]

# Geo: positions a few km apart (two Sicilian towns and points between them, repeated so that
# members share cells and distances tie), the limits themselves (180, +-85.05112878), and values
# out of range or malformed; radii and box sides from 0 to a few thousand (in m, km, ft or mi)
# so that searches find some members and miss others.
LONGITUDES = [b"13.361389", b"15.087269", b"13.5", b"14.2", b"13.361389", b"13.36", b"180",
              b"-180", b"0"]
LONGITUDES_EDGE = [b"180.000001", b"-181", b"inf", b"abc", b"", b"1e308", b"-0"]
LATITUDES = [b"38.115556", b"37.502669", b"38", b"37.8", b"38.115556", b"38.1", b"85.05112878",
             b"-85.05112878", b"0"]
LATITUDES_EDGE = [b"85.05112879", b"-90", b"nan", b"abc", b"91", b"-inf"]
DISTANCES = [b"0", b"1", b"10", b"50", b"100", b"200", b"1000", b"5000", b"3.5", b"200"]
DISTANCES_EDGE = [b"-1", b"abc", b"inf", b"1e308", b"", b"-0", b"nan"]
GEO_COUNTS = [b"1", b"2", b"3", b"1", b"5", b"10"]
# Geo members: a small pool, so that GEODIST, GEOPOS and FROMMEMBER find what GEOADD added.
GEO_MEMBERS = [b"a", b"b", b"c", b"d"]
# The writer a sequence opens with when its focus command has this type category (otherwise any
# writer of the category): searches need a populated key more than anything else.
OPENERS = {"@geo": "geoadd"}

# RESTORE payloads: Redis 7.0's DUMP of one value per type and encoding (string, int, quicklist,
# intset, set, listpack hash, listpack zset, stream), and broken ones (a wrong CRC, RDB version 11, a
# module type, a truncated list) that must answer the same errors.
PAYLOADS = [
    b"\x00\x01v\n\x00\x91\x08\xce\xb2\x198\x8a\xce",
    b"\x00\xc0\n\n\x00n\x9fWE\x0e\xaec\xbb",
    b"\x12\x01\x02\x0f\x0f\x00\x00\x00\x03\x00\x81a\x02\x81b\x02\x01\x01\xff\n\x00\xe0\x1b"
    b"\xabJG\xceY\"",
    b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00\n\x00\xa5\x02\\\xe2mn"
    b"M\x1b",
    b"\x02\x02\x01a\x01b\n\x00\xfed!%\xeb\x03=\r",
    b"\x10\x12\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02\x01\x01\xff\n\x00\xfc\xe4"
    b"\x08\xf1y\"\xe0\x16",
    b"\x11\x14\x14\x00\x00\x00\x04\x00\x81a\x02\x01\x01\x81b\x02\x832.5\x04\xff\n\x00\xd4Ln"
    b"\xa4\xf6D\xd9\xd7",
    # A stream: entries 5-1 and 6-0 (5-2 deleted, still in the node), group "grp" with 5-1
    # pending for consumer c1.
    b"\x13\x01\x10\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01@@@\x00"
    b"\x00\x00\x19\x00\x02\x01\x01\x01\x02\x01\x81f\x02\x81n\x02\x00\x01\x02\x01\x00\x01\x00"
    b"\x01\x81v\x02\x01\x01\x05\x01\x03\x01\x00\x01\x01\x01\x81w\x02\x02\x01\x05\x01\x00\x01"
    b"\x01\x01\xdf\xff\x02\x01\x01\x81g\x02\x81z\x02\x06\x01\xff\x02\x06\x00\x05\x01\x05\x02"
    b"\x03\x01\x03grp\x05\x01\x81\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\x00\x00\x00\x00\x00"
    b"\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01:*\x00C\xa2\x01\x00\x00\x01\x01\x02c1:*\x00C\xa2"
    b"\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01\n\x00"
    b"\xfb+\x98\x1a\tD\x04\xb6",
]


def crc64(data):
    """Redis's CRC64 (Jones polynomial, reflected, initial value 0)."""
    crc = 0
    for c in data:
        crc ^= c
        for _ in range(8):
            crc = (crc >> 1) ^ 0x95AC9329AC4BC9B5 if crc & 1 else crc >> 1
    return crc


def seal(body, version=10):
    body += version.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


PAYLOADS_BAD = [PAYLOADS[0][:-1] + b"\x00", seal(PAYLOADS[0][:-10], 11), seal(b"\x07\x01"),
                seal(PAYLOADS[2][:-14]), b"", b"\n\x00"]

# The ACL categories that name a value type: a focus command's writers share one with it.
TYPE_CATEGORIES = {"@string", "@list", "@hash", "@set", "@sortedset", "@bitmap", "@hyperloglog",
                   "@stream", "@geo"}


def unix_seconds():
    now = int(time.time())
    return [b"1", b"0", b"-1", b"%d" % (now + 1000), b"%d" % (now + 100000), b"abc",
            b"9223372036854775807", b"%d" % (now - 10)]


def unix_millis():
    now = int(time.time() * 1000)
    return [b"1", b"0", b"-1", b"%d" % (now + 1000000), b"%d" % (now - 10000), b"abc",
            b"9223372036854775807"]


def kv_table(reply):
    """kvlab's COMMAND reply -> {full name: {'arity', 'flags', 'first', 'last', 'step'}};
    subcommands appear as 'parent|sub'."""
    out = {}

    def add(row):
        _, items = row
        name = items[0][1].decode().lower()
        flags = {f[1].decode() for f in items[2][1]}
        cats = {f[1].decode() for f in items[6][1]} if len(items) > 6 and items[6][1] else set()
        out[name] = {"arity": items[1][1], "flags": flags, "first": items[3][1],
                     "last": items[4][1], "step": items[5][1], "cats": cats}
        if len(items) > 9 and items[9][1]:
            for sub in items[9][1]:
                add(sub)

    for row in reply[1]:
        add(row)
    return out


def _plain(v):
    t, x = v
    if t == "array":
        return [_plain(e) for e in x] if x is not None else None
    if t in ("bulk", "simple"):
        return x.decode("latin-1") if x is not None else None
    return x


def _pairs(lst):
    return {lst[i]: lst[i + 1] for i in range(0, len(lst), 2)}


def redis_docs(reply):
    """Redis's COMMAND DOCS reply -> {full name: [argument spec dicts]} (subcommands as 'a|b')."""
    out = {}

    def args_of(lst):
        specs = []
        for a in lst or []:
            d = _pairs(a)
            if "arguments" in d:
                d["arguments"] = args_of(d["arguments"])
            d["flags"] = set(d.get("flags") or [])
            specs.append(d)
        return specs

    for name, doc in _pairs(_plain(reply)).items():
        doc = _pairs(doc)
        out[name.lower()] = args_of(doc.get("arguments"))
        for sname, sdoc in _pairs(doc.get("subcommands") or []).items():
            out[sname.lower()] = args_of(_pairs(sdoc).get("arguments"))
    return out


class Generator:
    def __init__(self, rng, table, docs, commands, blocking=()):
        self.rng = rng
        self.blocking = set(blocking)  # Redis's "blocking" flag: timeouts stay a few ms
        self.used_keys = []  # keys named so far in the current sequence
        self.expiries = 0  # valid relative expiries drawn in the current sequence
        self.table = table  # kv_table()
        self.docs = docs  # redis_docs()
        self.commands = commands  # the names to generate, sorted
        self.writers = [c for c in commands if "denyoom" in table[c]["flags"]]

    def pick(self, common, edge=(), p_edge=0.2):
        if edge and self.rng.random() < p_edge:
            return self.rng.choice(edge)
        return self.rng.choice(common)

    def value(self, cmd, spec):
        """One value for an argument spec, from its type and name."""
        t, name, r = spec["type"], spec.get("name", ""), self.rng
        blocking = cmd in self.blocking or "blocking" in self.table[cmd]["flags"]
        if t == "key":
            # Half the time a key the sequence already used, so commands meet each other's values.
            if self.used_keys and r.random() < 0.5:
                return r.choice(self.used_keys)
            k = r.choice(KEYS)
            self.used_keys.append(k)
            return k
        if t == "pattern":
            return r.choice(PATTERNS)
        if t == "unix-time":
            return r.choice(unix_millis() if "milli" in name else unix_seconds())
        if t == "double":
            if name == "longitude":
                return self.pick(LONGITUDES, LONGITUDES_EDGE, 0.04)
            if name == "latitude":
                return self.pick(LATITUDES, LATITUDES_EDGE, 0.04)
            if name in ("radius", "width", "height"):
                return self.pick(DISTANCES, DISTANCES_EDGE, 0.1)
            if name == "timeout" and blocking:
                return r.choice(TIMEOUTS)
            if name in ("min", "max"):
                return self.pick(DOUBLES + [b"-inf", b"+inf"], SCORE_RANGE + DOUBLES_EDGE, 0.3)
            return self.pick(DOUBLES, DOUBLES_EDGE)
        if cmd.startswith("x") and (name in ("id", "start", "end", "last-id",
                                             "max_deleted_entry_id")
                                    or (name == "threshold" and r.random() < 0.5)):
            return self.pick(STREAM_IDS, STREAM_IDS_EDGE, 0.25)
        if cmd.startswith("x") and name == "threshold":  # MAXLEN's count
            return self.pick(INTS, INTS_EDGE)
        if cmd.startswith("x") and name in ("field", "value"):
            return self.pick([b"f", b"g", b"v", b"1", b"a"], VALUES)
        if t == "integer":
            if name in ("timeout", "milliseconds") and blocking:  # BLOCK ms of XREAD too
                return r.choice(TIMEOUTS_MS)
            if name == "cursor":
                return r.choice(CURSORS)
            if name in ("seconds", "milliseconds"):
                if r.random() < 0.35:
                    return r.choice(SECONDS if name == "seconds" else MILLIS)
                return self.relative_expiry(name == "seconds")
            if name == "ttl" and cmd in ("restore", "restore-asking"):
                # 0, a long relative TTL, or ones that are invalid or already past (as relative
                # or ABSTTL times); never a few milliseconds ahead, which would race the clock.
                return self.pick([b"0", b"0", self.relative_expiry(False)],
                                 [b"-1", b"abc", b"9223372036854775807", b"-9223372036854775808"])
            if name == "count" and cmd.startswith("geo"):
                return self.pick(GEO_COUNTS, INTS_EDGE + [b"0", b"-1"], 0.1)
            if name == "index" and cmd == "select":
                return self.pick([b"0", b"0", b"1", b"15"], [b"16", b"-1", b"abc"])
            return self.pick(INTS, INTS_EDGE)
        if t == "string":
            if cmd.startswith("geo") and name.startswith("member"):
                return self.pick(GEO_MEMBERS, MEMBERS + VALUES, 0.1)
            if name in ("min", "max"):
                return self.pick(LEX_RANGE, MEMBERS)
            if name in ("start", "stop"):  # ZRANGE: an index, a score or a lex bound
                return self.pick(INTS + [b"-inf", b"+inf", b"(1", b"[a", b"-", b"+"],
                                 INTS_EDGE + DOUBLES_EDGE + LEX_RANGE, 0.25)
            if name == "type":
                return self.pick([b"string", b"list", b"set", b"zset", b"hash"],
                                 [b"STRING", b"stream", b"nope", b""])
            if name == "serialized-value" and cmd in ("restore", "restore-asking"):
                return self.pick(PAYLOADS, PAYLOADS_BAD + VALUES, 0.3)
            if name in ("value", "increment"):
                return self.pick(VALUES, INTS_EDGE + DOUBLES_EDGE)
            if name in ("parameter",):
                return r.choice([b"maxmemory", b"timeout", b"save", b"appendonly", b"nope",
                                 b"maxmemory-policy"])
            return self.pick(MEMBERS, VALUES + INTS_EDGE)
        return self.pick(MEMBERS, VALUES)

    def args(self, cmd, specs, out):
        r = self.rng
        i = 0
        while i < len(specs):
            spec = specs[i]
            i += 1
            flags = spec["flags"]
            if "optional" in flags and r.random() < 0.55:
                continue
            # GEORADIUS's STORE/STOREDIST refuse WITHDIST/WITHCOORD/WITHHASH: keep them rarer so
            # that most calls search.
            if (cmd.startswith("georadius") and spec.get("token") in ("STORE", "STOREDIST")
                    and r.random() < 0.6):
                continue
            if spec.get("name") == "numkeys" and i < len(specs):
                # numkeys counts the keys that follow: generate them first, then the count.
                tail = []
                self.args(cmd, [dict(specs[i], flags=specs[i]["flags"] - {"optional"})], tail)
                out.append(b"%d" % len(tail) if r.random() < 0.85 else self.pick(INTS, INTS_EDGE))
                out.extend(tail)
                i += 1
                continue
            reps = 1 + min(int(r.expovariate(0.7)), 5) if "multiple" in flags else 1
            for k in range(reps):
                if spec.get("token") and (k == 0 or "multiple_token" in flags):
                    out.append(spec["token"].encode())
                t = spec["type"]
                if t == "pure-token":
                    if not spec.get("token"):
                        out.append(spec["name"].encode())
                elif t == "oneof":
                    self.args(cmd, [dict(r.choice(spec["arguments"]), flags=set())], out)
                elif t == "block":
                    self.args(cmd, spec["arguments"], out)
                else:
                    out.append(self.value(cmd, spec))

    def command(self, name):
        """One command line (list of bytes) for kvlab's command `name` ('parent|sub' too)."""
        r = self.rng
        words = [w.upper().encode() for w in name.split("|")]
        out = list(words)
        self.args(name, self.docs.get(name, []), out)
        # Mutations reach the error paths the grammar never produces.
        if r.random() < 0.08 and len(out) > len(words):
            m = r.randrange(4)
            j = r.randrange(len(words), len(out))
            if m == 0:
                del out[j]
            elif m == 1:
                out.insert(j, out[j])
            elif m == 2:
                out.insert(j, r.choice([b"NX", b"XX", b"nope", b"COUNT", b"LIMIT", b"WITHSCORES"]))
            else:
                out[j] = r.choice(INTS_EDGE + DOUBLES_EDGE + VALUES)
        if name == "client|tracking":
            # Client ids differ between the two servers (each numbers its own connections), so a
            # REDIRECT to a small id could name a client on one and none on the other. A positive
            # one becomes an id neither has; zero, negative and non-integer ids stay (errors alike).
            for j in range(len(out) - 1):
                if out[j].upper() == b"REDIRECT" and out[j + 1].isdigit() and out[j + 1] != b"0":
                    out[j + 1] = b"9%s000000000" % out[j + 1][:6]
        return out

    def relative_expiry(self, seconds):
        """A valid relative expiry, 100 s to a few minutes ahead, that differs from every other
        one of the sequence by seconds (seconds: 100, 107, ...; milliseconds: 250.5 s, 257.5 s,
        ...), and from the absolute ones of unix_seconds/unix_millis by far more."""
        n = self.expiries
        self.expiries += 1
        return b"%d" % (100 + 7 * n) if seconds else b"%d" % (250500 + 7000 * n)

    def sequence(self, focus=None):
        """A short sequence: the focus command several times among writers of the same type (the
        ACL category: @list, @zset...; so that its keys hold values), other writers and random
        commands (so that keys of every type collide)."""
        r = self.rng
        n = r.randint(3, 10)
        seq = []
        self.used_keys = []
        self.expiries = 0
        cats = self.table.get(focus, {}).get("cats", set()) & TYPE_CATEGORIES
        related = [w for w in self.writers if self.table[w]["cats"] & cats]
        for i in range(n):
            x = r.random()
            if i == 0 and related and r.random() < 0.7:
                # Most sequences open by creating a value of its type.
                openers = [OPENERS[k] for k in cats if OPENERS.get(k) in self.table]
                c = r.choice(openers or related)
            elif focus and x < 0.45:
                c = focus
            elif x < 0.7 and related:
                c = r.choice(related)
            elif x < 0.85 and self.writers:
                c = r.choice(self.writers)
            else:
                c = r.choice(self.commands)
            seq.append(self.command(c))
        if focus and not any(self.name_of(c) == focus for c in seq):
            seq[-1] = self.command(focus)
        return seq

    def name_of(self, cmd):
        n = cmd[0].decode("latin-1").lower()
        if len(cmd) > 1 and (n + "|" + cmd[1].decode("latin-1").lower()) in self.table:
            return n + "|" + cmd[1].decode("latin-1").lower()
        return n

# Security cases, area "commands": argument values that once made Redis overflow an integer,
# allocate without bound, read or write out of bounds, or assert (counts, offsets, ranges, crafted
# HyperLogLog and RESTORE payloads), and kvlab's own findings of the same kind. Each case sends
# the advisory's trigger and checks kvlab's reply; where redis-server 7.0.15 (Debian's, with its
# security patches) answers safely, the replies must be equal. Triggers that make Redis 7.0 itself
# grow without bound (a reply of 2^63 random picks) are sent to kvlab only.
import json
import time

import seccommon
from seccommon import Error, advisory, expect

M = "9223372036854775807"  # LONG_MAX
MIN = "-9223372036854775808"  # LONG_MIN


def fresh(ctx):
    ctx.kv.cmd("FLUSHALL")
    if ctx.redis:
        ctx.redis.cmd("FLUSHALL")


def same(ctx, *args):
    """kvlab's reply to args, checked equal to redis-server's when the oracle runs."""
    mine, theirs = ctx.both(*args)
    if ctx.redis:
        expect(mine == theirs, "%s: kvlab %r, redis-server %r" % (
            " ".join(str(a)[:40] for a in args), mine, theirs))
    return mine


def is_error(reply, text=None):
    return isinstance(reply, Error) and (text is None or text in reply)


def both_do(ctx, *args):
    ctx.kv.cmd(*args)
    if ctx.redis:
        ctx.redis.cmd(*args)


@advisory("CVE-2023-25155", "Redis 7.0.9",
          "server/commands/sets.cpp, zsets.cpp, hashes.cpp (SRANDMEMBER, ZRANDMEMBER, HRANDFIELD)")
def case_random_count_long_min(ctx):
    fresh(ctx)
    both_do(ctx, "SADD", "s", "a")
    both_do(ctx, "ZADD", "z", "0", "a")
    both_do(ctx, "HSET", "h", "a", "1")
    for args in (("SRANDMEMBER", "s", MIN), ("ZRANDMEMBER", "z", MIN),
                 ("ZRANDMEMBER", "z", MIN, "WITHSCORES"), ("HRANDFIELD", "h", MIN),
                 ("HRANDFIELD", "h", MIN, "WITHVALUES")):
        expect(is_error(same(ctx, *args), "value is out of range"), "%s %s" % (args[0], MIN))


@advisory("CVE-2023-22458", "Redis 7.0.8",
          "server/commands/zsets.cpp, hashes.cpp (ZRANDMEMBER WITHSCORES, HRANDFIELD WITHVALUES)")
def case_random_count_withvalues_overflow(ctx):
    # Twice |count| (members and values) must not overflow.
    fresh(ctx)
    both_do(ctx, "ZADD", "z", "0", "a")
    both_do(ctx, "HSET", "h", "a", "1")
    for count in ("-9223372036854770000", "-4611686018427387904", "4611686018427387904", M):
        for args in (("ZRANDMEMBER", "z", count, "WITHSCORES"),
                     ("HRANDFIELD", "h", count, "WITHVALUES")):
            reply = same(ctx, *args)
            expect(is_error(reply, "value is out of range") or isinstance(reply, list),
                   "%s %s: %r" % (args[0], count, reply))


@advisory("kvlab: random reply length", "-",
          "server/commands/containers.hpp kMaxRandomReply (SRANDMEMBER, ZRANDMEMBER, HRANDFIELD)")
def case_random_count_huge_negative(ctx):
    # Redis 7.0 accepts -LONG_MAX and streams that many picks into an unlimited output buffer
    # until memory runs out; kvlab refuses replies longer than 10,000,000 picks, for all three
    # commands alike, and answers a missing key with [] as Redis does. Not sent to redis-server.
    fresh(ctx)
    ctx.kv.cmd("SADD", "s", "a")
    ctx.kv.cmd("ZADD", "z", "0", "a")
    ctx.kv.cmd("HSET", "h", "a", "1")
    for args in (("SRANDMEMBER", "s", "-9223372036854775807"),
                 ("ZRANDMEMBER", "z", "-9223372036854775807"),
                 ("ZRANDMEMBER", "z", "-4611686018427387903", "WITHSCORES"),
                 ("HRANDFIELD", "h", "-9223372036854775807"),
                 ("HRANDFIELD", "h", "-4611686018427387903", "WITHVALUES"),
                 ("HRANDFIELD", "h", "-10000001")):
        t0 = time.time()
        reply = ctx.kv.cmd(*args)
        expect(is_error(reply, "kvlab limits a random reply"), "%s: %r" % (" ".join(args), reply))
        expect(time.time() - t0 < 2, "%s took %.1f s" % (args[0], time.time() - t0))
    for args in (("SRANDMEMBER", "nokey", "-20000000"), ("HRANDFIELD", "nokey", "-20000000"),
                 ("ZRANDMEMBER", "nokey", "-20000000")):
        expect(same(ctx, *args) == [], "%s on a missing key" % args[0])
    expect(len(ctx.kv.cmd("HRANDFIELD", "h", "-10000", "WITHVALUES")) == 20000, "HRANDFIELD -10000")


@advisory("CVE-2022-35951", "Redis 7.0.5", "server/commands/streams.cpp (XAUTOCLAIM COUNT)")
def case_xautoclaim_count(ctx):
    fresh(ctx)
    both_do(ctx, "XADD", "x", "1-0", "f", "v")
    both_do(ctx, "XGROUP", "CREATE", "x", "grp", "0")
    for count in ("0", "-1", "8070450532247928833", "922337203685477580", M):
        reply = same(ctx, "XAUTOCLAIM", "x", "grp", "Bob", "0", "0-0", "COUNT", count)
        expect(is_error(reply, "COUNT must be > 0"), "COUNT %s: %r" % (count, reply))


@advisory("CVE-2022-31144", "Redis 7.0.4", "server/commands/streams.cpp (XAUTOCLAIM, XCLAIM)")
def case_xautoclaim_deleted_entries(ctx):
    # The pending list names entries that XDEL removed: XAUTOCLAIM must skip them, count them
    # and report them as deleted (Redis's "XAUTOCLAIM with XDEL and count").
    fresh(ctx)
    for args in (("XADD", "x", "1-0", "f", "v"), ("XADD", "x", "2-0", "f", "v"),
                 ("XADD", "x", "3-0", "f", "v"), ("XGROUP", "CREATE", "x", "grp", "0"),
                 ("XREADGROUP", "GROUP", "grp", "Alice", "STREAMS", "x", ">"),
                 ("XDEL", "x", "1-0"), ("XDEL", "x", "2-0")):
        same(ctx, *args)
    expect(same(ctx, "XAUTOCLAIM", "x", "grp", "Bob", "0", "0-0", "COUNT", "1") ==
           [b"2-0", [], [b"1-0"]], "first page")
    same(ctx, "XAUTOCLAIM", "x", "grp", "Bob", "0", "2-0", "COUNT", "1")
    same(ctx, "XAUTOCLAIM", "x", "grp", "Bob", "0", "3-0", "COUNT", "1")
    expect(same(ctx, "XPENDING", "x", "grp", "-", "+", "10", "Alice") == [], "Alice's PEL")
    same(ctx, "XCLAIM", "x", "grp", "Carol", "0", "1-0", "2-0", "3-0")


@advisory("CVE-2023-28856", "Redis 7.0.11", "server/commands/hashes.cpp (HINCRBYFLOAT)")
def case_hincrbyfloat_infinity(ctx):
    # Redis created the field before refusing the increment, leaving a value that crashed a
    # later read.
    fresh(ctx)
    for inc in ("+inf", "-inf", "inf", "nan"):
        reply = same(ctx, "HINCRBYFLOAT", "hfoo", "field", inc)
        expect(isinstance(reply, Error), "HINCRBYFLOAT %s: %r" % (inc, reply))
    expect(same(ctx, "EXISTS", "hfoo") == 0, "HINCRBYFLOAT created the hash")
    both_do(ctx, "HSET", "h", "f", "1e4932")  # near the long double maximum
    expect(isinstance(same(ctx, "HINCRBYFLOAT", "h", "f", "1e4932"), Error), "overflow to inf")
    expect(same(ctx, "HGET", "h", "f") == b"1e4932", "the field changed")


@advisory("CVE-2023-28425", "Redis 7.0.10", "server/commands/strings.cpp (MSETNX)")
def case_msetnx_same_key_twice(ctx):
    fresh(ctx)
    expect(same(ctx, "MSETNX", "x1", "xxx", "x1", "yyy") == 1, "MSETNX on a new key")
    expect(same(ctx, "GET", "x1") == b"yyy", "the last value wins")
    expect(same(ctx, "MSETNX", "x1", "xxx", "x1", "zzz") == 0, "MSETNX on an existing key")
    expect(same(ctx, "GET", "x1") == b"yyy", "the value changed")


@advisory("CVE-2022-35977", "Redis 7.0.8", "server/commands/strings.cpp, sort.cpp (SETRANGE, SORT)")
def case_setrange_sort_huge_offset(ctx):
    fresh(ctx)
    for offset in (M, "2147483647", "536870912", "4294967295"):
        reply = same(ctx, "SETRANGE", "K", offset, "A")
        expect(is_error(reply, "string exceeds maximum allowed size"), "SETRANGE %s" % offset)
    expect(is_error(same(ctx, "SETRANGE", "K", "536870911", "xy"), "exceeds"), "offset + length")
    expect(same(ctx, "EXISTS", "K") == 0, "SETRANGE created the key")
    both_do(ctx, "LPUSH", "L", "2", "1", "0")
    for count in (M, "2147483647"):
        expect(same(ctx, "SORT_RO", "L", "BY", "a", "LIMIT", "2", count) == [b"2"],
               "SORT_RO LIMIT 2 %s" % count)
        same(ctx, "SORT", "L", "LIMIT", M, count)
    same(ctx, "SORT", "L", "LIMIT", MIN, M)


@advisory("CVE-2021-32761", "Redis 6.2.5", "server/commands/bitmaps.cpp, strings.cpp")
def case_string_growth_past_bulk_limit(ctx):
    # BITFIELD's and SETBIT's bit offsets overflowed before their length check (CVE-2021-32761,
    # on 32-bit builds; the same class as CVE-2021-41099, which cases_protocol.py covers with
    # proto-max-bulk-len raised). At the default limit (512 MB) every form must refuse without
    # allocating, and the read forms clamp their ranges.
    fresh(ctx)
    for args in (("SETBIT", "b", "4294967296", "1"), ("SETBIT", "b", M, "1"),
                 ("BITFIELD", "b", "SET", "u8", "4294967296", "1"),
                 ("BITFIELD", "b", "SET", "i64", "#67108864", "1"),
                 ("BITFIELD", "b", "SET", "u8", "#" + M, "1"),
                 ("BITFIELD", "b", "INCRBY", "u8", M, "1"),
                 ("BITFIELD", "b", "GET", "u64", "0"), ("BITFIELD_RO", "b", "GET", "u8", M)):
        reply = same(ctx, *args)
        expect(isinstance(reply, Error) or reply == [0], "%s: %r" % (" ".join(args), reply))
    expect(same(ctx, "EXISTS", "b") == 0, "a refused write created the key")
    for args in (("GETRANGE", "b", MIN, M), ("BITCOUNT", "b", MIN, M, "BIT"),
                 ("BITPOS", "b", "1", MIN, M, "BIT"), ("SUBSTR", "b", M, MIN)):
        same(ctx, *args)


@advisory("CVE-2021-32625", "Redis 6.2.4 (STRALGO LCS); LCS in 7.0", "server/commands/strings.cpp (LCS)")
def case_lcs_table_too_large(ctx):
    # The (len(a) + 1) x (len(b) + 1) table must not overflow, and past proto-max-bulk-len it is
    # refused before it is allocated (12 KB x 12 KB = 576 MB of uint32).
    fresh(ctx)
    both_do(ctx, "SET", "a", "x" * 12000)
    both_do(ctx, "SET", "b", "y" * 12000)
    t0 = time.time()
    reply = same(ctx, "LCS", "a", "b")
    expect(is_error(reply, "transient memory for LCS exceeds proto-max-bulk-len"), repr(reply))
    expect(time.time() - t0 < 2, "LCS took %.1f s" % (time.time() - t0))
    for opt in (("IDX", "MINMATCHLEN", M), ("IDX", "MINMATCHLEN", MIN), ("LEN",)):
        both_do(ctx, "SET", "a", "ohmytext")
        both_do(ctx, "SET", "b", "mynewtext")
        same(ctx, "LCS", "a", "b", *opt)


def sparse_hll(body):
    return b"HYLL" + bytes([1] + [0] * 11) + body


@advisory("CVE-2025-32023", "Redis 7.0.15 (Debian's patch)",
          "server/commands/hyperloglog.cpp (sparse XZERO/ZERO runs)")
def case_hll_sparse_run_overflow(ctx):
    # Redis's tests: enough maximal XZERO (or ZERO) opcodes that the run total passes 2^32 and
    # wraps, then a VAL opcode that wrote past the registers.
    fresh(ctx)
    xzero = bytes([0b01000000 | (16383 >> 8), 16383 & 0xFF])
    payloads = [sparse_hll(xzero * (131072 + 1000) + bytes([0xFF])),
                sparse_hll(bytes([0x3F]) * (33554432 + 1000) + bytes([0xFF]))]
    for payload in payloads:
        both_do(ctx, "SET", "hll", payload)
        for args in (("PFCOUNT", "hll", "hll"), ("PFDEBUG", "GETREG", "hll"),
                     ("PFMERGE", "dst", "hll"), ("PFADD", "hll", "x")):
            reply = same(ctx, *args)
            expect(is_error(reply, "INVALIDOBJ"), "%s: %r" % (args[0], reply))
        same(ctx, "PFCOUNT", "hll")


@advisory("CVE-2019-10192", "Redis 5.0.5, 4.0.14",
          "server/commands/hyperloglog.cpp (corrupt sparse and dense values)")
def case_hll_corrupt_values(ctx):
    # Redis's "Corrupted sparse/dense HyperLogLogs are detected" tests (CVE-2019-10192 and
    # CVE-2019-10193 were overflows in the sparse code) and a seeded fuzz of both encodings.
    import random
    fresh(ctx)
    both_do(ctx, "PFADD", "base", *("e%d" % i for i in range(1000)))
    sparse = ctx.kv.cmd("GET", "base")
    both_do(ctx, "PFADD", "dense", *("e%d" % i for i in range(10000)))
    dense = ctx.kv.cmd("GET", "dense")
    corrupt = [sparse + b"hello",                    # additional bytes at the tail
               b"HYLL"[:3] + b"X" + sparse[4:],       # broken magic
               sparse[:4] + b"\x02" + sparse[5:],     # invalid encoding
               dense + b"hello"]                      # dense of the wrong length
    rng = random.Random(20270101)
    for _ in range(200):
        base = bytearray(rng.choice((sparse, dense)))
        for _ in range(rng.randint(1, 8)):
            base[rng.randrange(16, len(base))] = rng.randrange(256)
        corrupt.append(bytes(base))
    for value in corrupt:
        both_do(ctx, "SET", "hll", value)
        for args in (("PFCOUNT", "hll"), ("PFADD", "hll", "a", "b", "c"),
                     ("PFMERGE", "hll", "hll"), ("PFCOUNT", "hll", "base")):
            same(ctx, *args)


def tcl_bytes(text):
    """The \\xNN escapes of a Redis test's payload as bytes."""
    import re
    return bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-fA-F]{2})", text))


ZIPMAP_LONG_FIELD_LEN = tcl_bytes(
    r"\x09\x11\x01\xfe\x04\x00\x00\x00\x01\x00\xff\x00\x04\x00\x76\x61\x6c\x31\xff\x09\x00\xf9"
    r"\xd5\xa4\xf7\x7d\x00\x3f\x1b")
ZIPMAP_LONG_VALUE_LEN = tcl_bytes(
    r"\x09\x0e\x01\x01\x6b\xfe\x04\x00\x00\x00\x00\x76\x61\x6c\x31\xff\x09\x00\xd0\xf9\xe4\x1d"
    r"\xe4\xfb\x11\x4c")
HUGE_STRING_LENGTH = tcl_bytes(
    r"\x00\x81\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xF7\x0c\x00\x00\x00\x00\x00\x00\x00\x00\x00")
STREAM_DUPLICATED_PEL = tcl_bytes(
    r"\x15\x01\x10\x00\x00\x01\x9b\x0d\x56\xa9\xb7\x00\x00\x00\x00\x00\x00\x00\x00\xc3\x39\x40"
    r"\x42\x15\x42\x00\x00\x00\x11\x00\x02\x01\x00\x01\x01\x01\x86\x66\x69\x65\x6c\x64\x31\x07"
    r"\x00\x01\x40\x0f\x0a\x00\x01\x86\x76\x61\x6c\x75\x65\x31\x07\x04\x20\x0b\x02\xcd\xd9\x02"
    r"\xe0\x01\x22\x01\x32\x07\x80\x1a\x04\x32\x07\x06\x01\xff\x02\x81\x00\x00\x01\x9b\x0d\x56"
    r"\xb7\x90\x00\x81\x00\x00\x01\x9b\x0d\x56\xa9\xb7\x00\x00\x00\x02\x01\x07\x6d\x79\x67\x72"
    r"\x6f\x75\x70\x81\x00\x00\x01\x9b\x0d\x56\xb7\x90\x00\x02\x02\x00\x00\x01\x9b\x0d\x56\xa9"
    r"\xb7\x00\x00\x00\x00\x00\x00\x00\x00\x80\xd9\x56\x0d\x9b\x01\x00\x00\x01\x00\x00\x01\x9b"
    r"\x0d\x56\xb7\x90\x00\x00\x00\x00\x00\x00\x00\x00\x80\xd9\x56\x0d\x9b\x01\x00\x00\x01\x01"
    r"\x09\x63\x6f\x6e\x73\x75\x6d\x65\x72\x31\x80\xd9\x56\x0d\x9b\x01\x00\x00\x80\xd9\x56\x0d"
    r"\x9b\x01\x00\x00\x02\x00\x00\x01\x9b\x0d\x56\xa9\xb7\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    r"\x00\x01\x9b\x0d\x56\xa9\xb7\x00\x00\x00\x00\x00\x00\x00\x00\x0c\x00\x00\x00\x00\x00\x00"
    r"\x00\x00\x00\x09\x00\x4b\xe0\x99\x30\x67\x4d\xe5\x87")
STREAM_SHARED_NACK = tcl_bytes(
    r"\x0f\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x25\x25\x00"
    r"\x00\x00\x0a\x00\x01\x01\x00\x01\x01\x01\x85\x66\x69\x65\x6c\x64\x06\x00\x01\x02\x01\x00"
    r"\x01\x00\x01\x85\x76\x61\x6c\x75\x65\x06\x04\x01\xff\x01\x01\x00\x01\x07\x6d\x79\x67\x72"
    r"\x6f\x75\x70\x01\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"
    r"\x4a\x79\x89\x8f\x9f\x01\x00\x00\x01\x02\x09\x63\x6f\x6e\x73\x75\x6d\x65\x72\x41\x4a\x79"
    r"\x89\x8f\x9f\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
    r"\x00\x09\x63\x6f\x6e\x73\x75\x6d\x65\x72\x42\x54\x79\x89\x8f\x9f\x01\x00\x00\x01\x00\x00"
    r"\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x09\x00\xf6\xea\x7b\x6c\xb8\xb8"
    r"\xd8\xb4")


@advisory("CVE-2026-25243", "Redis 7.0.15 (Debian's patch)",
          "server/data/rdb_load.cpp walk_zipmap, Reader::string (RESTORE)")
def case_restore_zipmap_and_length(ctx):
    # Redis's corrupt-dump tests: a zipmap whose field or value length takes the 5-byte form for
    # a small number, and a string claiming 2^64 - 9 bytes.
    fresh(ctx)
    for name, payload in (("zipmap field length", ZIPMAP_LONG_FIELD_LEN),
                          ("zipmap value length", ZIPMAP_LONG_VALUE_LEN),
                          ("huge string length", HUGE_STRING_LENGTH)):
        reply = same(ctx, "RESTORE", "key", "0", payload)
        expect(isinstance(reply, Error), "%s: %r" % (name, reply))
        expect(same(ctx, "EXISTS", "key") == 0, "%s: the key exists" % name)
    both_do(ctx, "DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1")
    try:
        reply = same(ctx, "RESTORE", "key", "0", HUGE_STRING_LENGTH)
        expect(isinstance(reply, Error), "huge string length, no checksum: %r" % (reply,))
    finally:
        both_do(ctx, "DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0")


@advisory("CVE-2026-66373", "Redis 7.0.15 (Debian's patch)",
          "server/data/rdb_load.cpp load_stream (a NACK shared by two consumers)")
def case_restore_stream_shared_nack(ctx):
    # Two consumers' PELs name the same entry: XACK through one freed it under the other.
    # CVE-2026-25243's test payload of the same kind (a consumer PEL naming an entry twice) is a
    # Redis 7.2 stream (RDB type 21), which 7.0 and kvlab refuse before reading any PEL.
    fresh(ctx)
    reply = same(ctx, "RESTORE", "key", "0", STREAM_DUPLICATED_PEL)
    expect(is_error(reply, "Bad data format"), "type 21: %r" % (reply,))
    both_do(ctx, "DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1")
    try:
        reply = same(ctx, "RESTORE", "mystream", "0", STREAM_SHARED_NACK)
        expect(is_error(reply, "Bad data format"), repr(reply))
        same(ctx, "XACK", "mystream", "mygroup", "1-0")
        same(ctx, "XREADGROUP", "GROUP", "mygroup", "consumerA", "COUNT", "10", "STREAMS",
             "mystream", "0")
        same(ctx, "DEL", "mystream")
    finally:
        both_do(ctx, "DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0")


def key_in_slot(slot):
    def crc16(data):
        crc = 0
        for b in data:
            crc ^= b << 8
            for _ in range(8):
                crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
                crc &= 0xFFFF
        return crc
    for i in range(1 << 20):
        k = b"k%d" % i
        if crc16(k) % 16384 == slot:
            return k
    raise AssertionError("no key found for slot %d" % slot)


@advisory("kvlab: cluster configuration size", "-",
          "server/features/cluster.cpp ClusterConfig::parse (KVLAB CLUSTER CONFIG)")
def case_cluster_config_shard_count(ctx):
    # Shard indexes are 16-bit per slot: a configuration with 32,769 shards made the last one's
    # slot read as "not served" (index -32768), 65,537 would alias shard 0. And the duplicate-id
    # check was quadratic in the shards while every worker waited (KVLAB CLUSTER is
    # keyspace-wide): 20,000 empty shards took 6 s. More than 16,384 shards is now an error, and
    # the checks are linear.
    me = "a" * 40
    binary = ctx.kv_proc.proc.args[0]
    node = seccommon.start_kvlab(binary, ["--cluster-mode", "yes", "--cluster-node-id", me])
    try:
        c = seccommon.Client(node.port, timeout=30)

        def config(n_empty, last_slot_elsewhere):
            shards = [{"master": {"id": me, "ip": "127.0.0.1", "port": node.port},
                       "slot_ranges": [{"start": 0,
                                        "end": 16382 if last_slot_elsewhere else 16383}]}]
            shards += [{"master": {"id": "%040x" % (i + 1), "ip": "127.0.0.1", "port": 7000},
                        "slot_ranges": []} for i in range(n_empty)]
            if last_slot_elsewhere:
                shards.append({"master": {"id": "f" * 40, "ip": "127.0.0.1", "port": 7001},
                               "slot_ranges": [{"start": 16383, "end": 16383}]})
            return json.dumps({"epoch": 1, "shards": shards})

        reply = c.cmd("KVLAB", "CLUSTER", "CONFIG", config(32767, True))
        expect(is_error(reply, "more than 16384 shards"), "32,769 shards: %r" % (reply,))
        t0 = time.time()
        reply = c.cmd("KVLAB", "CLUSTER", "CONFIG", config(16382, True))
        took = time.time() - t0
        expect(reply == "OK", "16,384 shards: %r" % (reply,))
        expect(took < 2, "16,384 shards took %.1f s" % took)
        reply = c.cmd("GET", key_in_slot(16383))
        expect(is_error(reply, "MOVED 16383 127.0.0.1:7001"), "slot 16383: %r" % (reply,))
        # The slot and count arguments of the cluster commands (Redis's texts).
        for args, want in ((("CLUSTER", "GETKEYSINSLOT", "0", "-1"), "Invalid slot or number"),
                           (("CLUSTER", "GETKEYSINSLOT", "16384", "1"), "Invalid slot or number"),
                           (("CLUSTER", "COUNTKEYSINSLOT", "-1"), "Invalid slot"),
                           (("CLUSTER", "ADDSLOTSRANGE", "0", M), "not supported"),
                           (("CLUSTER", "SETSLOT", M, "STABLE"), "not supported")):
            reply = c.cmd(*args)
            expect(is_error(reply, want), "%s: %r" % (" ".join(args), reply))
        expect(c.cmd("CLUSTER", "GETKEYSINSLOT", "0", M) == [], "GETKEYSINSLOT 0 LONG_MAX")
        c.close()
    finally:
        node.stop()


# Extreme integer, float and range arguments for every command whose cost or memory they could
# choose; the replies must equal redis-server's. Random replies are compared by shape only.
SWEEP_SETUP = [
    ("SET", "s", "hello"), ("RPUSH", "l", "a", "b", "c", "a"), ("SADD", "set", "a", "b", "c"),
    ("ZADD", "z", "1", "a", "2", "b"), ("HSET", "h", "a", "1", "b", "2"),
    ("GEOADD", "g", "13.361389", "38.115556", "Palermo"),
    ("XADD", "x", "1-1", "f", "v"), ("XADD", "x", "2-1", "f", "v"),
    ("XGROUP", "CREATE", "x", "grp", "0"),
    ("XREADGROUP", "GROUP", "grp", "c", "STREAMS", "x", ">"),
]
SWEEP = [
    ("GETRANGE", "s", "0", M), ("GETRANGE", "s", MIN, M), ("GETRANGE", "s", M, MIN),
    ("SUBSTR", "s", MIN, MIN), ("SETRANGE", "s", "-1", "x"), ("SETRANGE", "new", "536870912", ""),
    ("INCRBY", "i", M), ("INCRBY", "i", "1"), ("DECRBY", "j", MIN), ("DECRBY", "j", M),
    ("INCRBYFLOAT", "f", "1e308"), ("INCRBYFLOAT", "f", "inf"), ("INCRBYFLOAT", "f", "nan"),
    ("HINCRBY", "h", "a", M), ("HINCRBY", "h", "a", "1"), ("ZINCRBY", "z", "inf", "a"),
    ("ZINCRBY", "z", "-inf", "a"), ("ZADD", "z", "nan", "x"),
    ("SETEX", "e", M, "v"), ("SETEX", "e", "-1", "v"), ("PSETEX", "e", M, "v"),
    ("SET", "e", "v", "EX", M), ("SET", "e", "v", "PX", M), ("SET", "e", "v", "EXAT", M),
    ("SET", "e", "v", "PXAT", M), ("GETEX", "s", "EX", M), ("GETEX", "s", "PX", M),
    ("EXPIRE", "s", M), ("PEXPIRE", "s", M), ("EXPIREAT", "s", M), ("PEXPIRE", "s", MIN),
    ("SETBIT", "bits", "-1", "1"), ("GETBIT", "bits", M), ("BITCOUNT", "s", M, MIN, "BIT"),
    ("BITPOS", "s", "0", M, MIN, "BIT"), ("BITPOS", "nokey", "0", "0", M, "BIT"),
    ("BITFIELD", "bf", "GET", "i65", "0"), ("BITFIELD", "bf", "GET", "u8", "-1"),
    ("LRANGE", "l", MIN, M), ("LRANGE", "l", M, MIN), ("LINDEX", "l", MIN), ("LSET", "l", M, "x"),
    ("LPOS", "l", "a", "RANK", "0"), ("LPOS", "l", "a", "RANK", M),
    ("LPOS", "l", "a", "RANK", "-1", "COUNT", "0", "MAXLEN", M), ("LPOS", "l", "a", "COUNT", "-1"),
    ("LPOS", "l", "a", "MAXLEN", "-1"), ("LPOS", "l", "a", "COUNT", M), ("LREM", "l", MIN, "zz"),
    ("LPOP", "l", "-1"), ("RPOP", "nokey", MIN), ("LPOP", "l", "0"), ("SPOP", "set", MIN),
    ("SPOP", "set", "-1"), ("SINTERCARD", "1", "set", "LIMIT", "-1"), ("SINTERCARD", M, "set"),
    ("ZRANGE", "z", MIN, M), ("ZRANGE", "z", "0", "-1", "BYSCORE", "LIMIT", MIN, M),
    ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", M, M),
    ("ZRANGEBYLEX", "z", "-", "+", "LIMIT", M, "1"), ("ZREMRANGEBYRANK", "nokey", MIN, MIN),
    ("ZPOPMIN", "nokey", "-1"), ("ZMPOP", M, "z", "MIN"), ("ZMPOP", "1", "z", "MIN", "COUNT", "0"),
    ("ZUNIONSTORE", "d", M, "z"), ("ZUNIONSTORE", "d", "1", "z", "WEIGHTS", "nan"),
    ("ZINTERCARD", "1", "z", "LIMIT", "-1"), ("ZRANGESTORE", "d", "z", MIN, M),
    ("HSCAN", "h", "0", "COUNT", M), ("HSCAN", "h", M), ("SSCAN", "set", "0", "COUNT", M),
    ("ZSCAN", "z", "0", "COUNT", MIN), ("SCAN", "18446744073709551616"), ("SCAN", "0", "COUNT", "0"),
    ("SORT", "l", "LIMIT", MIN, M, "ALPHA"), ("SORT", "l", "LIMIT", "0", MIN, "ALPHA"),
    ("SORT", "l", "BY", "nosort", "LIMIT", M, M),
    ("GEOADD", "g", "181", "0", "x"), ("GEOADD", "g", "0", "86", "x"),
    ("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "1e308", "km"),
    ("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "-1", "km"),
    ("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "inf", "km"),
    ("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "nan", "km"),
    ("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYBOX", "1e308", "1e308", "km"),
    ("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km", "COUNT", "0"),
    ("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km", "COUNT", M),
    ("GEORADIUS", "g", "15", "37", "1e300", "m", "COUNT", M, "ANY"),
    ("XRANGE", "x", "-", "+", "COUNT", M), ("XRANGE", "x", "-", "+", "COUNT", MIN),
    ("XREVRANGE", "x", "+", "-", "COUNT", "-5"),
    ("XRANGE", "x", "(18446744073709551615-18446744073709551615", "+"),
    ("XADD", "x", "MAXLEN", "~", "0", "LIMIT", "-1", "*", "f", "v"),
    ("XADD", "x", "MAXLEN", "-1", "*", "f", "v"), ("XTRIM", "x", "MAXLEN", "=", "0", "LIMIT", "10"),
    ("XADD", "x2", "18446744073709551615-18446744073709551615", "f", "v"),
    ("XADD", "x2", "*", "f", "v"), ("XADD", "x2", "18446744073709551615-*", "f", "v"),
    ("XSETID", "x2", "1-1"), ("XREADGROUP", "GROUP", "grp", "c", "COUNT", "-1", "STREAMS", "x", ">"),
    ("XCLAIM", "x", "grp", "c3", "0", "1-1", "IDLE", M), ("XCLAIM", "x", "grp", "c3", M, "1-1"),
    ("XCLAIM", "x", "grp", "c3", "0", "1-1", "RETRYCOUNT", "-1"),
    ("XPENDING", "x", "grp", "-", "+", M), ("XPENDING", "x", "grp", "IDLE", "-1", "-", "+", "10"),
    ("XINFO", "STREAM", "x", "FULL", "COUNT", "-1"), ("XREAD", "COUNT", M, "STREAMS", "x", "0"),
    ("BLPOP", "nolist", "1e300"), ("BLPOP", "nolist", "-1"), ("BLPOP", "nolist", "inf"),
    ("BLPOP", "nolist", "nan"), ("WAIT", "0", "-1"), ("CLIENT", "PAUSE", M),
    ("CLIENT", "PAUSE", "-1"), ("MEMORY", "USAGE", "x", "SAMPLES", "-1"), ("SLOWLOG", "GET", "-2"),
    ("DEBUG", "POPULATE", "-1"), ("DEBUG", "POPULATE", "10", "x", "-1"),
]
# Commands whose reply is random or holds times (idle ms): compared by kind (error text, or a
# list) only; and those whose members come in hash order: compared as sets.
SWEEP_RANDOM = {"SPOP", "XPENDING", "XINFO"}
SWEEP_UNORDERED = {"SSCAN", "SCAN"}


def unordered(reply):
    if isinstance(reply, list) and len(reply) == 2 and isinstance(reply[1], list):
        return [reply[0], sorted(reply[1])]
    return reply


@advisory("kvlab: extreme arguments", "-", "server/commands/*.cpp (every count, offset and range)")
def case_argument_extremes(ctx):
    # The argument audit of server/README.md ("Bounded work per call") as a test: 117 calls
    # with LONG_MAX, LONG_MIN, -1, 0, 2^64, inf and nan where a count, offset, range, time or
    # radius goes, each answered within 2 s and as redis-server answers.
    fresh(ctx)
    for args in SWEEP_SETUP:
        both_do(ctx, *args)
    for args in SWEEP:
        t0 = time.time()
        mine = ctx.kv.cmd(*args)
        took = time.time() - t0
        expect(took < 2, "%s took %.1f s" % (" ".join(args), took))
        if not ctx.redis:
            continue
        theirs = ctx.redis.cmd(*args)
        if args[0] in SWEEP_RANDOM and not isinstance(theirs, Error):
            mine, theirs = type(mine), type(theirs)
        if args[0] in SWEEP_UNORDERED:
            mine, theirs = unordered(mine), unordered(theirs)
        expect(mine == theirs, "%s: kvlab %r, redis-server %r" % (" ".join(args), mine, theirs))

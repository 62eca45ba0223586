#!/usr/bin/python3
"""Writes seed corpora for the lua fuzz target from script test suites.

    /usr/bin/python3 tests/fuzz/make_lua_corpus.py --kvlab         # tests/fuzz/corpus/lua (checked in)
    /usr/bin/python3 tests/fuzz/make_lua_corpus.py --redis OUT_DIR [REDIS_SCRIPTING_TCL]
        (default /var/cache/kvlab-redis-src/src/tests/unit/scripting.tcl)

Seeds, one script per file (the target's input is the script's text):
  kvlab-*.lua    the sandbox tricks, limits and struct/cmsgpack scripts of
                 tests/server/scripting_sandbox_test.cpp and tests/security/cases_lua.py, written
                 out below, so that the fuzzer starts at the guards' edges; checked in.
  redis-NNN.lua  every script body of Redis's tests/unit/scripting.tcl (`run_script {...}` and
                 `r eval {...}`): the language, the libraries and the sandbox as Redis tests them.
                 Redis's test text is not ours to check in: tests/fuzz/run.sh writes these into its
                 scratch corpus when the Debian source package is in its cache (.ci/run fetches it).
The seeds are a starting point: the fuzzer mutates them. Inputs the target skips (MIGRATE,
CLUSTER, string.rep with a pattern function: lua_fuzz.cpp) are left out. The fuzzer's finds are
added to the checked-in folder by hand (crash-* inputs, after the fix).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus", "lua")

KVLAB_SEEDS = {
    "metatable": "getmetatable('').__index = function() return 1 end return ('x'):len()",
    "metatable-fields": "local m = getmetatable('') m.__metatable = nil "
                        "rawset(m, '__index', {}) return m",
    "rawset": "for _, t in ipairs({string, redis, cjson, bit, struct, cmsgpack, _G}) do "
              "pcall(rawset, t, 'x', 1) pcall(setmetatable, t, {}) end return 1",
    "loadstring-env": "loadstring('string = nil; x = 1')() return x",
    "load-reader": "local n = 0 return load(function() n = n + 1 collectgarbage() "
                   "if n < 3 then return 'return 1 ' end end, '=c')()",
    "bytecode": "return loadstring(string.dump(function() return 7 end))",
    "unpack": "return {unpack({1,2,3}, -2, 2147483647)}",
    "unpack-ok": "return {unpack({1,2,3}, -1, 5)}",
    "tohex": "return {bit.tohex(65535, -2147483648), bit.tohex(1, 2147483648), bit.tohex(-1)}",
    "cjson-settings": "cjson.encode_max_depth(1) cjson.encode_sparse_array(true, 0, 0) "
                      "return cjson.encode({[1000]=1})",
    "cjson-new": "local j = cjson.new() j.decode_max_depth(3) return j.encode(j.decode('[[1]]'))",
    "cjson-deep": "return cjson.decode(string.rep('[', 2000) .. string.rep(']', 2000))",
    "cmsgpack": "return {cmsgpack.unpack(cmsgpack.pack({1, {a = 2.5}, 'x', true, -70000}, "
                "2^40, 0/0))}",
    "cmsgpack-limit": "local p = cmsgpack.pack(1, 2, 3) return {cmsgpack.unpack_limit(p, 2, 1), "
                      "cmsgpack.unpack_one(p, 2)}",
    "cmsgpack-bad": "return {pcall(cmsgpack.unpack, '\\221\\0\\0\\0\\9\\1')}",
    "cmsgpack-self": "local a = {} a[1] = a a[2] = a return #cmsgpack.pack(a)",
    "struct": "return {struct.unpack('>!4 b i h c0 s', struct.pack('>!4 b i h c0 s', 1, -2, 3, "
              "'ab', 'cd'))}",
    "struct-size": "return {struct.size('!8 b d i3'), pcall(struct.pack, 'i99999999999', 1)}",
    "table-remove": "local t = {1, 2, 3} table.remove(t, 0) table.insert(t, -3, 9) return t",
    "coroutine": "local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) "
                 "return b * 2 end) return {co(1), co(5)}",
    "pcall-error": "local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), e}",
    "redis-call": "redis.call('set', 'k', 'v') redis.call('rpush', 'l', 1, 2, 3) "
                  "return {redis.call('get', 'k'), redis.call('lrange', 'l', 0, -1)}",
    "memory": "local t = {} for i = 1, 64 do t[i] = string.rep('x', 2^24) .. i end return #t",
}


def tcl_bodies(text):
    """The brace-balanced bodies after `run_script {` and `r eval {`."""
    out = []
    for m in re.finditer(r"(?:run_script|r eval(?:_ro)?) \{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth > 0:
            c = text[i]
            if c == "\\":
                i += 2
                continue
            depth += (c == "{") - (c == "}")
            i += 1
        out.append(text[m.end():i - 1])
    return out


def skipped(script):
    s = script.lower()
    if "migrate" in s or "cluster" in s:
        return True
    return "rep" in s and any(w in s for w in ("find", "match", "gsub", "gmatch"))


def write_redis(out, src):
    os.makedirs(out, exist_ok=True)
    n = 0
    seen = set()
    for body in tcl_bodies(open(src, encoding="utf-8", errors="replace").read()):
        body = body.strip("\n")
        if not body.strip() or body in seen or skipped(body):
            continue
        seen.add(body)
        n += 1
        with open(os.path.join(out, "redis-%03d.lua" % n), "w") as f:
            f.write(body)
    print("%d scripts from %s in %s" % (n, src, out))


def write_kvlab():
    os.makedirs(OUT, exist_ok=True)
    for name, body in KVLAB_SEEDS.items():
        with open(os.path.join(OUT, "kvlab-%s.lua" % name), "w") as f:
            f.write(body)
    print("%d of kvlab's scripts in %s" % (len(KVLAB_SEEDS), OUT))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--redis":
        src = sys.argv[3] if len(sys.argv) > 3 else \
            "/var/cache/kvlab-redis-src/src/tests/unit/scripting.tcl"
        write_redis(sys.argv[2], src)
    elif sys.argv[1:] == ["--kvlab"]:
        write_kvlab()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

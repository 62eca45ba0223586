# Lua scripting: one case per public advisory against Redis's Lua (or against the Lua 5.1,
# lua-bitop, lua-cjson, struct and cmsgpack code it embeds) whose class applies to kvlab, which
# links Debian's liblua5.1, lua-bitop and lua-cjson and has its own struct and cmsgpack
# (server/features/lua_sandbox.hpp). Each reproduces the advisory's trigger and asserts kvlab's answer;
# where redis-server 7.0.15 (with Debian's security patches) answers the same, it is compared.
import sys

from seccommon import Error, advisory, expect


def evalr(c, script, *args):
    return c.cmd("EVAL", script, "0", *args)


def strip(reply):
    """An error reply without its ' script: <sha>, on …' tail."""
    if isinstance(reply, Error):
        return Error(reply.split(" script: ")[0])
    return reply


def short(x):
    r = repr(x)
    return r if len(r) <= 200 else r[:200] + "…"


def same_as_redis(ctx, script, expect_error=None):
    got = strip(evalr(ctx.kv, script))
    if expect_error is not None:
        expect(isinstance(got, Error) and expect_error in got,
               "%r answered %s, not an error with %r" % (script, short(got), expect_error))
    if ctx.redis is not None:
        want = strip(evalr(ctx.redis, script))
        expect(got == want, "%r: kvlab %s, redis %s" % (script, short(got), short(want)))
    return got


@advisory("CVE-2024-31449", "Redis 6.2.16, 7.2.6, 7.4.1 / Valkey 7.2.7, 8.0.1",
          "server/features/lua_sandbox.cpp l_bit_tohex")
def case_bit_tohex_min_int(ctx):
    # lua-bitop negates the count; INT32_MIN stays negative and is used as a length.
    for script in ("return bit.tohex(65535, -2147483648)", "return bit.tohex(65535, 2147483648)",
                   "return bit.tohex(-1, -2147483647)", "return bit.tohex(65535, -8)"):
        same_as_redis(ctx, script)
    expect(evalr(ctx.kv, "return bit.tohex(65535, -2147483648)") == b"0000FFFF", "tohex")


@advisory("CVE-2025-46817", "Redis 6.2.20, 7.2.11, 7.4.6, 8.2.2 / Valkey 8.1.4",
          "server/features/lua_sandbox.cpp l_unpack")
def case_unpack_range_overflow(ctx):
    for script in ("return {unpack({1,2,3}, -2, 2147483647)}",
                   "return {unpack({1,2,3}, 0, 2147483647)}",
                   "return {unpack({1,2,3}, -2147483648, -2)}"):
        same_as_redis(ctx, script, "too many results to unpack")
    listing = ("local function l(t, i, j) local n, v = select('#', unpack(t, i, j)), "
               "{unpack(t, i, j)} for k = 1, n do v[k] = v[k] or '_NIL_' end return v end ")
    for script in ("return {unpack({1,2,3}, -1, -2)}", "return {unpack({1,2,3}, 1, -1)}",
                   listing + "return l({1,2,3}, -1, 5)",
                   listing + "return l({1,2,3}, -2147483648, -2147483646)",
                   "return {unpack({1,2,3})}", "return {unpack({1,2,3}, 2)}"):
        same_as_redis(ctx, script)


@advisory("CVE-2025-46818", "Redis 6.2.20, 7.2.11, 7.4.6, 8.2.2 / Valkey 8.1.4",
          "server/commands/lua_api.cpp new_state (string metatable)")
def case_basic_type_metatables(ctx):
    # Every basic type's metatable is unreachable or read-only, as Redis's test requires.
    for script in ("getmetatable(nil).__index = function() return 1 end",
                   "getmetatable('').__index = function() return 1 end",
                   "getmetatable(123.222).__index = function() return 1 end",
                   "getmetatable(true).__index = function() return 1 end",
                   "getmetatable(function() return 1 end).__index = function() return 1 end",
                   "getmetatable(coroutine.create(function() return 1 end)).__index = "
                   "function() return 1 end",
                   "getmetatable('').__index.len = function() return 2 end",
                   "rawset(getmetatable(''), '__index', {})",
                   "setmetatable(getmetatable(''), {})",
                   # The globals' metatable (Redis's "Try trick global protection 2").
                   "local g = getmetatable(_G) g.__index = {}",
                   "rawset(getmetatable(_G), '__index', {})"):
        got = same_as_redis(ctx, script)
        expect(isinstance(got, Error) and ("attempt to index a nil value" in got or
                                           "Attempt to modify a readonly table" in got),
               "%r answered %r" % (script, got))
    for script in ("return ('x'):len()", "return tostring(getmetatable('').__index == string)",
                   "return type(getmetatable(''))",
                   "return {type(setfenv), type(getfenv), type(newproxy)}"):
        same_as_redis(ctx, script)
    # Another client sees the same strings.
    other = ctx.connect()
    expect(evalr(other, "return ('abc'):len()") == 3, "string methods changed for other clients")
    other.close()


@advisory("CVE-2025-46819", "Redis 6.2.20, 7.2.11, 7.4.6, 8.2.2 / Valkey 8.1.4",
          "server/features/lua_sandbox.cpp capped_alloc, load_text")
def case_lexer_long_delimiter(ctx):
    # Redis's triggers: a long-string delimiter of 2^30 '=' (the lexer's length overflows int)
    # and a chunk of 2^31 lines (an error before the first token read an unset token). Both need
    # more than a script's 1 GiB: kvlab answers the memory error, never reaches the lexer's bug.
    c = ctx.connect()
    c.sock.settimeout(120)
    sep = evalr(c, "local s = string.rep('=', 1024 * 1024) local t = {} for i = 1, 1024 do "
                   "t[i] = s end local sep = table.concat(t) collectgarbage('collect') "
                   "local code = table.concat({'return [', sep, '[x]', sep, ']'}) "
                   "collectgarbage('collect') return #loadstring(code)()")
    expect(isinstance(sep, Error) and "not enough memory" in sep, "delimiter: %r" % sep)
    lines = evalr(c, "local s = string.rep('\\n', 1024 * 1024) local t = {} for i = 1, 2048 "
                     "do t[#t + 1] = s end local lines = table.concat(t) "
                     "local fn, err = loadstring(lines) return err")
    expect(isinstance(lines, Error) and "not enough memory" in lines, "lines: %r" % lines)
    # Below the limit, long delimiters and many lines parse as in Redis.
    same_as_redis(ctx, "local sep = string.rep('=', 100000) "
                       "return #loadstring('return [' .. sep .. '[x]' .. sep .. ']')()")
    same_as_redis(ctx, "return loadstring(string.rep('\\n', 100000) .. 'return 5')()")
    same_as_redis(ctx, "local f, e = loadstring('return [==[x]=]') return e")
    c.close()


@advisory("CVE-2025-49844", "Redis 6.2.20, 7.2.11, 7.4.6, 8.2.2 / Valkey 8.1.4",
          "server/features/lua_sandbox.cpp load_text, l_load")
def case_parser_chunkname_gc(ctx):
    # The parser keeps the chunk name unanchored; a collection while it runs frees it. load()'s
    # reader is Lua code that can collect garbage in the middle of the parse; kvlab runs the
    # reader before parsing and anchors the name, so error messages name the chunk intact.
    script = ("local out = {} for i = 1, 200 do local n = 0 "
              "local f, e = load(function() n = n + 1 collectgarbage('collect') "
              "if n == 1 then return 'return 1 +' end if n == 2 then return ' 1 ) x' end end, "
              "'=chunk' .. i) out[#out + 1] = e end return {out[1], out[200], #out}")
    got = same_as_redis(ctx, script)
    expect(isinstance(got, list) and got[0].startswith(b"chunk1:1:"), "load: %r" % (got,))
    same_as_redis(ctx, "local f, e = load(function() collectgarbage('collect') end) "
                       "return {type(f), tostring(e)}")
    same_as_redis(ctx, "local f, e = loadstring('x ='  .. string.rep(' ', 10000), 'a\\0b') "
                       "return e")


@advisory("CVE-2024-46981", "Redis 6.2.17, 7.2.7, 7.4.2 / Valkey 7.2.8, 8.0.2",
          "server/features/lua_sandbox.cpp close_state")
def case_gc_finalizer_on_flush(ctx):
    # The trigger needs a userdata with a Lua finalizer (newproxy) and a state closed under it
    # (SCRIPT FLUSH in Redis; kvlab closes only FUNCTION LOAD's scratch state, and collects
    # before closing). newproxy is not reachable, in EVAL nor in a library.
    same_as_redis(ctx, "local a = newproxy(true) getmetatable(a).__gc = function() end",
                  "nonexistent global variable 'newproxy'")
    # A library's own code sees only the loading API (Redis 7.0): the attempt runs in a function.
    lib = ctx.kv.cmd("FUNCTION", "LOAD", "#!lua name=gclib\n"
                     "redis.register_function('gcf', function() "
                     "local ok = pcall(function() local p = newproxy(true) "
                     "getmetatable(p).__gc = function() redis.call('ping') end end) "
                     "local t = setmetatable({}, {__gc = function() error('x') end}) "
                     "return 1 end)")
    expect(lib == b"gclib", "FUNCTION LOAD: %r" % lib)
    expect(ctx.kv.cmd("FCALL", "gcf", "0") == 1, "FCALL gcf")
    for cmd in (("SCRIPT", "FLUSH"), ("FUNCTION", "FLUSH"), ("SCRIPT", "FLUSH", "ASYNC")):
        expect(ctx.kv.cmd(*cmd) == "OK", "%r" % (cmd,))
    expect(evalr(ctx.kv, "return 1") == 1, "scripts run after the flushes")


@advisory("CVE-2022-24834", "Redis 6.0.20, 6.2.13, 7.0.12",
          "server/features/lua_sandbox.cpp l_json_encode")
def case_cjson_encode_overflow(ctx):
    # lua-cjson 2.1.0 (Debian's) reserves len * 6 + 2 bytes in an int: for a string of more
    # than 357,913,941 bytes that wraps negative and the copy overruns the buffer. kvlab refuses
    # encodings that could exceed 512 MiB, for the module and for cjson.new() instances.
    c = ctx.connect()
    c.sock.settimeout(120)
    for script in ("local s = string.rep('a', 360 * 1024 * 1024) return #cjson.encode(s)",
                   "local s = string.rep('a', 360 * 1024 * 1024) return #cjson.new().encode(s)",
                   "local s = string.rep('\\1', 100 * 1024 * 1024) return #cjson.encode({s})"):
        got = evalr(c, script)
        expect(isinstance(got, Error) and "Cannot serialise, the encoding could exceed" in got,
               "%r answered %r" % (script[:60], got))
    c.close()
    same_as_redis(ctx, "return cjson.encode({1, 'a\\1\"', {b = {}}})")
    same_as_redis(ctx, "return #cjson.encode(string.rep('x', 1000000))")


@advisory("CVE-2018-11218", "Redis 3.2.12, 4.0.10 / (cmsgpack, with CVE-2022-24834)",
          "server/features/lua_cmsgpack.cpp")
def case_cmsgpack_stack_and_size(ctx):
    # Redis's cmsgpack overflowed the Lua stack with many arguments or deep input, and its
    # buffer sizes with large strings. kvlab's cmsgpack checks the stack before every push.
    for script in ("local t = {} for i = 1, 10000 do t[i] = i end "
                   "return #cmsgpack.pack(unpack(t, 1, 7000))",
                   "return {pcall(cmsgpack.unpack, string.rep('\\145', 100000) .. '\\1')}",
                   "return #{cmsgpack.unpack(string.rep('\\1', 7000))}",
                   "return {pcall(cmsgpack.unpack, string.rep('\\1', 9000))}",
                   "return {pcall(cmsgpack.unpack, '\\221\\255\\255\\255\\255')}",
                   "return {pcall(cmsgpack.unpack, '\\219\\255\\255\\255\\255ab')}",
                   "local a = {} for i = 1, 2 do a[i] = a end return #cmsgpack.pack(a)",
                   "return #cmsgpack.pack(string.rep('x', 70000))"):
        same_as_redis(ctx, script)


@advisory("CVE-2020-14147", "Redis 5.0.9, 6.0.3", "server/features/lua_struct.cpp read_size")
def case_struct_size_overflow(ctx):
    # struct's size parser overflowed int, and the negative size passed the 'i' limit.
    for script in ("return {pcall(struct.pack, 'i99999999999', 1)}",
                   "return {pcall(struct.pack, 'c2147483648', 'x')}",
                   "return {pcall(struct.unpack, '!99999999999 i', 'abcd')}",
                   "return {pcall(struct.size, 'i2147483647')}",
                   "return {pcall(struct.unpack, 'c2147483647', 'abc')}",
                   "return {pcall(struct.unpack, 'b c0', '\\255abc')}",
                   "return {pcall(struct.unpack, 'i', 'abcd', -1)}"):
        same_as_redis(ctx, script)


@advisory("CVE-2021-32626", "Redis 5.0.14, 6.0.16, 6.2.6",
          "server/commands/lua_values.cpp push_reply, lua_to_reply")
def case_lua_stack_from_replies(ctx):
    # Large and deep values crossing between RESP and Lua must check the Lua stack.
    ctx.kv.cmd("DEL", "sec:lua:list")
    for i in range(0, 20000, 1000):
        ctx.kv.cmd("RPUSH", "sec:lua:list", *[str(j) for j in range(i, i + 1000)])
    got = ctx.kv.cmd("EVAL", "return #redis.call('lrange', KEYS[1], 0, -1)", "1", "sec:lua:list")
    expect(got == 20000, "lrange in a script: %r" % got)
    got = ctx.kv.cmd("EVAL", "return redis.call('lrange', KEYS[1], 0, -1)", "1", "sec:lua:list")
    expect(isinstance(got, list) and len(got) == 20000, "returned list")
    ctx.kv.cmd("DEL", "sec:lua:list")
    # The reply nests as deep as the server converts before it meets the limit (Redis's depth
    # differs: it stops where its Lua stack ends).
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    got = evalr(ctx.kv, "local t = {} for i = 1, 100000 do t = {t} end return t")
    while isinstance(got, list) and len(got) == 1:
        got = got[0]
    expect(isinstance(got, Error) and "reached lua stack limit" in got, "deep: %s" % short(got))
    same_as_redis(ctx, "local t = {} for i = 1, 100000 do t = {t} end return {pcall(cjson.encode, t)}")
    same_as_redis(ctx, "local t = {} for i = 1, 7990 do t[i] = 'a' end "
                       "return redis.pcall('ping', unpack(t))")


@advisory("CVE-2021-32672", "Redis 6.0.16, 6.2.6", "server/commands/scripting_registry.cpp script_debug_cmd")
def case_lua_debugger_absent(ctx):
    # The bug was in the debugger's reading of its own protocol. kvlab has no debugger: SCRIPT
    # DEBUG YES is refused and the connection's scripts are refused until SCRIPT DEBUG NO, so
    # no debugger input is ever parsed.
    c = ctx.connect()
    got = c.cmd("SCRIPT", "DEBUG", "YES")
    expect(isinstance(got, Error), "SCRIPT DEBUG YES: %r" % got)
    got = evalr(c, "return 1")
    expect(isinstance(got, Error), "EVAL in a refused debug session: %r" % got)
    got = c.cmd("SCRIPT", "DEBUG", "SYNC")
    expect(isinstance(got, Error), "SCRIPT DEBUG SYNC: %r" % got)
    expect(c.cmd("SCRIPT", "DEBUG", "NO") == "OK", "SCRIPT DEBUG NO")
    expect(evalr(c, "return 1") == 1, "EVAL after SCRIPT DEBUG NO")
    c.close()


@advisory("CVE-2015-4335", "Redis 2.8.21, 3.0.2", "server/features/lua_sandbox.cpp read_text")
def case_bytecode_refused(ctx):
    # Lua 5.1 runs precompiled chunks without verifying them (arbitrary memory access). Redis
    # parses every chunk as text; so does kvlab, for EVAL, SCRIPT LOAD, FUNCTION LOAD,
    # loadstring and load, with Redis's error texts.
    for script in ("\x1bLua\x51\x00\x01\x04\x08\x04\x08\x00",
                   "local f, e = loadstring(string.dump(function() return 7 end)) "
                   "return {type(f), e}",
                   "local s = string.dump(function() return 7 end) local n = 0 "
                   "local f, e = load(function() n = n + 1 if n == 1 then return s end end) "
                   "return {type(f), e}",
                   "local f = loadstring(string.dump(function() return 7 end)) return f()"):
        same_as_redis(ctx, script)
    got = ctx.kv.cmd("SCRIPT", "LOAD", "\x1bLua\x51")
    expect(isinstance(got, Error) and "unexpected symbol" in got, "SCRIPT LOAD: %r" % got)

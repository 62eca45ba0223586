// The Lua sandbox (server/lua_sandbox.hpp): invariants that no trick of a script breaks for the
// next script, and the limits kvlab
// adds where Lua 5.1 (Debian's and Redis's alike) would crash or freeze. The public advisories
// have their cases in tests/security/cases_lua.py; this file holds what is not an advisory.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/server/harness.hpp"

using kvtest::Client;
using kvtest::RedisProcess;
using kvtest::Reply;

namespace {

std::string show(const Reply& r) {
  std::string s = std::to_string(r.type) + ":" + r.str;
  if (r.type == REDIS_REPLY_INTEGER) s += std::to_string(r.integer);
  if (!r.elements.empty()) {
    s += "[";
    for (const auto& e : r.elements) s += show(e) + ",";
    s += "]";
  }
  return s;
}

// An error reply without its " script: <sha>, on ..." tail, for comparisons across scripts.
std::string show_eval(const Reply& r) {
  if (!r.is_error()) return show(r);
  return show(r).substr(0, show(r).find(" script: "));
}

Reply eval(Client& c, const std::string& script) {
  return c.cmd({"EVAL", script, "0"});
}

// A probe of everything a script could try to change for later scripts; its answer must not
// move, whatever ran before it.
const char* kProbe =
    "return {('x'):len(), ('abc'):upper(), type(string.len), type(redis.call), "
    "type(cjson.encode), type(bit.band), "
    "cjson.encode({1, {2}}), tostring(cjson.encode_max_depth()), "
    "tostring(cjson.decode_max_depth()), tostring(cjson.encode_number_precision()), "
    "cjson.encode(0.1234567890123), cjson.encode({[1]=1, [2]=2, [4]=4}), "
    "tostring(getmetatable('').__index == string), type(getmetatable('')), "
    "type(unpack), type(loadstring), tostring(rawget(_G, 'x')), tostring(rawget(_G, 'ARGV2')), "
    "tostring(#KEYS), math.floor(3.5), table.concat({1, 2}, '-')}";

// Tricks of a hostile script; whatever each answers, none may change what kProbe sees.
const char* kTricks[] = {
    "getmetatable('').__index = function() return 1 end",
    "getmetatable('').__index.len = function() return 99 end",
    "getmetatable('').__metatable = nil",
    "rawset(getmetatable(''), '__index', {})",
    "setmetatable(getmetatable(''), {__index = function() return 1 end})",
    "rawset(getmetatable('').__index, 'len', nil)",
    "for _, t in ipairs({string, table, math, redis, cjson, bit, coroutine, _G}) "
    "do pcall(rawset, t, 'len', 1) pcall(rawset, t, 'call', 1) pcall(setmetatable, t, {}) end "
    "return 1",
    "string.len = nil",
    "redis.call = nil",
    "_G.x = 1",
    "x = 1",
    "rawset(_G, 'x', 1)",
    "setmetatable(_G, {__index = function() return 1 end})",
    "ARGV2 = 1",
    "loadstring('string = nil; x = 1')()",
    "local f = loadstring('return getmetatable(\"\")') f().__index = nil",
    "load(function() return nil end)",
    "local n = 0 load(function() n = n + 1 if n == 1 then return 'x = 1' end end)()",
    "setfenv(1, {})",
    "getfenv(1).x = 1",
    "newproxy(true)",
    "debug.setmetatable('', nil)",
    "debug.getregistry().x = 1",
    "local f = loadstring(string.dump(function() x = 1 end)) f()",
    "coroutine.wrap(function() string.len = nil end)()",
    "coroutine.wrap(function() getmetatable('').__index = nil end)()",
    "cjson.encode_max_depth(1) cjson.decode_max_depth(1) cjson.encode_number_precision(3) "
    "cjson.encode_sparse_array(true, 1, 1) cjson.encode_keep_buffer(false) "
    "cjson.encode_invalid_numbers(true) cjson.decode_invalid_numbers(false) return 1",
    "cjson.encode_max_depth(1) error('after changing cjson')",
    "local j = cjson.new() j.encode_max_depth(1) return j.encode({1})",
    "table.insert(KEYS, 'k') KEYS[1] = 'x' ARGV[1] = 'y' return 1",
    "bit.tohex = nil",
    "math.floor = function() return 0 end",
    "table.concat = nil",
};

// Scripts that Lua 5.1 (Debian's and Redis 7.0.15's) would let crash the server or hold its
// worker in C for billions of steps, with what kvlab answers instead.
struct Limit {
  const char* script;
  const char* error;  // a substring of the error reply
};
const Limit kLimits[] = {
    {"return string.find(string.rep('a', 300000), string.rep('a?', 300000))",
     "pattern too complex"},
    {"return string.match('x', string.rep('(', 3000))", "pattern too complex"},
    {"return string.gsub('x', string.rep('x*', 3000), '')", "pattern too complex"},
    {"for w in string.gmatch('x', string.rep('x-', 3000)) do end", "pattern too complex"},
    {"return string.rep('x', 2^31 - 1)", "resulting string too large"},
    {"return table.remove({1}, -2147483647)", "position out of bounds"},
    {"return table.insert({1}, -2147483647, 5)", "position out of bounds"},
    {"local t = {} for i = 1, 40 do t[i] = string.rep('x', 2^25) .. i end return #t",
     "not enough memory"},
    {"local s = string.rep('x', 1024 * 1024) local t = {} for i = 1, 600 do t[i] = s end "
     "return #cjson.encode(t)",
     "Cannot serialise, the encoding could exceed 536870912 bytes"},
};

}  // namespace

TEST_SUITE("server") {
  // One worker, so that every script runs in the same Lua state: a change a trick made to it
  // would be seen by the probe.
  TEST_CASE("no script changes what a later script sees") {
    kvtest::ServerProcess s({"--threads", "1"});
    Client c(s.port());
    REQUIRE(eval(c, kProbe).type == REDIS_REPLY_ARRAY);
    const std::string before = show(eval(c, kProbe));
    for (const char* trick : kTricks) {
      const Reply answer = eval(c, trick);
      INFO("trick: ", std::string(trick), " answered ", show(answer));
      CHECK(show(eval(c, kProbe)) == before);
      CHECK(eval(c, "return ('x'):len()").integer == 1);
    }
    // Library code (FUNCTION LOAD) runs in the same state as the scripts.
    Reply lib = c.cmd({"FUNCTION", "LOAD",
                       "#!lua name=evil\ncjson.encode_max_depth(1)\n"
                       "pcall(function() getmetatable('').__index = nil end)\n"
                       "redis.register_function('f', function() string.len = nil "
                       "return cjson.encode_max_depth() end)"});
    CHECK(lib.str == "evil");
    CHECK(c.cmd({"FCALL", "f", "0"}).is_error());
    CHECK(show(eval(c, kProbe)) == before);
    // And the same holds for redis-server, whose probe answers the same values.
    RedisProcess redis;
    if (redis.running()) {
      Client r(redis.port());
      CHECK(show(eval(r, kProbe)) == before);
    }
  }

  TEST_CASE("scripts that would crash or freeze Lua 5.1 answer an error instead") {
    kvtest::ServerProcess s({"--threads", "1"});
    Client c(s.port(), 60000);
    for (const Limit& l : kLimits) {
      const Reply r = eval(c, l.script);
      INFO("script: ", std::string(l.script), " answered ", show(r));
      CHECK(r.is_error());
      CHECK(r.str.find(l.error) != std::string::npos);
      CHECK(c.cmd({"PING"}).is_status("PONG"));
    }
    // Just inside the limits, Lua 5.1's behaviour is kept.
    CHECK(eval(c, "return #string.rep('ab', 5 * 1024 * 1024)").integer == 10 * 1024 * 1024);
    CHECK(eval(c, "return string.find(string.rep('a', 2000), string.rep('a?', 1000))").integer ==
          1);
    CHECK(eval(c, "local t = {1, 2} table.insert(t, 0, 9) return {t[0], t[2], t[3]}")
              .elements.size() == 3);
    CHECK(eval(c, "return #cjson.encode({string.rep('x', 50 * 1024 * 1024)})").integer ==
          50 * 1024 * 1024 + 4);
    // After a script that hit the memory limit, the next one runs normally.
    CHECK(eval(c, "return #string.rep('x', 1000)").integer == 1000);
  }
}

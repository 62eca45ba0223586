// Lua scripting: EVAL/EVALSHA/*_RO, SCRIPT, FCALL/FUNCTION with Redis 7.0's semantics
// and texts (compared with a real redis-server when it is installed), scripts as atomic
// operations under both --atomicity schemes, and SCRIPT KILL after busy-reply-threshold.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/harness.hpp"

using kvtest::Client;
using kvtest::Reply;

namespace {

using kvtest::RedisProcess;

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

// A FUNCTION LIST reply with each library's functions sorted.
Reply sorted_functions(Reply r) {
  for (auto& lib : r.elements)
    for (std::size_t i = 0; i + 1 < lib.elements.size(); i += 2)
      if (lib.elements[i].str == "functions")
        std::sort(lib.elements[i + 1].elements.begin(), lib.elements[i + 1].elements.end(),
                  [](const Reply& a, const Reply& b) { return show(a) < show(b); });
  return r;
}

// The connections= count of worker w in an INFO kvlab reply.
long connections_of(const std::string& info, int w) {
  const std::string tag = "kvlab_worker" + std::to_string(w) + ":";
  const std::size_t at = info.find(tag);
  if (at == std::string::npos) return -1;
  const std::size_t c = info.find("connections=", at);
  return c == std::string::npos ? -1 : std::atol(info.c_str() + c + 12);
}

template <class F>
void run_threads(int n, F&& fn) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) ts.emplace_back([&fn, i] { fn(i); });
  for (auto& t : ts) t.join();
}

// Commands whose replies must match redis-server's byte for byte (sha1s included).
const std::vector<std::vector<std::string>> kSameAsRedis = {
    {"EVAL", "return 1", "x"},
    // A call with thousands of arguments: Lua 5.1 allows a C call 8,000 stack slots.
    {"EVAL", "local a = {} for i = 1, 7999 do a[i] = 1 end "
             "return redis.call('lpush', 'manyargs', unpack(a))", "0"},
    {"EVAL", "return 1", "-1"},
    {"EVAL", "return 1", "2", "a"},
    {"EVAL", "return {1,2,3.7,'x',nil,4}", "0"},
    {"EVAL", "return {1,{2,{3,'a'}},false,true}", "0"},
    {"EVAL", "return false", "0"},
    {"EVAL", "return true", "0"},
    {"EVAL", "return -3.99", "0"},
    {"EVAL", "return nil", "0"},
    {"EVAL", "x = 1", "0"},
    {"EVAL", "return y", "0"},
    {"EVAL", "return (", "0"},
    {"EVAL", "return loadfile", "0"},
    {"EVAL", "return dofile", "0"},
    {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"},
    {"EVALSHA", "abc", "0"},
    {"EVAL", "return redis.call('nosuch')", "0"},
    // pcall catches redis.call's error as its text (Redis 7.0 replaces pcall), so error() adds a
    // position to it and error_reply() takes it; a plain Lua error stays as it was.
    {"EVAL", "local ok, e = pcall(redis.call, 'get') return {type(e), e}", "0"},
    {"EVAL", "local ok, e = pcall(redis.call, 'nosuch') error(e)", "0"},
    {"EVAL", "local ok, e = pcall(redis.call, 'nosuch') return redis.error_reply(e)", "0"},
    {"EVAL", "local ok, e = pcall(error, {err = 'MY x'}) return {tostring(ok), type(e), e}", "0"},
    {"EVAL", "local ok, e = pcall(error, {code = 1}) return {tostring(ok), type(e)}", "0"},
    {"EVAL", "local ok, e = pcall(function() error('x') end) return {tostring(ok), e}", "0"},
    {"EVAL", "return {pcall(function(a, b) return a + b, 'r' end, 2, 3)}", "0"},
    {"EVAL", "return pcall()", "0"},
    {"EVAL", "return redis.pcall('nosuch')", "0"},
    {"EVAL", "return redis.call()", "0"},
    {"EVAL", "return redis.call('get', {})", "0"},
    {"EVAL", "return redis.call('incr', KEYS[1], 'x')", "1", "k"},
    {"EVAL", "return redis.call('multi')", "0"},
    {"EVAL", "return redis.call('blpop', KEYS[1], 0)", "1", "k"},
    {"EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v"},
    {"EVAL", "return redis.call('get', KEYS[1])", "1", "k"},
    {"EVAL", "return redis.call('incr', KEYS[1])", "1", "k"},
    {"EVAL", "return redis.pcall('incr', KEYS[1])", "1", "k"},
    {"EVAL", "local r = redis.pcall('incr', KEYS[1]); return r.err", "1", "k"},
    {"EVAL", "local r = redis.call('set', KEYS[1], 'v'); return r.ok", "1", "k"},
    {"EVAL", "return redis.call('get', KEYS[1]) == false", "1", "nokey"},
    {"EVAL", "return redis.call('rpush', KEYS[1], 1, 2.5, 'c')", "1", "l"},
    {"EVAL", "return redis.call('lrange', KEYS[1], 0, -1)", "1", "l"},
    {"EVAL_RO", "return redis.call('set', KEYS[1], 'x')", "1", "k"},
    {"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"},
    {"EVAL", "error('boom')", "0"},
    {"EVAL", "error({err='MY boom'})", "0"},
    {"EVAL", "return {err='x y'}", "0"},
    {"EVAL", "return {ok='fine'}", "0"},
    {"EVAL", "return redis.error_reply('E1 bad')", "0"},
    {"EVAL", "return redis.status_reply('S')", "0"},
    {"EVAL", "return redis.sha1hex('abc')", "0"},
    {"EVAL", "return redis.sha1hex()", "0"},
    {"EVAL", "redis.log(9, 'x')", "0"},
    {"EVAL", "redis.log(1)", "0"},
    {"EVAL", "redis.setresp(4)", "0"},
    {"EVAL", "redis.set_repl(9)", "0"},
    {"EVAL", "return redis.error_reply()", "0"},
    {"EVAL", "return redis.status_reply(5)", "0"},
    {"EVAL", "return redis.error_reply('x')", "0"},
    {"EVAL", "return redis.error_reply('-x y')", "0"},
    {"EVAL", "error(nil)", "0"},
    {"EVAL", "error(true)", "0"},
    {"EVAL", "error(5)", "0"},
    {"EVAL", "local function f() return f() + 1 end return f()", "0"},
    {"EVAL", "return {1, {err='inner'}, 3}", "0"},
    {"EVAL", "return redis.REDIS_VERSION_NUM >= 0x070000", "0"},
    {"EVAL", "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
     "0"},
    {"EVAL", "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_ALL}", "0"},
    {"EVAL", "return redis.setresp(2)", "0"},
    {"EVAL", "redis.set_repl(redis.REPL_ALL); return redis.replicate_commands()", "0"},
    {"EVAL", "return cjson.encode({1,2})", "0"},
    {"EVAL", "return cjson.decode('[1,2,3]')[3]", "0"},
    {"EVAL", "return bit.band(12, 10)", "0"},
    {"EVAL", "return type(math.random())", "0"},
    {"EVAL", "redis.x = 1", "0"},
    {"EVAL", "string.x = 1", "0"},
    {"EVAL", "rawset(_G, 'x', 1)", "0"},
    {"EVAL", "setmetatable(_G, nil)", "0"},
    {"EVAL", "_G.x = 1", "0"},
    {"EVAL", "local n = 0 for k, v in pairs(redis) do n = n + 1 end return n", "0"},
    {"EVAL", "return {('ab'):rep(2), table.concat({1, 2}, ','), cjson.encode({a = 1})}", "0"},
    {"EVAL", "return {type(print), type(os), type(io), type(require), type(debug)}", "0"},
    {"EVAL", "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'b')", "1", "k"},
    {"EVAL", "#!lua flags=bogus\nreturn 1", "0"},
    {"EVAL", "#!lua name=x\nreturn 1", "0"},
    {"EVAL", "#!luax\nreturn 1", "0"},
    {"EVAL", "#!lua\nreturn 1", "0"},
    {"EVAL_RO", "#!lua\nreturn 1", "0"},
    {"EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"},
    // A shebang script is compiled before its flags are checked.
    {"EVAL_RO", "#!lua\nreturn (", "0"},
    // Redis flags PUBLISH, SPUBLISH and PFCOUNT may_replicate: no read-only script runs them.
    {"EVAL_RO", "return redis.call('publish', 'ch', 'msg')", "0"},
    {"EVAL_RO", "return redis.call('pfcount', KEYS[1])", "1", "hll"},
    {"EVAL", "#!lua flags=no-writes\nreturn redis.call('spublish', KEYS[1], 'msg')", "1", "ch"},
    {"EVAL", "return redis.call('publish', 'ch', 'msg')", "0"},
    {"EVAL", "return redis.call('pfcount', KEYS[1])", "1", "hll"},
    {"SCRIPT", "LOAD", "return 'loaded'"},
    {"SCRIPT", "EXISTS", "9ed1c4a1e8a8b1ff4d6e4bbbc2a1f1b3c5f0b10b", "nosuch"},
    {"SCRIPT", "FLUSH", "x"},
    {"SCRIPT", "KILL"},
    {"FUNCTION", "KILL"},
    {"SCRIPT", "HELP"},
    {"FUNCTION", "LOAD", "return 1"},
    {"FUNCTION", "LOAD",
     "#!lua name=mylib\nredis.register_function('f1', function(keys, args) return "
     "keys[1]..(args[1] or '') end)\nredis.register_function{function_name='f2', "
     "callback=function(k, a) return redis.call('set', k[1], a[1]) end, flags={'no-writes'}}"},
    {"FUNCTION", "LOAD",
     "#!lua name=mylib\nredis.register_function('f1', function() return 1 end)"},
    {"FUNCTION", "LOAD", "#!lua name=l2\nreturn 1"},
    {"FUNCTION", "LOAD", "#!lua name=l2\nredis.register_function('f1', function() return 1 end)"},
    {"FUNCTION", "LOAD",
     "#!lua name=t\nredis.register_function('a', function() return 1 end)\nredis.call('set', 'x', "
     "'y')"},
    {"FUNCTION", "LOAD", "#!lua name=t\nredis.register_function('a', 5)"},
    {"FUNCTION", "LOAD",
     "#!lua name=t\nredis.register_function{function_name='a', callback=function() end, "
     "flags={'bad'}}"},
    {"FUNCTION", "LOAD", "#!lua name=t\nredis.register_function{callback=function() end}"},
    {"FUNCTION", "LOAD", "#!lua name=t2 foo=bar\nreturn 1"},
    {"FUNCTION", "LOAD", "#!lua\nreturn 1"},
    {"FUNCTION", "LOAD", "#!lua name=a-b\nreturn 1"},
    // Redis 7.0 answers a bad function name with its text for library names (found by node-redis).
    {"FUNCTION", "LOAD", "#!lua name=t3\nredis.register_function('bad name!', function() end)"},
    {"EVAL", "redis.call('set', KEYS[1], 0.1) return redis.call('get', KEYS[1])", "1", "f"},
    {"EVAL", "return {1e20, -1e20}", "0"},
    // A result is read without metamethods (the globals' proxy raises for missing names).
    {"EVAL", "return _G", "0"},
    {"EVAL", "return {string, _G, 1}", "0"},
    {"EVAL", "return setmetatable({1}, {__index = function() error('x') end})", "0"},
    {"FCALL", "f1", "1", "k", "a"},
    {"FCALL", "f2", "1", "k", "a"},
    {"FCALL_RO", "f1", "1", "k", "a"},
    {"FCALL", "nosuch", "0"},
    {"FCALL", "f1", "-1"},
    {"FUNCTION", "LIST"},
    {"FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "my*"},
    {"FUNCTION", "LIST", "LIBRARYNAME", "zz*"},
    {"FUNCTION", "STATS"},
    {"FUNCTION", "LIST", "bogus"},
    {"FUNCTION", "LIST", "LIBRARYNAME"},
    {"FUNCTION", "LIST", "WITHCODE", "WITHCODE"},
    {"FUNCTION", "LOAD", "foo", "#!lua name=x\nreturn 1"},
    {"FUNCTION", "LOAD", "REPLACE", "foo", "x"},
    {"FUNCTION", "RESTORE", "x", "bogus"},
    {"FUNCTION", "FLUSH", "bogus"},
    {"FUNCTION", "DELETE"},
    {"SCRIPT", "EXISTS"},
    {"FUNCTION", "DELETE", "nosuch"},
    {"FUNCTION", "DELETE", "mylib"},
    {"FCALL", "f1", "0"},
    {"CONFIG", "SET", "busy-reply-threshold", "250"},
    {"CONFIG", "GET", "lua-time-limit"},
};

// One step of a transcript compared with redis-server: a command, and a prefix its reply's text
// must start with on kvlab (checked also without redis-server; empty: no such check). The
// command "STATS" stands for the statistics a script's errors move (see stats_of).
struct Step {
  std::vector<std::string> args;
  std::string want;
};

// INFO's error figures and the calls, rejected and failed calls of the commands in `names`, with
// the times left out (they differ between servers).
std::string stats_of(Client& c, const std::vector<std::string>& names) {
  std::string out;
  const std::string cmdstats = c.cmd({"INFO", "commandstats"}).str;
  for (const auto& n : names) {
    const std::size_t at = cmdstats.find("cmdstat_" + n + ":");
    if (at == std::string::npos) {
      out += n + ":- ";
      continue;
    }
    const std::string line = cmdstats.substr(at, cmdstats.find("\r\n", at) - at);
    const std::size_t calls = line.find("calls=");
    const std::size_t rejected = line.find("rejected_calls=");
    out += n + ":" + line.substr(calls, line.find(',', calls) - calls) + "," +
           line.substr(rejected) + " ";
  }
  std::string errs = c.cmd({"INFO", "errorstats"}).str;
  errs.erase(0, errs.find("\r\n") + 2);  // the section's title
  out += errs;
  const std::string st = c.cmd({"INFO", "stats"}).str;
  const std::size_t t = st.find("total_error_replies:");
  out += st.substr(t, st.find("\r\n", t) - t);
  return out;
}

// Runs the steps on a fresh kvlab-server and, when installed, a fresh redis-server, comparing
// each reply (and each STATS figure) with Redis's.
void run_against_redis(const std::vector<Step>& steps, const std::vector<std::string>& names) {
  kvtest::ServerProcess s({"--threads", "2"});
  RedisProcess redis;
  if (!redis.running()) MESSAGE("redis-server not installed: comparison skipped");
  Client k(s.port());
  std::unique_ptr<Client> r;
  if (redis.running()) r = std::make_unique<Client>(redis.port());
  for (const Step& step : steps) {
    INFO("command: ", step.args[0], " ", step.args.size() > 1 ? step.args[1] : "", " ",
         step.args.size() > 2 ? step.args[2] : "");
    if (step.args[0] == "STATS") {
      const std::string got = stats_of(k, names);
      if (!step.want.empty()) CHECK(got.find(step.want) != std::string::npos);
      if (r) CHECK(got == stats_of(*r, names));
      k.cmd({"CONFIG", "RESETSTAT"});
      if (r) r->cmd({"CONFIG", "RESETSTAT"});
      continue;
    }
    const Reply got = k.cmd(step.args);
    if (!step.want.empty()) CHECK(got.str.starts_with(step.want));
    if (r) CHECK(show(got) == show(r->cmd(step.args)));
  }
}

constexpr const char* kOomText = "OOM command not allowed when used memory > 'maxmemory'.";
constexpr const char* kNoReplicasText = "NOREPLICAS Not enough good replicas to write.";
// A library with a function that writes, one flagged allow-oom and one flagged no-writes.
constexpr const char* kFlagsLibrary =
    "#!lua name=flagslib\n"
    "redis.register_function('w', function(k) return redis.call('set', k[1], 'w') end)\n"
    "redis.register_function{function_name='ao', callback=function(k) return redis.call('set', "
    "k[1], 'ao') end, flags={'allow-oom'}}\n"
    "redis.register_function{function_name='nw', callback=function(k) return redis.call('get', "
    "k[1]) end, flags={'no-writes'}}";

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("scripts answer like redis-server: conversions, errors, SCRIPT and FUNCTION") {
    kvtest::ServerProcess s({"--threads", "2"});
    RedisProcess redis;
    if (!redis.running()) MESSAGE("redis-server not installed: comparison skipped");
    Client k(s.port());
    std::unique_ptr<Client> r;
    if (redis.running()) r = std::make_unique<Client>(redis.port());
    for (const auto& args : kSameAsRedis) {
      const Reply got = k.cmd(args);
      if (r) {
        const Reply want = r->cmd(args);
        INFO("command: ", args[0], " ", args.size() > 1 ? args[1] : "");
        if (args[0] == "FUNCTION" && args[1] == "LIST") {
          // Redis lists a library's functions in its dictionary's random order.
          CHECK(show(sorted_functions(got)) == show(sorted_functions(want)));
        } else {
          CHECK(show(got) == show(want));
        }
      }
    }
  }

  TEST_CASE("under OOM a script's first write and a script that may write are refused") {
    run_against_redis(
        {
            {{"FUNCTION", "LOAD", kFlagsLibrary}, "flagslib"},
            {{"SET", "x", "123"}, "OK"},
            {{"CONFIG", "SET", "maxmemory", "1"}, "OK"},
            {{"SET", "y", "1"}, kOomText},
            // No shebang: judged by what it calls. Reads run; the first write is refused.
            {{"EVAL", "redis.call('set', 'x', 1) return 1", "1", "x"}, kOomText},
            {{"EVAL", "return redis.call('get', 'x')", "1", "x"}, "123"},
            {{"EVAL_RO", "return redis.call('get', 'x')", "1", "x"}, "123"},
            {{"EVAL", "local t = redis.pcall('set', 'x', 'y') return t['err']", "1", "x"},
             kOomText},
            // With a shebang: refused before it runs unless no-writes or allow-oom.
            {{"EVAL", "#!lua flags=\nreturn 1", "0"}, kOomText},
            {{"EVAL", "#!lua\nreturn 1", "0"}, kOomText},
            {{"EVAL_RO", "#!lua\nreturn 1", "0"}, kOomText},
            {{"EVAL", "#!lua flags=allow-oom\nredis.call('set', 'x', 1) return 1", "1", "x"}, ""},
            {{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get', 'x')", "1", "x"}, "1"},
            {{"FCALL", "w", "1", "x"}, kOomText},
            {{"FCALL", "ao", "1", "x"}, "OK"},
            {{"FCALL", "nw", "1", "x"}, "ao"},
            {{"FCALL_RO", "nw", "1", "x"}, "ao"},
            {{"FUNCTION", "LOAD", "#!lua name=l2\nredis.register_function('f', function() end)"},
             kOomText},
            {{"FUNCTION", "RESTORE", "payload"}, kOomText},
            {{"MULTI"}, "OK"},
            {{"EVAL", "return 1", "0"}, kOomText},
            {{"EXEC"}, "EXECABORT"},
            // Counted once, where it arises: a rejected SET, a failed EVAL, one OOM error.
            {{"CONFIG", "RESETSTAT"}, "OK"},
            {{"EVAL", "return redis.call('set', 'x', 'y')", "1", "x"}, kOomText},
            {{"STATS"}, "set:calls=0,rejected_calls=1,failed_calls=0"},
            {{"EVAL", "return redis.pcall('set', 'x', 'y')", "1", "x"}, kOomText},
            {{"STATS"}, "errorstat_OOM:count=1"},
            {{"EVAL", "local t = redis.pcall('set', 'x', 'y') return 1", "1", "x"}, ""},
            {{"STATS"}, "eval:calls=1,rejected_calls=0,failed_calls=0"},
            {{"EVAL", "#!lua\nreturn 1", "0"}, kOomText},
            {{"STATS"}, "eval:calls=0,rejected_calls=1,failed_calls=0"},
            {{"CONFIG", "SET", "maxmemory", "0"}, "OK"},
            {{"FCALL", "w", "1", "x"}, "OK"},
        },
        {"set", "eval", "select"});
  }

  TEST_CASE("a script's command errors are counted once, where the command replies them") {
    run_against_redis(
        {
            {{"CONFIG", "RESETSTAT"}, "OK"},
            {{"EVAL", "return redis.call('select', 99)", "0"}, "ERR DB index is out of range"},
            {{"STATS"}, "select:calls=1,rejected_calls=0,failed_calls=1"},
            {{"EVAL", "local t = redis.pcall('select', 99) return t['err']", "0"}, "ERR DB"},
            {{"STATS"}, "errorstat_ERR:count=1"},
            {{"EVAL", "return redis.pcall('select', 99)", "0"}, "ERR DB"},
            {{"STATS"}, "total_error_replies:1"},
            {{"EVAL_RO", "local t = redis.pcall('set', 'x', 'y') return t['err']", "1", "x"},
             "ERR Write commands"},
            {{"STATS"}, "set:calls=0,rejected_calls=1,failed_calls=0"},
            {{"EVAL", "return tostring(redis.pcall('nosuch')['ignore_error_stats_update'])", "0"},
             "true"},
            {{"STATS"}, "errorstat_ERR:count=1"},
            {{"EVAL", "return tostring(redis.pcall()['ignore_error_stats_update'])", "0"}, "nil"},
            {{"STATS"}, "total_error_replies:0"},
            {{"EVAL", "return redis.pcall('get')", "0"}, "ERR Wrong number"},
            {{"STATS"}, "get:calls=0,rejected_calls=1,failed_calls=0"},
            {{"EVAL", "return redis.error_reply('MY code')", "0"}, "MY code"},
            {{"STATS"}, "errorstat_MY:count=1"},
        },
        {"set", "get", "eval", "eval_ro", "select"});
  }

  TEST_CASE("min-replicas-to-write refuses writes and scripts that may write: NOREPLICAS") {
    run_against_redis(
        {
            {{"FUNCTION", "LOAD", kFlagsLibrary}, "flagslib"},
            {{"SET", "x", "v"}, "OK"},
            {{"CONFIG", "SET", "min-replicas-to-write", "1"}, "OK"},
            {{"SET", "x", "1"}, kNoReplicasText},
            {{"GET", "x"}, "v"},
            {{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get', 'x')", "1", "x"}, "v"},
            {{"EVAL", "return redis.call('get', 'x')", "1", "x"}, "v"},
            {{"EVAL", "#!lua\nreturn redis.call('get', 'x')", "1", "x"}, kNoReplicasText},
            {{"EVAL_RO", "#!lua\nreturn 1", "0"}, kNoReplicasText},
            {{"EVAL", "return redis.call('set', 'x', 1)", "1", "x"}, kNoReplicasText},
            {{"EVAL", "return redis.pcall('set', 'x', 1)", "1", "x"}, kNoReplicasText},
            {{"FCALL", "w", "1", "x"}, kNoReplicasText},
            {{"FCALL", "nw", "1", "x"}, "v"},
            {{"MULTI"}, "OK"},
            {{"SET", "x", "2"}, kNoReplicasText},
            {{"EXEC"}, "EXECABORT"},
            {{"CONFIG", "SET", "min-replicas-max-lag", "0"}, "OK"},
            {{"SET", "x", "2"}, "OK"},
            {{"CONFIG", "SET", "min-replicas-max-lag", "10"}, "OK"},
            {{"SET", "x", "3"}, kNoReplicasText},
            {{"CONFIG", "SET", "min-replicas-to-write", "0"}, "OK"},
            {{"SET", "x", "3"}, "OK"},
            {{"CONFIG", "GET", "min-slaves-to-write"}, ""},
        },
        {});
  }

  TEST_CASE("Lua values convert both ways as Redis 7.0 documents") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client c(s.port());
    // Lua -> reply: false is a nil bulk, true is 1, numbers are truncated, arrays stop at nil.
    CHECK(c.cmd({"EVAL", "return false", "0"}).is_nil());
    CHECK(c.cmd({"EVAL", "return true", "0"}).integer == 1);
    CHECK(c.cmd({"EVAL", "return 3.99", "0"}).integer == 3);
    CHECK(c.cmd({"EVAL", "return -3.99", "0"}).integer == -3);
    const Reply arr = c.cmd({"EVAL", "return {1, 'two', nil, 4}", "0"});
    REQUIRE(arr.type == REDIS_REPLY_ARRAY);
    CHECK(arr.elements.size() == 2);
    CHECK(arr.elements[1].str == "two");
    CHECK(c.cmd({"EVAL", "return {ok='fine'}", "0"}).is_status("fine"));
    CHECK(c.cmd({"EVAL", "return {err='MINE failed'}", "0"}).str == "MINE failed");
    // Reply -> Lua: nil is false, an integer a number, a status {ok=...}, an error {err=...}.
    CHECK(c.cmd({"EVAL", "return redis.call('get', KEYS[1]) == false", "1", "none"}).integer == 1);
    CHECK(c.cmd({"EVAL", "return type(redis.call('incr', KEYS[1]))", "1", "n"}).str == "number");
    CHECK(c.cmd({"EVAL", "return redis.call('set', KEYS[1], 'x').ok", "1", "s"}).str == "OK");
    CHECK(c.cmd({"EVAL", "return redis.pcall('incr', KEYS[1]).err", "1", "s"}).str ==
          "ERR value is not an integer or out of range");
    CHECK(
        c.cmd({"EVAL", "return #redis.call('mget', KEYS[1], KEYS[2])", "2", "s", "none"}).integer ==
        2);
    CHECK(c.cmd({"EVAL", "x = 5", "0"}).str ==
          "ERR user_script:1: Attempt to modify a readonly table script: "
          "818a330663e3c3e78469660421595218e5ab5c48, on @user_script:1.");
    CHECK(c.cmd({"EVAL", "return redis.call('nosuch')", "0"}).str ==
          "ERR Unknown Redis command called from script script: "
          "206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1.");
    CHECK(c.cmd({"EVAL", "return 1", "2", "a"}).str ==
          "ERR Number of keys can't be greater than number of args");
    CHECK(c.cmd({"EVAL", "return 1", "-1"}).str == "ERR Number of keys can't be negative");
    CHECK(c.cmd({"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"}).str ==
          "NOSCRIPT No matching script. Please use EVAL.");
    CHECK(c.cmd({"EVAL", "return redis.setresp(3)", "0"}).is_nil());  // RESP3 is supported
    CHECK(c.cmd({"EVAL", "return redis.setresp(5)", "0"}).is_error());
  }

  TEST_CASE("the script cache and the function libraries are shared by every worker") {
    kvtest::ServerProcess s({"--threads", "2"});
    std::vector<std::unique_ptr<Client>> cs;
    for (int i = 0; i < 6; ++i) cs.push_back(std::make_unique<Client>(s.port()));
    const std::string sha = cs[0]->cmd({"SCRIPT", "LOAD", "return 'hi'"}).str;
    CHECK(sha.size() == 40);
    CHECK(cs[0]
              ->cmd({"FUNCTION", "LOAD",
                     "#!lua name=lib\nredis.register_function('hi', function() return 'v1' end)"})
              .str == "lib");
    for (auto& c : cs) {  // compiled on every worker
      CHECK(c->cmd({"EVALSHA", sha, "0"}).str == "hi");
      CHECK(c->cmd({"FCALL", "hi", "0"}).str == "v1");
    }
    CHECK(cs[1]
              ->cmd({"FUNCTION", "LOAD", "REPLACE",
                     "#!lua name=lib\nredis.register_function('hi', function() return 'v2' end)"})
              .str == "lib");
    CHECK(cs[1]->cmd({"SCRIPT", "FLUSH"}).is_status("OK"));
    for (auto& c : cs) {
      CHECK(c->cmd({"EVALSHA", sha, "0"}).str == "NOSCRIPT No matching script. Please use EVAL.");
      CHECK(c->cmd({"FCALL", "hi", "0"}).str == "v2");
    }
    const std::string dump = cs[0]->cmd({"FUNCTION", "DUMP"}).str;
    CHECK(cs[2]->cmd({"FUNCTION", "FLUSH"}).is_status("OK"));
    for (auto& c : cs) CHECK(c->cmd({"FCALL", "hi", "0"}).str == "ERR Function not found");
    CHECK(cs[3]->cmd({"FUNCTION", "RESTORE", dump}).is_status("OK"));
    for (auto& c : cs) CHECK(c->cmd({"FCALL", "hi", "0"}).str == "v2");
    // Redis 7.0's texts: RESTORE does not quote the name, LOAD does.
    CHECK(cs[3]->cmd({"FUNCTION", "RESTORE", dump}).str == "ERR Library lib already exists");
    CHECK(cs[3]
              ->cmd({"FUNCTION", "LOAD",
                     "#!lua name=lib\nredis.register_function('hi', function() return 1 end)"})
              .str == "ERR Library 'lib' already exists");
    CHECK(cs[3]->cmd({"FUNCTION", "RESTORE", "garbage"}).str ==
          "ERR DUMP payload version or checksum are wrong");
    // Both workers built a Lua state and a scratch state (FUNCTION LOAD, RESTORE). A graceful
    // stop closes them as the workers exit: in CI's ASan build, LeakSanitizer turns a state left
    // open into a non-zero exit status.
    CHECK(s.stop() == 0);
  }

  // kvlab has no Lua debugger. redis-cli --ldb sends SCRIPT DEBUG YES, ignores the answer and
  // sends EVAL, which Redis would run in a throw-away fork: kvlab must not run it for real.
  // Redis 7.0.15 itself dies on the first of these; kvlab answers an error and stays up.
  TEST_CASE("an error object with metamethods is read without running them") {
    kvtest::ServerProcess s({"--threads", "1"});
    Client c(s.port());
    const Reply plain =
        c.cmd({"EVAL", "error(setmetatable({}, {__index = function() error('x') end}))", "0"});
    CHECK(plain.is_error());
    CHECK(plain.str.rfind("ERR unknown error", 0) == 0);
    const Reply coded =
        c.cmd({"EVAL", "error(setmetatable({err = 'E1 x'}, {__index = function() error('y') end}))",
               "0"});
    CHECK(coded.str.rfind("E1 x script: ", 0) == 0);
    // A library's code sees only the loading API (Redis 7.0): no error() at load time.
    const Reply lib = c.cmd({"FUNCTION", "LOAD",
                             "#!lua name=z\nerror(setmetatable({}, {__index = function() "
                             "error('x') end}))"});
    CHECK(lib.str.find("nonexistent global variable 'error'") != std::string::npos);
    // A function raises it when it runs.
    CHECK(c.cmd({"FUNCTION", "LOAD",
                 "#!lua name=z2\nredis.register_function('raise', function() "
                 "error(setmetatable({}, {__index = function() error('x') end})) end)"})
              .str == "z2");
    CHECK(c.cmd({"FCALL", "raise", "0"}).str.rfind("ERR unknown error", 0) == 0);
    CHECK(c.cmd({"PING"}).is_status("PONG"));
  }

  TEST_CASE("SCRIPT DEBUG YES is refused and keeps the connection's scripts from running") {
    kvtest::ServerProcess s({"--threads", "1"});
    Client c(s.port()), other(s.port());
    const std::string body = "redis.call('SET', KEYS[1], 'written') return 1";
    const std::string sha = c.cmd({"SCRIPT", "LOAD", body}).str;
    CHECK(c.cmd({"SCRIPT", "DEBUG", "YES"}).is_error());
    CHECK(c.cmd({"EVAL", body, "1", "k"}).is_error());
    CHECK(c.cmd({"EVALSHA", sha, "1", "k"}).is_error());
    CHECK(c.cmd({"EVAL_RO", "return 1", "0"}).is_error());
    CHECK(c.cmd({"GET", "k"}).is_nil());                       // nothing ran
    CHECK(other.cmd({"EVAL", "return 7", "0"}).integer == 7);  // only that connection
    CHECK(c.cmd({"SCRIPT", "DEBUG", "SYNC"}).is_error());
    CHECK(c.cmd({"EVAL", body, "1", "k"}).is_error());
    CHECK(c.cmd({"SCRIPT", "DEBUG", "maybe"}).str == "ERR Use SCRIPT DEBUG YES/SYNC/NO");
    CHECK(c.cmd({"SCRIPT", "DEBUG", "NO"}).is_status("OK"));
    CHECK(c.cmd({"EVAL", body, "1", "k"}).integer == 1);
    CHECK(c.cmd({"GET", "k"}).str == "written");
    CHECK(c.cmd({"MULTI"}).is_status("OK"));
    CHECK(c.cmd({"SCRIPT", "DEBUG", "YES"}).is_status("QUEUED"));
    const Reply exec = c.cmd({"EXEC"});
    REQUIRE(exec.elements.size() == 1);
    CHECK(exec.elements[0].str == "ERR SCRIPT DEBUG must be called outside a pipeline");
    CHECK(c.cmd({"EVAL", "return 2", "0"}).integer == 2);
    c.append({"PING"});  // one write: PING's reply still waits when SCRIPT DEBUG runs
    c.append({"SCRIPT", "DEBUG", "NO"});
    CHECK(c.get_reply().is_status("PONG"));
    CHECK(c.get_reply().str == "ERR SCRIPT DEBUG must be called outside a pipeline");
  }

  TEST_CASE("undeclared keys work as in Redis; --lua-undeclared-keys no refuses them") {
    const std::string script = "return redis.call('incr', 'other')";
    {
      kvtest::ServerProcess s({"--threads", "2", "--atomicity", "key-locks"});
      Client c(s.port());
      CHECK(c.cmd({"EVAL", script, "0"}).integer == 1);
      CHECK(c.cmd({"EVAL", "return #redis.call('keys', '*')", "0"}).integer == 1);
      CHECK(c("CONFIG GET kvlab-lua-undeclared-keys").elements.at(1).str == "yes");
    }
    {
      kvtest::ServerProcess s(
          {"--threads", "2", "--atomicity", "key-locks", "--lua-undeclared-keys", "no"});
      Client c(s.port());
      const Reply r = c.cmd({"EVAL", script, "1", "k"});
      CHECK(r.str.starts_with("ERR Script attempted to access a non-declared key: other"));
      CHECK(c.cmd({"EVAL", "return redis.call('keys', '*')", "0"}).is_error());
      CHECK(c.cmd({"EVAL", "return redis.call('incr', KEYS[1])", "1", "other"}).integer == 1);
      CHECK(c("CONFIG GET kvlab-lua-undeclared-keys").elements.at(1).str == "no");
    }
    {
      kvtest::ServerProcess s(
          {"--threads", "2", "--atomicity", "global", "--lua-undeclared-keys", "no"});
      Client c(s.port());
      CHECK(c.cmd({"EVAL", script, "0"}).integer == 1);
    }
  }

  // Property: a script is one atomic operation. Three clients move amounts between 50 accounts
  // with a transfer script (two declared keys, a pause between the debit and the credit); an
  // audit script that reads all 50 accounts in one EVAL always sees the exact total. Checked
  // under every scheme: with the audit declaring its keys (--lua-undeclared-keys no), and with an
  // audit that declares none (the default: it holds the whole keyspace, the world stripe).
  TEST_CASE("a script is atomic: audits of 50 accounts always see the exact total") {
    struct Variant {
      std::vector<std::string> flags;
      bool declare;
    };
    const std::vector<Variant> variants = {
        {{"--atomicity", "global"}, true},
        {{"--atomicity", "key-locks", "--lua-undeclared-keys", "no"}, true},
        {{"--atomicity", "key-locks"}, false},
        {{"--atomicity", "stripes"}, false},
    };
    constexpr int kAccounts = 50;
    const std::string transfer =
        "local a = tonumber(redis.call('get', KEYS[1]))\n"
        "redis.call('set', KEYS[1], a - ARGV[1])\n"
        "for i = 1, 20000 do end\n"
        "local b = tonumber(redis.call('get', KEYS[2]))\n"
        "redis.call('set', KEYS[2], b + ARGV[1])\n"
        "return 1";
    const std::string audit_declared =
        "local s = 0 for i = 1, #KEYS do s = s + tonumber(redis.call('get', KEYS[i])) "
        "for j = 1, 600 do end end return s";
    const std::string audit_undeclared =
        "local s = 0 for i = 0, 49 do s = s + tonumber(redis.call('get', 'acct:' .. i)) "
        "for j = 1, 600 do end end return s";
    for (const auto& v : variants) {
      std::vector<std::string> flags = {"--threads", "2"};
      flags.insert(flags.end(), v.flags.begin(), v.flags.end());
      kvtest::ServerProcess s(flags);
      {
        Client c(s.port());
        for (int i = 0; i < kAccounts; ++i) c.cmd({"SET", "acct:" + std::to_string(i), "1000"});
      }
      // Four clients spread over both workers (the kernel picks a worker per connection), so
      // that audits and transfers really run in parallel.
      std::vector<std::unique_ptr<Client>> clients;
      for (int attempt = 0; attempt < 20; ++attempt) {
        clients.clear();
        for (int i = 0; i < 4; ++i) clients.push_back(std::make_unique<Client>(s.port()));
        const std::string info = clients[0]->cmd({"INFO", "kvlab"}).str;
        if (connections_of(info, 0) > 0 && connections_of(info, 1) > 0) break;
      }
      std::atomic<bool> stop{false};
      std::atomic<long> audits{0}, bad{0}, transfers{0};
      run_threads(4, [&](int t) {
        Client& c = *clients[static_cast<std::size_t>(t)];
        if (t == 3) {
          std::vector<std::string> args = {"EVAL", v.declare ? audit_declared : audit_undeclared};
          if (v.declare) {
            args.push_back(std::to_string(kAccounts));
            for (int i = 0; i < kAccounts; ++i) args.push_back("acct:" + std::to_string(i));
          } else {
            args.push_back("0");
          }
          const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000);
          while (std::chrono::steady_clock::now() < end) {
            const Reply r = c.cmd(args);
            if (r.type != REDIS_REPLY_INTEGER || r.integer != kAccounts * 1000) {
              if (bad.fetch_add(1) == 0) MESSAGE("audit saw ", show(r));
            }
            audits.fetch_add(1);
          }
          stop = true;
          return;
        }
        unsigned seed = 7u + static_cast<unsigned>(t);
        while (!stop) {
          seed = seed * 1103515245u + 12345u;
          const int a = static_cast<int>((seed >> 8) % kAccounts);
          const int b = (a + 1 + static_cast<int>((seed >> 20) % (kAccounts - 1))) % kAccounts;
          const Reply r = c.cmd({"EVAL", transfer, "2", "acct:" + std::to_string(a),
                                 "acct:" + std::to_string(b), std::to_string(seed % 50)});
          if (r.integer != 1) bad.fetch_add(1);
          transfers.fetch_add(1);
        }
      });
      INFO("flags: ", v.flags.back(), " audits: ", audits.load(), " transfers: ", transfers.load());
      CHECK(audits.load() > 10);
      CHECK(transfers.load() > 100);
      CHECK(bad.load() == 0);
    }
  }

  TEST_CASE("SCRIPT KILL stops a looping script after busy-reply-threshold, not one that wrote") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client a(s.port());
    CHECK(a.cmd({"CONFIG", "SET", "busy-reply-threshold", "100"}).is_status("OK"));
    CHECK(a.cmd({"CONFIG", "GET", "lua-time-limit"}).elements.at(1).str == "100");
    CHECK(a.cmd({"SCRIPT", "KILL"}).str == "NOTBUSY No scripts in execution right now.");
    // A client on the other worker (the script's own worker answers BUSY past the threshold,
    // the other one serves PING): this checks KILL across workers.
    auto other_worker_client = [&]() -> std::unique_ptr<Client> {
      for (int i = 0; i < 12; ++i) {
        auto c = std::make_unique<Client>(s.port(), 300);
        if (c->cmd({"PING"}).is_status("PONG")) return c;
      }
      return nullptr;
    };
    Reply looped;
    std::thread runner([&] { looped = a.cmd({"EVAL", "while true do end", "0"}); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto b = other_worker_client();
    REQUIRE(b != nullptr);
    CHECK(b->cmd({"FUNCTION", "KILL"}).str ==
          "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.");
    CHECK(b->cmd({"SCRIPT", "KILL"}).is_status("OK"));
    runner.join();
    CHECK(looped.str ==
          "ERR Script killed by user with SCRIPT KILL... script: "
          "694a5fe1ddb97a4c6a1bf299d9537c7d3d0f84e7, on @user_script:1.");
    // A script that wrote cannot be killed; it ends on its own.
    std::thread writer([&] {
      looped = a.cmd({"EVAL",
                      "redis.call('set', KEYS[1], 'x') local n = 0 "
                      "while n < 50000000 do n = n + 1 end return n",
                      "1", "w"});
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(b->cmd({"SCRIPT", "KILL"})
              .str.starts_with("UNKILLABLE Sorry the script already executed write commands "
                               "against the dataset."));
    writer.join();
    CHECK(looped.integer == 50000000);
  }

  TEST_CASE("a busy script's own worker answers BUSY and runs SCRIPT KILL, as Redis does") {
    kvtest::ServerProcess s({"--threads", "1"});
    Client a(s.port());
    Client b(s.port());
    CHECK(a.cmd({"CONFIG", "SET", "busy-reply-threshold", "100"}).is_status("OK"));
    Reply looped;
    std::thread runner([&] { looped = a.cmd({"FCALL", "spin", "0"}); });
    runner.join();
    CHECK(looped.str == "ERR Function not found");
    CHECK(a.cmd({"FUNCTION", "LOAD",
                 "#!lua name=spinlib\nredis.register_function('spin', function() while true do "
                 "end end)"})
              .str == "spinlib");
    runner = std::thread([&] { looped = a.cmd({"EVAL", "while true do end", "0"}); });
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    CHECK(b.cmd({"GET", "k"}).str ==
          "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.");
    CHECK(b.cmd({"FUNCTION", "KILL"}).str ==
          "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.");
    CHECK(b.cmd({"SCRIPT", "KILL"}).is_status("OK"));
    runner.join();
    CHECK(looped.str.starts_with("ERR Script killed by user with SCRIPT KILL..."));
    // A function: FUNCTION KILL stops it, SCRIPT KILL names the right command.
    runner = std::thread([&] { looped = a.cmd({"FCALL", "spin", "0"}); });
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    CHECK(b.cmd({"PING"}).str ==
          "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN "
          "NOSAVE.");
    CHECK(b.cmd({"SCRIPT", "KILL"}).str ==
          "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN "
          "NOSAVE.");
    const Reply stats = b.cmd({"FUNCTION", "STATS"});
    REQUIRE(stats.elements.size() == 4);
    REQUIRE(stats.elements[1].elements.size() == 6);
    CHECK(stats.elements[1].elements[1].str == "spin");
    CHECK(stats.elements[1].elements[3].elements.size() == 3);  // FCALL spin 0
    CHECK(stats.elements[1].elements[5].integer >= 100);
    CHECK(b.cmd({"FUNCTION", "KILL"}).is_status("OK"));
    runner.join();
    CHECK(looped.str.starts_with("ERR Script killed by user with SCRIPT KILL..."));
    CHECK(b.cmd({"PING"}).is_status("PONG"));
    CHECK(a.cmd({"PING"}).is_status("PONG"));
  }
}

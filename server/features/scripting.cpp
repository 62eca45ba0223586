// The Lua engine behind EVAL/FCALL (see scripting.hpp for the design).
extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
int luaopen_cjson(lua_State*);
int luaopen_bit(lua_State*);
}

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "server/commands/common.hpp"
#include "server/features/lua_sandbox.hpp"
#include "server/protocol/resp_parser.hpp"
#include "server/features/scripting.hpp"
#include "server/util/sha1.hpp"

namespace kvlab::server {

namespace scripting {
namespace {

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ---- The shared registry ----

enum ScriptFlag : std::uint32_t { kNoWrites = 1u << 0, kAllowOom = 1u << 1 };

struct Function {
  std::string name, library, description;
  std::uint32_t flags = 0;
  std::vector<std::string> flag_names;
};
struct Library {
  std::string name, code;
  std::vector<std::string> functions;  // in registration order
};

// Function names compare without case, as Redis 7.0's function dictionaries do: FCALL TEST runs
// `test`, and two libraries cannot both register `test` and `TEST`.
struct CaseLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const {
    const std::size_t n = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i) {
      const int x = std::tolower(static_cast<unsigned char>(a[i]));
      const int y = std::tolower(static_cast<unsigned char>(b[i]));
      if (x != y) return x < y;
    }
    return a.size() < b.size();
  }
};

struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, std::string> scripts;  // sha1 -> body; guarded by mu
  std::map<std::string, Library> libraries;              // guarded by mu
  std::map<std::string, Function, CaseLess> functions;   // guarded by mu
  // Bumped (under mu) by every change that invalidates compiled code. Workers compare it with
  // the generation their lua_State was built for. acquire/release: pairs a worker's read with the
  // change made before the bump.
  std::atomic<std::uint64_t> script_gen{1}, function_gen{1};
};
Registry& registry() {
  static Registry r;
  return r;
}

// A script's SHA1 as the registry keys it: Redis matches EVALSHA and SCRIPT EXISTS digests
// case-insensitively.
std::string lower_sha(std::string_view sha) {
  std::string s(sha);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The body SCRIPT LOAD or EVAL registered under sha (any case), into *body, and the lowered
// digest it is keyed by into *key when key is not null; false when none.
bool find_script_body(std::string_view sha, std::string* body, std::string* key = nullptr) {
  if (sha.size() != 40) return false;
  std::string lowered = lower_sha(sha);
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto it = reg.scripts.find(lowered);
  if (it == reg.scripts.end()) return false;
  *body = it->second;
  if (key != nullptr) *key = std::move(lowered);
  return true;
}

std::atomic<std::int64_t> g_busy_threshold_ms{5000};
std::atomic<bool> g_disable_deny_debug{false};  // set_disable_deny_scripts()
// set_kill_after_ms(): 0, or the run time after which a script is killed as by SCRIPT KILL.
std::atomic<std::int64_t> g_kill_after_ms{0};

// What SCRIPT KILL / FUNCTION KILL see of the script a worker runs. Written by the worker, read by
// any thread; relaxed loads are enough for the fields (a KILL that misses a just-started script
// answers NOTBUSY, as Redis does for a script under the threshold), and the kill request is a
// flag the hook polls.
struct alignas(64) RunSlot {
  std::atomic<int> kind{0};  // 0 idle, 1 EVAL, 2 FCALL
  std::atomic<std::int64_t> start_ms{0};
  std::atomic<bool> wrote{false};
  std::atomic<bool> kill{false};
  // The running function and its command (FUNCTION STATS); guarded by mu.
  std::mutex mu;
  std::string name;
  std::vector<std::string> command;
};
constexpr unsigned kMaxSlots = 1024;
RunSlot g_slots[kMaxSlots];

// ---- The per-worker Lua state ----

struct Engine {
  lua_State* L = nullptr;
  std::uint64_t script_gen = 0, function_gen = 0;
  unsigned short rand_state[3] = {0, 0, 0};
  // The script being run (for redis.call).
  CommandContext* ctx = nullptr;
  RunSlot* slot = nullptr;
  bool read_only = false;
  bool allow_oom = false;                  // flagged allow-oom: its writes run under OOM
  std::vector<std::string_view> declared;  // KEYS of the running script
  bool check_keys = false;                 // refuse undeclared keys
  int resp = 2;                            // redis.setresp(): redis.call's reply protocol
};
thread_local Engine t_engine;

constexpr const char* kFunctionsTable = "__kvlab_functions";

// The field of an error table that the error statistics have counted already (a command's error
// reply, or a counted refusal): the script's reply of that error is not counted again. Redis 7.0
// sets the same field, which a script may read.
constexpr const char* kCountedField = "ignore_error_stats_update";

// ---- Lua -> RESP (script results) ----

// Pushes t[field] of the table at idx without metamethods. A script's value is read outside the
// script's protected call, where a metamethod's error (a proxy's __index raises for missing
// names) would be an unprotected error and abort the process.
void raw_field(lua_State* L, int idx, const char* field) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  lua_pushstring(L, field);
  lua_rawget(L, idx);
}

// Pushes t[field] when t (at -1) is a table with that field of type `type`; else pushes nothing.
bool typed_field(lua_State* L, const char* field, int type) {
  raw_field(L, -1, field);
  if (lua_type(L, -1) == type) return true;
  lua_pop(L, 1);
  return false;
}

// The script's result for the caller's writer r, as Redis 7.0: booleans are 1/nil when the script
// speaks RESP2 (redis.setresp) and true/false in RESP3; {double=}, {big_number=},
// {verbatim_string={format=, string=}}, {map={}} and {set={}} tables give those RESP3 types
// (encoded for r's protocol) whatever the script's.
void lua_to_reply(lua_State* L, ReplyWriter& r, int script_resp, int depth = 0) {
  switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
      std::size_t n = 0;
      const char* s = lua_tolstring(L, -1, &n);
      r.bulk(std::string_view(s, n));
      break;
    }
    case LUA_TBOOLEAN:
      if (script_resp == 3)
        r.boolean(lua_toboolean(L, -1));
      else if (lua_toboolean(L, -1))
        r.integer(1);
      else
        r.null();
      break;
    case LUA_TNUMBER: {
      const double d = lua_tonumber(L, -1);
      // Truncation toward zero, as Redis's (long long) cast; out of range (and NaN) give what
      // that cast gives on x86-64, INT64_MIN.
      std::int64_t v = std::numeric_limits<std::int64_t>::min();
      if (d > -9.2233720368547758e18 && d < 9.2233720368547758e18) v = static_cast<std::int64_t>(d);
      r.integer(v);
      break;
    }
    case LUA_TTABLE: {
      if (depth > 1000 || !lua_checkstack(L, 4)) {
        r.error("ERR reached lua stack limit");
        break;
      }
      raw_field(L, -1, "err");
      if (lua_type(L, -1) == LUA_TSTRING) {
        std::size_t n = 0;
        const char* s = lua_tolstring(L, -1, &n);
        const std::string_view text(s, n);
        raw_field(L, -2, kCountedField);
        const bool counted = lua_toboolean(L, -1);
        lua_pop(L, 1);
        if (counted) {
          r.error_counted_before(text);
        } else {
          r.error(text);
        }
        lua_pop(L, 1);
        break;
      }
      lua_pop(L, 1);
      raw_field(L, -1, "ok");
      if (lua_type(L, -1) == LUA_TSTRING) {
        std::size_t n = 0;
        const char* s = lua_tolstring(L, -1, &n);
        std::string text(s, n);
        for (char& c : text)
          if (c == '\r' || c == '\n') c = ' ';
        r.simple(text);
        lua_pop(L, 1);
        break;
      }
      lua_pop(L, 1);
      if (typed_field(L, "double", LUA_TNUMBER)) {
        r.dbl(lua_tonumber(L, -1));
        lua_pop(L, 1);
        break;
      }
      if (typed_field(L, "big_number", LUA_TSTRING)) {
        std::size_t n = 0;
        const char* s = lua_tolstring(L, -1, &n);
        std::string text(s, n);
        for (char& c : text)
          if (c == '\r' || c == '\n') c = ' ';
        r.big_number(text);
        lua_pop(L, 1);
        break;
      }
      if (typed_field(L, "verbatim_string", LUA_TTABLE)) {
        raw_field(L, -1, "format");
        raw_field(L, -2, "string");
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
          std::size_t fn = 0, sn = 0;
          const char* f = lua_tolstring(L, -2, &fn);
          const char* s = lua_tolstring(L, -1, &sn);
          r.verbatim(std::string_view(f, fn), std::string_view(s, sn));
          lua_pop(L, 3);
          break;
        }
        lua_pop(L, 3);
      }
      const bool is_map = typed_field(L, "map", LUA_TTABLE);
      if (is_map || typed_field(L, "set", LUA_TTABLE)) {
        std::size_t n = 0;
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {
          ++n;
          lua_pop(L, 1);
        }
        if (is_map) {
          r.map(n);
        } else {
          r.set(n);
        }
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {  // key at -2, value at -1
          lua_pushvalue(L, -2);         // the key, converted on top
          lua_to_reply(L, r, script_resp, depth + 1);
          lua_pop(L, 1);
          if (is_map) lua_to_reply(L, r, script_resp, depth + 1);
          lua_pop(L, 1);
        }
        lua_pop(L, 1);
        break;
      }
      // An array: elements 1..n up to the first nil.
      std::size_t n = 0;
      for (;; ++n) {
        lua_rawgeti(L, -1, static_cast<int>(n + 1));
        const bool nil = lua_isnil(L, -1);
        lua_pop(L, 1);
        if (nil) break;
      }
      r.array(n);
      for (std::size_t i = 0; i < n; ++i) {
        lua_rawgeti(L, -1, static_cast<int>(i + 1));
        lua_to_reply(L, r, script_resp, depth + 1);
        lua_pop(L, 1);
      }
      break;
    }
    default:
      r.null();
  }
}

// ---- RESP -> Lua (redis.call replies) ----

// Parses one RESP2 or RESP3 reply at s[*pos] and pushes it, as Redis 7.0 converts them: a RESP3
// map becomes {map={k=v}}, a set {set={e=true}}, a double {double=n}, a big number
// {big_number="..."}, a verbatim string {verbatim_string={format=, string=}}, null nil, a
// boolean a Lua boolean, and an attribute is skipped. Returns false on a malformed reply.
bool push_reply(lua_State* L, std::string_view s, std::size_t* pos, int depth = 0) {
  if (*pos >= s.size() || !lua_checkstack(L, 4) || depth > 1000) return false;
  const char tag = s[*pos];
  const std::size_t eol = s.find("\r\n", *pos);
  if (eol == std::string_view::npos) return false;
  const std::string_view line = s.substr(*pos + 1, eol - *pos - 1);
  *pos = eol + 2;
  auto to_i64 = [](std::string_view t) {
    std::int64_t v = 0;
    parse_i64(t, &v);
    return v;
  };
  switch (tag) {
    case '+':
      lua_newtable(L);
      lua_pushlstring(L, line.data(), line.size());
      lua_setfield(L, -2, "ok");
      return true;
    case '-':  // a command's error reply, which redis_call_body has counted
      lua_newtable(L);
      lua_pushlstring(L, line.data(), line.size());
      lua_setfield(L, -2, "err");
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, kCountedField);
      return true;
    case ':':
      lua_pushnumber(L, static_cast<lua_Number>(to_i64(line)));
      return true;
    case '$': {
      const std::int64_t n = to_i64(line);
      if (n < 0) {
        lua_pushboolean(L, 0);
        return true;
      }
      if (*pos + static_cast<std::size_t>(n) + 2 > s.size()) return false;
      lua_pushlstring(L, s.data() + *pos, static_cast<std::size_t>(n));
      *pos += static_cast<std::size_t>(n) + 2;
      return true;
    }
    case '*': {
      const std::int64_t n = to_i64(line);
      if (n < 0) {
        lua_pushboolean(L, 0);
        return true;
      }
      lua_createtable(L, static_cast<int>(std::min<std::int64_t>(n, 1 << 20)), 0);
      for (std::int64_t i = 0; i < n; ++i) {
        if (!push_reply(L, s, pos, depth + 1)) return false;
        lua_rawseti(L, -2, static_cast<int>(i + 1));
      }
      return true;
    }
    case '_':
      lua_pushnil(L);
      return true;
    case '#':
      lua_pushboolean(L, line == "t");
      return true;
    case ',': {
      lua_newtable(L);
      lua_pushnumber(L, std::strtod(std::string(line).c_str(), nullptr));
      lua_setfield(L, -2, "double");
      return true;
    }
    case '(':
      lua_newtable(L);
      lua_pushlstring(L, line.data(), line.size());
      lua_setfield(L, -2, "big_number");
      return true;
    case '=': {
      const std::int64_t n = to_i64(line);
      if (n < 4 || *pos + static_cast<std::size_t>(n) + 2 > s.size()) return false;
      lua_newtable(L);
      lua_newtable(L);
      lua_pushlstring(L, s.data() + *pos, 3);
      lua_setfield(L, -2, "format");
      lua_pushlstring(L, s.data() + *pos + 4, static_cast<std::size_t>(n) - 4);
      lua_setfield(L, -2, "string");
      lua_setfield(L, -2, "verbatim_string");
      *pos += static_cast<std::size_t>(n) + 2;
      return true;
    }
    case '%':
    case '~': {
      const std::int64_t n = to_i64(line);
      lua_newtable(L);
      lua_newtable(L);
      for (std::int64_t i = 0; i < n; ++i) {
        if (!push_reply(L, s, pos, depth + 1)) return false;
        if (tag == '%') {
          if (!push_reply(L, s, pos, depth + 1)) return false;
        } else {
          lua_pushboolean(L, 1);
        }
        lua_settable(L, -3);
      }
      lua_setfield(L, -2, tag == '%' ? "map" : "set");
      return true;
    }
    case '|': {
      // An attribute: parsed and dropped, then the reply it annotates. Redis 7.0 does not show
      // attributes to scripts either.
      const std::int64_t n = to_i64(line);
      for (std::int64_t i = 0; i < 2 * n; ++i) {
        if (!push_reply(L, s, pos, depth + 1)) return false;
        lua_pop(L, 1);
      }
      return push_reply(L, s, pos, depth + 1);
    }
    default:
      return false;
  }
}

// ---- redis.* ----

// Commands a script may not run: Redis 7.0's noscript flag (src/commands/*.json), on whole
// commands and on single subcommands. BLMPOP and BZMPOP are not among them: they run without
// blocking, as in MULTI.
bool denied_in_script(std::string_view name, std::span<const std::string_view> argv) {
  static const std::unordered_set<std::string_view> kDenied = {
      "auth",     "bgrewriteaof", "bgsave",     "blmove",      "blpop",       "brpop",
      "brpoplpush", "bzpopmax",   "bzpopmin",   "debug",       "discard",     "eval",
      "eval_ro",  "evalsha",      "evalsha_ro", "exec",        "failover",    "fcall",
      "fcall_ro", "hello",        "monitor",    "multi",       "psubscribe",  "psync",
      "punsubscribe", "quit",     "replconf",   "replicaof",   "reset",       "role",
      "save",     "shutdown",     "slaveof",    "ssubscribe",  "subscribe",   "sunsubscribe",
      "sync",     "unsubscribe",  "unwatch",    "wait",        "watch"};
  static const std::unordered_set<std::string_view> kDeniedSub = {
      "client|caching",   "client|getname",    "client|getredir",  "client|id",
      "client|info",      "client|kill",       "client|list",      "client|no-evict",
      "client|pause",     "client|reply",      "client|setname",   "client|tracking",
      "client|trackinginfo", "client|unblock", "client|unpause",   "cluster|reset",
      "config|get",       "config|resetstat",  "config|rewrite",   "config|set",
      "function|delete",  "function|dump",     "function|flush",   "function|kill",
      "function|list",    "function|load",     "function|restore", "function|stats",
      "script|debug",     "script|exists",     "script|flush",     "script|kill",
      "script|load"};
  if (kDenied.count(name) != 0) return true;
  // LATENCY's and ACL's subcommands but HELP.
  if (name == "latency" || name == "acl")
    return !(argv.size() >= 2 && iequals(argv[1], "help"));
  // Only these have noscript subcommands: no string is built for the others (every redis.call).
  if (name != "client" && name != "cluster" && name != "config" && name != "function" &&
      name != "script")
    return false;
  if (argv.size() < 2 || argv[1].size() > 32) return false;
  std::string sub(name);
  sub += '|';
  for (char ch : argv[1]) sub += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return kDeniedSub.count(sub) != 0;
}

// kRefused: refused before the command was looked up (no arguments, or arguments that are not
// strings or numbers); the script's error reply counts it, as Redis's does. kRefusedCounted:
// refused once the command was known (unknown, noscript, arity, a write in a read-only script,
// NOREPLICAS, OOM): counted here, where it arises, as Redis counts it (errorstats, and a
// rejected call of the command when it exists).
enum class CallOutcome { kReply, kErrorReply, kRefused, kRefusedCounted };

// The work of redis.call/pcall: pushes the command's reply (kReply, or kErrorReply for an error
// reply), or sets *error when the call is refused. It raises no Lua error: the caller raises
// after this frame's C++ objects are gone (a Lua error unwinds with longjmp, past their
// destructors, and every refused call leaked its arguments).
CallOutcome redis_call_body(lua_State* L, std::string* error) {
  Engine& e = t_engine;
  const int argc = lua_gettop(L);
  auto fail = [&](std::string_view text) {
    *error = std::string(text);
    return CallOutcome::kRefused;
  };
  if (argc == 0) return fail("ERR Please specify at least one argument for this redis lib call");
  std::vector<std::string> args;
  args.reserve(static_cast<std::size_t>(argc));
  for (int i = 1; i <= argc; ++i) {
    const int t = lua_type(L, i);
    if (t != LUA_TSTRING && t != LUA_TNUMBER)
      return fail("ERR Lua redis lib command arguments must be strings or integers");
    if (t == LUA_TNUMBER) {  // Redis formats numbers with %.17g (0.1 -> 0.10000000000000001)
      char buf[64];
      const int n = std::snprintf(buf, sizeof buf, "%.17g", lua_tonumber(L, i));
      args.emplace_back(buf, static_cast<std::size_t>(n));
      continue;
    }
    std::size_t n = 0;
    const char* s = lua_tolstring(L, i, &n);
    args.emplace_back(s, n);
  }
  // The arguments are copied: drop them from the Lua stack, which Lua 5.1 caps at 8,000 slots
  // per C call (LUAI_MAXCSTACK). A call with thousands of arguments (unpack of a big table)
  // would otherwise leave no room for the reply.
  lua_settop(L, 0);
  if (e.ctx == nullptr) return fail("ERR redis.call is not available while loading a library");
  CommandContext& outer = *e.ctx;
  std::vector<std::string_view> argv(args.begin(), args.end());
  // The command and, for a container, its subcommand (what a rejection is counted against).
  const CommandSpec* cmd = CommandTable::instance().find(argv[0]);
  const CommandSpec* spec = cmd;
  if (cmd != nullptr && !cmd->subcommands.empty() && argv.size() >= 2) {
    if (const CommandSpec* sub = CommandTable::find_sub(*cmd, argv[1])) spec = sub;
  }
  auto refuse = [&](std::string_view text, bool rejected = true) {
    *error = std::string(text);
    if (spec != nullptr && rejected) count_rejected(outer, *spec);
    count_error_reply(outer, text.substr(0, text.find(' ')));
    return CallOutcome::kRefusedCounted;
  };
  // The deny list first: it names Redis commands kvlab may not have (the blocking ones).
  std::string lower(argv[0].substr(0, 32));
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const bool debug_allowed =
      lower == "debug" && g_disable_deny_debug.load(std::memory_order_relaxed);
  if (denied_in_script(lower, argv) && !debug_allowed)
    return refuse("ERR This Redis command is not allowed from script");
  // XREAD / XREADGROUP with BLOCK: refused where Redis 7.0's option loop meets BLOCK (after the
  // options before it, before STREAMS), with the command's name as the script wrote it. Redis
  // counts that as a failed call of the command, not a rejected one.
  if (lower == "xread" || lower == "xreadgroup") {
    for (std::size_t i = 1; i < argv.size(); ++i) {
      const bool more = i + 1 < argv.size();
      if (iequals(argv[i], "block") && more)
        return refuse("ERR " + std::string(argv[0]) +
                          " command is not allowed with BLOCK option from scripts",
                      false);
      if (iequals(argv[i], "streams")) break;
      if (iequals(argv[i], "count") && more) ++i;
      else if (lower == "xreadgroup" && iequals(argv[i], "group") && i + 2 < argv.size()) i += 2;
    }
  }
  if (cmd == nullptr) return refuse("ERR Unknown Redis command called from script");
  const bool arity_ok = spec->arity >= 0 ? argv.size() == static_cast<std::size_t>(spec->arity)
                                         : argv.size() >= static_cast<std::size_t>(-spec->arity);
  if (!arity_ok) return refuse("ERR Wrong number of args calling Redis command from script");
  // A read-only script may not write, nor run what Redis flags may_replicate (PUBLISH, PFCOUNT),
  // which CLIENT PAUSE WRITE holds back as writes.
  if (e.read_only && ((spec->flags & kWrite) || may_replicate(*spec)))
    return refuse("ERR Write commands are not allowed from read-only scripts.");
  // The server's state refuses only the script's first write: once it has written, stopping it
  // half-way would leave a partial effect (Redis 7.0's order: replicas, then memory).
  const bool wrote = e.slot->wrote.load(std::memory_order_relaxed);  // this thread's own store
  if ((spec->flags & kWrite) && !wrote && !outer.server.enough_good_replicas())
    return refuse(err::kNoReplicas);
  if ((spec->flags & kDenyOom) && !wrote && !e.allow_oom && oom_before_command())
    return refuse(err::kOom);
  if (e.check_keys && !(spec->flags & kChannelKeys)) {  // a shard channel is no keyspace key
    if (spec->flags & kKeyspaceWide)
      return refuse(
          "ERR Script attempted to access the whole keyspace, but it holds only its declared "
          "keys (start kvlab-server with --lua-undeclared-keys yes)");
    std::vector<std::size_t> idx;
    command_keys(*spec, argv, &idx);
    for (std::size_t i : idx) {
      if (std::find(e.declared.begin(), e.declared.end(), argv[i]) == e.declared.end())
        return refuse(
            "ERR Script attempted to access a non-declared key: " +
            std::string(argv[i].substr(0, 128)) +
            " (declare it in KEYS, or start kvlab-server with --lua-undeclared-keys yes)");
    }
  }
  if (spec->flags & kWrite) e.slot->wrote.store(true, std::memory_order_relaxed);
  thread_local std::vector<std::unique_ptr<Buffer>> scratch;  // one per nesting level
  thread_local std::size_t level = 0;
  if (scratch.size() <= level) scratch.push_back(std::make_unique<Buffer>());
  Buffer& buf = *scratch[level];
  buf.consume(buf.size());
  ++level;
  // The command's reply is bounded by the data, not by the script: its conversion to Lua values
  // must not fail half-way on the scripts' memory limit (a refusal inside this C++ frame would
  // unwind past its destructors).
  const bool enforced = lua_sandbox::set_enforced(L, false);
  {
    ReplyWriter w(buf, e.resp);
    CommandContext sub{outer.server, outer.worker, outer.conn, outer.ks, w, argv, outer.now_ms};
    dispatch(sub);
    // The command's errors count where they arise, as the worker counts a client's (a script
    // may catch them with pcall); dispatch's own refusals count as rejected calls.
    if (w.errors() != 0) {
      count_error_replies(outer, w);
      if (!sub.counted) count_rejected(sub);
    }
  }
  --level;
  std::size_t pos = 0;
  const std::string_view bytes = buf.view();
  const bool parsed = push_reply(L, bytes, &pos);
  lua_sandbox::set_enforced(L, enforced);
  if (!parsed) return fail("ERR kvlab: malformed reply inside a script");
  return bytes.size() > 0 && bytes[0] == '-' ? CallOutcome::kErrorReply : CallOutcome::kReply;
}

int redis_call_impl(lua_State* L, bool raise) {
  CallOutcome outcome = CallOutcome::kReply;
  {
    std::string error;
    outcome = redis_call_body(L, &error);
    if (outcome == CallOutcome::kRefused || outcome == CallOutcome::kRefusedCounted) {
      const bool enforced = lua_sandbox::set_enforced(L, false);  // cannot fail with error alive
      lua_newtable(L);
      lua_pushlstring(L, error.data(), error.size());
      lua_setfield(L, -2, "err");
      if (outcome == CallOutcome::kRefusedCounted) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, kCountedField);
      }
      lua_sandbox::set_enforced(L, enforced);
    }
  }
  // The {err = ...} table on top; no C++ object is alive past this point.
  if (raise && outcome != CallOutcome::kReply) return lua_error(L);
  return 1;
}
int l_redis_call(lua_State* L) {
  return redis_call_impl(L, true);
}
int l_redis_pcall(lua_State* L) {
  return redis_call_impl(L, false);
}

// pcall as Redis 7.0 replaces it: an error table ({err = text}, as redis.call and the redis.*
// helpers raise) is caught as its text, so that a script sees "ERR ..." (and error(e) or
// redis.error_reply(e) work on it); any other error value is passed on as Lua's pcall does.
int l_pcall(lua_State* L) {
  if (lua_gettop(L) == 0) return 0;  // Redis's pcall() returns nothing (Lua's raises an error)
  if (lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0) != 0) {
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "err");
      if (lua_isstring(L, -1)) {
        lua_replace(L, -2);
      } else {
        lua_pop(L, 1);
      }
    }
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
  }
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  return lua_gettop(L);
}

// Errors of the redis.* helpers: "ERR text" raised as a table, without a position (as Redis;
// redis.call's errors are such tables too).
int raise_plain(lua_State* L, std::string_view text) {
  lua_newtable(L);
  lua_pushliteral(L, "ERR ");
  lua_pushlstring(L, text.data(), text.size());
  lua_concat(L, 2);
  lua_setfield(L, -2, "err");
  return lua_error(L);
}

// Pushes {field = text}.
int push_reply_table(lua_State* L, const char* field, std::string_view text) {
  lua_newtable(L);
  lua_pushlstring(L, text.data(), text.size());
  lua_setfield(L, -2, field);
  return 1;
}

// redis.error_reply(msg): "-CODE rest" keeps its code, a message without a space gets ERR (as
// Redis 7.0's luaPushErrorBuff).
int l_error_reply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING)
    return push_reply_table(L, "err", "ERR wrong number or type of arguments");
  std::size_t n = 0;
  const char* p = lua_tolstring(L, 1, &n);
  std::string_view m(p, n);
  if (m.starts_with('-')) m.remove_prefix(1);
  std::string text;
  const std::size_t sp = m.find(' ');
  if (!std::string_view(p, n).starts_with('-')) {
    text = std::string(m);  // error_reply prepends '-': "E1 bad" -> code E1
    const std::size_t s2 = text.find(' ');
    if (s2 == std::string::npos) text = "ERR " + text;
  } else if (sp == std::string_view::npos) {
    text = "ERR " + std::string(m);
  } else {
    text = std::string(m);
  }
  while (!text.empty() && (text.back() == '\r' || text.back() == '\n')) text.pop_back();
  return push_reply_table(L, "err", text);
}
int l_status_reply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING)
    return push_reply_table(L, "err", "ERR wrong number or type of arguments");
  std::size_t n = 0;
  const char* p = lua_tolstring(L, 1, &n);
  return push_reply_table(L, "ok", std::string_view(p, n));
}
int l_sha1hex(lua_State* L) {
  if (lua_gettop(L) != 1) return raise_plain(L, "wrong number of arguments");
  std::size_t n = 0;
  const char* s = lua_tolstring(L, 1, &n);
  const std::string h = sha1_hex(std::string_view(s == nullptr ? "" : s, s == nullptr ? 0 : n));
  lua_pushlstring(L, h.data(), h.size());
  return 1;
}
int l_log(lua_State* L) {
  const int argc = lua_gettop(L);
  if (argc < 2) return raise_plain(L, "redis.log() requires two arguments or more.");
  if (!lua_isnumber(L, 1)) return raise_plain(L, "First argument must be a number (log level).");
  const int level = static_cast<int>(lua_tonumber(L, 1));
  if (level < 0 || level > 3) return raise_plain(L, "Invalid debug level.");
  std::string msg;
  for (int i = 2; i <= argc; ++i) {
    std::size_t n = 0;
    const char* s = lua_tolstring(L, i, &n);
    if (s == nullptr) continue;
    if (!msg.empty()) msg += ' ';
    msg.append(s, n);
  }
  static const char* kMarks = ".-*#";
  std::fprintf(stderr, "kvlab-server: %c script: %s\n", kMarks[level], msg.c_str());
  return 0;
}
int l_setresp(lua_State* L) {
  if (lua_gettop(L) != 1) return raise_plain(L, "redis.setresp() requires one argument.");
  const int v = static_cast<int>(lua_tonumber(L, 1));
  if (v != 2 && v != 3) return raise_plain(L, "RESP version must be 2 or 3.");
  t_engine.resp = v;
  return 0;
}
int l_set_repl(lua_State* L) {
  if (lua_gettop(L) != 1) return raise_plain(L, "redis.set_repl() requires one argument.");
  const int v = static_cast<int>(lua_tonumber(L, 1));
  if (v < 0 || v > 3)
    return raise_plain(
        L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
  return 0;
}
int l_replicate_commands(lua_State* L) {
  lua_pushboolean(L, 1);
  return 1;
}
// The debugger's hooks: no SCRIPT DEBUG session ever runs, so they do nothing (as in Redis then).
int l_breakpoint(lua_State* L) {
  lua_pushboolean(L, 0);
  return 1;
}
int l_debug(lua_State*) {
  return 0;
}

// redis.acl_check_cmd: kvlab has one user, allowed every command (AUTH/requirepass only), so a
// known command is allowed; the errors are Redis 7.0's.
int l_acl_check_cmd(lua_State* L) {
  if (lua_gettop(L) == 0)
    return luaL_error(L, "Please specify at least one argument for this redis lib call");
  const char* name = lua_tostring(L, 1);
  if (name == nullptr || CommandTable::instance().find(name) == nullptr)
    return luaL_error(L, "Invalid command passed to redis.acl_check_cmd()");
  lua_pushboolean(L, 1);
  return 1;
}

int l_register_function_at_runtime(lua_State* L) {
  return luaL_error(L, "redis.register_function can only be called on FUNCTION LOAD command");
}

// math.random / math.randomseed on a per-state erand48 generator (Redis replaces Lua's too).
int l_random(lua_State* L) {
  const double r = erand48(t_engine.rand_state);
  switch (lua_gettop(L)) {
    case 0:
      lua_pushnumber(L, r);
      break;
    case 1: {
      const int u = luaL_checkint(L, 1);
      luaL_argcheck(L, 1 <= u, 1, "interval is empty");
      lua_pushnumber(L, std::floor(r * u) + 1);
      break;
    }
    case 2: {
      const int l = luaL_checkint(L, 1), u = luaL_checkint(L, 2);
      luaL_argcheck(L, l <= u, 2, "interval is empty");
      lua_pushnumber(L, std::floor(r * (u - l + 1)) + l);
      break;
    }
    default:
      return luaL_error(L, "wrong number of arguments");
  }
  return 1;
}
int l_randomseed(lua_State* L) {
  const auto seed = static_cast<std::uint32_t>(luaL_checkint(L, 1));
  t_engine.rand_state[0] = 0x330e;
  t_engine.rand_state[1] = static_cast<unsigned short>(seed & 0xffff);
  t_engine.rand_state[2] = static_cast<unsigned short>(seed >> 16);
  return 0;
}

// The sandbox: scripts see globals through a proxy whose reads of missing names and writes fail
// with Redis 7.0's texts.
// Set while a library's code runs (FUNCTION LOAD): its globals are then the loading API alone,
// `redis` with register_function, log and the constants, as in Redis 7.0; the functions it
// registers see every global when they run later (their environment is this same proxy).
thread_local bool t_env_loading = false;

int l_env_index(lua_State* L) {
  if (t_env_loading) {
    const char* name = lua_tostring(L, 2);
    if (name != nullptr && std::string_view(name) == "redis") {
      lua_getfield(L, LUA_REGISTRYINDEX, "__kvlab_loading_redis");
      return 1;
    }
    return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                      name != nullptr ? name : "?");
  }
  lua_pushvalue(L, 2);
  lua_rawget(L, LUA_GLOBALSINDEX);
  if (!lua_isnil(L, -1)) return 1;
  const char* name = lua_tostring(L, 2);
  return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                    name != nullptr ? name : "?");
}
int l_env_newindex(lua_State* L) {
  return luaL_error(L, "Attempt to modify a readonly table");
}

// The message handler of every script call: {err = "ERR msg"} for a string, the table as is,
// plus where it was raised (the first Lua frame above C functions).
int l_error_handler(lua_State* L) {
  if (lua_type(L, 1) != LUA_TTABLE) {
    // 'ERR ' .. tostring(err), as Redis's handler.
    std::string text = "ERR ";
    switch (lua_type(L, 1)) {
      case LUA_TNIL:
        text += "nil";
        break;
      case LUA_TBOOLEAN:
        text += lua_toboolean(L, 1) ? "true" : "false";
        break;
      case LUA_TSTRING:
      case LUA_TNUMBER:
        text += lua_tostring(L, 1);
        break;
      default:
        text += lua_typename(L, lua_type(L, 1));
    }
    lua_newtable(L);
    lua_pushlstring(L, text.data(), text.size());
    lua_setfield(L, -2, "err");
    lua_replace(L, 1);
  }
  lua_settop(L, 1);
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); ++level) {
    lua_getinfo(L, "Sl", &ar);
    if (std::string_view(ar.what) == "C") continue;
    lua_pushstring(L, ar.source);
    lua_setfield(L, 1, "source");
    lua_pushnumber(L, ar.currentline);
    lua_setfield(L, 1, "line");
    break;
  }
  return 1;
}

void hook(lua_State* L, lua_Debug*) {
  RunSlot* slot = t_engine.slot;
  if (slot == nullptr) return;
  const std::int64_t kill_after = g_kill_after_ms.load(std::memory_order_relaxed);
  if (kill_after > 0 && steady_ms() - slot->start_ms.load(std::memory_order_relaxed) >= kill_after)
    slot->kill.store(true, std::memory_order_relaxed);
  // Past the threshold this worker's other clients get BUSY (or run SCRIPT/FUNCTION KILL), as in
  // Redis; clients of other workers are served normally unless they wait for the script's locks.
  if (t_engine.ctx != nullptr && !slot->kill.load(std::memory_order_relaxed) &&
      steady_ms() - slot->start_ms.load(std::memory_order_relaxed) >=
          g_busy_threshold_ms.load(std::memory_order_relaxed)) {
    CommandContext& ctx = *t_engine.ctx;
    const bool function = slot->kind.load(std::memory_order_relaxed) == 2;
    ctx.worker.serve_while_busy(&ctx.conn, function);
  }
  if (slot->kill.load(std::memory_order_relaxed)) {
    lua_sethook(L, hook, LUA_MASKLINE | LUA_MASKCOUNT, 1);  // pcall cannot swallow it
    lua_pushstring(L, "Script killed by user with SCRIPT KILL...");
    lua_error(L);
  }
}

// Read-only tables, as Redis 7.0.15's sandbox has them: scripts see _G and the libraries through
// empty proxies whose writes fail; the registry maps each proxy to its table, so that pairs,
// next and rawget see through a proxy and rawset/setmetatable on one fail with Redis's text.
constexpr const char* kProxies = "__kvlab_proxies";

// Pushes the table behind the proxy at idx, or nil when idx is not a proxy.
void push_target(lua_State* L, int idx) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  lua_getfield(L, LUA_REGISTRYINDEX, kProxies);
  lua_pushvalue(L, idx);
  lua_rawget(L, -2);
  lua_remove(L, -2);
}

int raise_readonly(lua_State* L) {
  lua_pushliteral(L, "Attempt to modify a readonly table");
  return lua_error(L);
}

// Wraps the proxy-aware base functions.
int l_next(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  push_target(L, 1);
  if (!lua_isnil(L, -1)) lua_replace(L, 1);
  lua_settop(L, 2);
  if (lua_next(L, 1)) return 2;
  lua_pushnil(L);
  return 1;
}
int l_pairs(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushcfunction(L, l_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}
int l_rawget(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkany(L, 2);
  push_target(L, 1);
  if (!lua_isnil(L, -1)) lua_replace(L, 1);
  lua_settop(L, 2);
  lua_rawget(L, 1);
  return 1;
}
int l_rawset(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkany(L, 2);
  luaL_checkany(L, 3);
  push_target(L, 1);
  if (!lua_isnil(L, -1)) return raise_readonly(L);
  lua_settop(L, 3);
  lua_rawset(L, 1);
  return 1;
}
int l_setmetatable(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  push_target(L, 1);
  if (!lua_isnil(L, -1)) return raise_readonly(L);
  lua_pop(L, 1);
  const int t = lua_type(L, 2);
  luaL_argcheck(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table expected");
  if (luaL_getmetafield(L, 1, "__metatable"))
    return luaL_error(L, "cannot change a protected metatable");
  lua_settop(L, 2);
  lua_setmetatable(L, 1);
  return 1;
}

// Replaces the table at the top of the stack by a read-only proxy of it. index: the proxy's
// __index (nullptr: the table itself).
void make_readonly(lua_State* L, lua_CFunction index) {
  const int target = lua_gettop(L);
  lua_newtable(L);  // the proxy
  lua_newtable(L);  // its metatable
  if (index != nullptr)
    lua_pushcfunction(L, index);
  else
    lua_pushvalue(L, target);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_env_newindex);
  lua_setfield(L, -2, "__newindex");
  // getmetatable(proxy) answers a read-only view of this metatable, as Redis answers its
  // read-only metatable: reading works, writing fails ("Attempt to modify a readonly table").
  lua_newtable(L);  // the view
  lua_newtable(L);  // the view's metatable
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_env_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_getfield(L, LUA_REGISTRYINDEX, kProxies);  // rawset on the view fails too
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -4);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_getfield(L, LUA_REGISTRYINDEX, kProxies);
  lua_pushvalue(L, -2);
  lua_pushvalue(L, target);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_replace(L, target);
}

int l_loading_redis_index(lua_State* L);

lua_State* new_state() {
  lua_State* L = lua_sandbox::new_state();
  for (auto [name, fn] : {std::pair<const char*, lua_CFunction>{"", luaopen_base},
                          {LUA_TABLIBNAME, luaopen_table},
                          {LUA_STRLIBNAME, luaopen_string},
                          {LUA_MATHLIBNAME, luaopen_math},
                          {LUA_DBLIBNAME, luaopen_debug},
                          {"cjson", luaopen_cjson},
                          {"bit", luaopen_bit}}) {
    lua_pushcfunction(L, fn);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    // cjson and bit return their table without always setting the global.
    if (*name != '\0' && lua_istable(L, -1))
      lua_setglobal(L, name);
    else
      lua_pop(L, 1);
  }
  for (const char* name : {"loadfile", "dofile", "print", "require", "module", "newproxy",
                           "setfenv", "getfenv", "debug"}) {
    lua_pushnil(L);
    lua_setglobal(L, name);
  }
  lua_getglobal(L, "math");
  lua_pushcfunction(L, l_random);
  lua_setfield(L, -2, "random");
  lua_pushcfunction(L, l_randomseed);
  lua_setfield(L, -2, "randomseed");
  lua_pop(L, 1);
  lua_newtable(L);  // redis
  const std::pair<const char*, lua_CFunction> fns[] = {
      {"call", l_redis_call},
      {"pcall", l_redis_pcall},
      {"error_reply", l_error_reply},
      {"status_reply", l_status_reply},
      {"sha1hex", l_sha1hex},
      {"log", l_log},
      {"setresp", l_setresp},
      {"set_repl", l_set_repl},
      {"replicate_commands", l_replicate_commands},
      {"breakpoint", l_breakpoint},
      {"acl_check_cmd", l_acl_check_cmd},
      {"debug", l_debug}};
  for (auto [name, fn] : fns) {
    lua_pushcfunction(L, fn);
    lua_setfield(L, -2, name);
  }
  const std::pair<const char*, int> ints[] = {{"LOG_DEBUG", 0},  {"LOG_VERBOSE", 1},
                                              {"LOG_NOTICE", 2}, {"LOG_WARNING", 3},
                                              {"REPL_NONE", 0},  {"REPL_AOF", 1},
                                              {"REPL_SLAVE", 2}, {"REPL_REPLICA", 2},
                                              {"REPL_ALL", 3},   {"REDIS_VERSION_NUM", 0x07000f}};
  for (auto [name, v] : ints) {
    lua_pushnumber(L, v);
    lua_setfield(L, -2, name);
  }
  lua_pushliteral(L, "7.0.15");
  lua_setfield(L, -2, "REDIS_VERSION");
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "__kvlab_redis");  // the real table (register_function)
  lua_setglobal(L, "redis");
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kProxies);
  // Checked versions of the library functions with known bugs, and struct and cmsgpack
  // (lua_sandbox.hpp), before the tables become read-only.
  lua_sandbox::install_guards(L, "__kvlab_env");
  for (auto [name, fn] : {std::pair<const char*, lua_CFunction>{"pairs", l_pairs},
                          {"pcall", l_pcall},
                          {"next", l_next},
                          {"rawget", l_rawget},
                          {"rawset", l_rawset},
                          {"setmetatable", l_setmetatable}}) {
    lua_pushcfunction(L, fn);
    lua_setglobal(L, name);
  }
  for (const char* name :
       {"redis", "string", "math", "table", "coroutine", "cjson", "bit", "struct", "cmsgpack"}) {
    lua_getglobal(L, name);
    if (!lua_istable(L, -1)) {
      lua_pop(L, 1);
      continue;
    }
    make_readonly(L, nullptr);
    lua_setglobal(L, name);
  }
  lua_newtable(L);
  make_readonly(L, l_loading_redis_index);
  lua_setfield(L, LUA_REGISTRYINDEX, "__kvlab_loading_redis");
  // The scripts' environment: a proxy of the globals whose missing names are errors; _G names it,
  // so that _G.x = 1 fails like x = 1.
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  make_readonly(L, l_env_index);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "__kvlab_env");
  lua_setglobal(L, "_G");
  // Strings share one metatable, whose __index is the string library: a script that changed it
  // would change every string of every later script (CVE-2025-46818's class). Scripts cannot
  // reach it: getmetatable('') answers its __metatable, a read-only view whose __index is the
  // read-only `string`, as Redis's read-only metatable answers. No other basic type has a
  // metatable, and without debug.setmetatable no script can give it one.
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  lua_newtable(L);
  lua_getglobal(L, "string");
  lua_setfield(L, -2, "__index");
  make_readonly(L, nullptr);
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 2);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kFunctionsTable);
  lua_sethook(L, hook, LUA_MASKCOUNT, 100000);
  return L;
}

Engine& engine() {
  Engine& e = t_engine;
  if (e.L == nullptr) {
    e.L = new_state();
    const auto seed =
        static_cast<std::uint64_t>(std::time(nullptr)) ^ reinterpret_cast<std::uintptr_t>(&e);
    e.rand_state[0] = static_cast<unsigned short>(seed);
    e.rand_state[1] = static_cast<unsigned short>(seed >> 16);
    e.rand_state[2] = static_cast<unsigned short>(seed >> 32);
  }
  return e;
}

// Compiles body as a chunk named `chunk`, with the sandbox environment; pushes the function or
// returns false with *error set (the Lua message).
bool compile(lua_State* L, std::string_view body, const char* chunk, std::string* error) {
  std::string text(body);
  if (text.size() >= 2 && text[0] == '#' && text[1] == '!') {
    text[0] = '-';  // keep the shebang line as a comment so that line numbers stay right
    text[1] = '-';
  }
  if (lua_sandbox::load_text(L, text, chunk) != 0) {
    const char* m = lua_tostring(L, -1);
    *error = m != nullptr ? m : "?";
    lua_pop(L, 1);
    return false;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, "__kvlab_env");
  lua_setfenv(L, -2);
  return true;
}

// ---- Shebang ----

// Parses "#!lua flags=a,b" (EVAL). Returns false with *error set.
bool parse_eval_shebang(std::string_view body, bool* has, std::uint32_t* flags,
                        std::string* error) {
  *has = false;
  *flags = 0;
  if (!body.starts_with("#!")) return true;
  *has = true;
  std::string_view line = body.substr(0, body.find('\n'));
  std::vector<std::string_view> words;
  for (std::size_t i = 0; i < line.size();) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j;
  }
  if (words.empty() || words[0] != "#!lua") {
    *error =
        "ERR Unexpected engine in script shebang: " + std::string(words.empty() ? line : words[0]);
    return false;
  }
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (!words[i].starts_with("flags=")) {
      *error = "ERR Unknown lua shebang option: " + std::string(words[i]);
      return false;
    }
    std::string_view list = words[i].substr(6);
    while (!list.empty()) {
      const std::size_t c = list.find(',');
      const std::string_view f = list.substr(0, c);
      if (f == "no-writes")
        *flags |= kNoWrites;
      else if (f == "allow-oom")
        *flags |= kAllowOom;
      else if (f != "allow-stale" && f != "no-cluster" && f != "allow-cross-slot-keys") {
        *error = "ERR Unexpected flag in script shebang: " + std::string(f);
        return false;
      }
      if (c == std::string_view::npos) break;
      list = list.substr(c + 1);
    }
  }
  return true;
}

// ---- Running ----

// Parses numkeys as Redis does; replies the error and returns false when invalid.
bool parse_numkeys(CommandContext& ctx, std::size_t at, std::int64_t* n) {
  if (!arg_i64(ctx, ctx.arg(at), n)) return false;
  if (*n < 0) {
    ctx.reply.error("ERR Number of keys can't be negative");
    return false;
  }
  if (static_cast<std::uint64_t>(*n) > ctx.argc() - at - 1) {
    ctx.reply.error("ERR Number of keys can't be greater than number of args");
    return false;
  }
  return true;
}

void push_strings(lua_State* L, std::span<const std::string_view> v) {
  lua_createtable(L, static_cast<int>(v.size()), 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    lua_pushlstring(L, v[i].data(), v[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

// Whether redis.call must refuse keys outside KEYS (see the file comment of scripting.hpp).
bool must_check_keys(CommandContext& ctx) {
  return ctx.server.atomicity().scheme() == Atomicity::Scheme::kKeyLocks &&
         !ctx.server.config().lua_undeclared_keys;
}

// The checks of a script or function that declares flags, before it runs, as Redis 7.0 makes
// them: one that may write is refused by the _RO commands and without enough good replicas
// (min-replicas-to-write), and one that is neither no-writes nor allow-oom under OOM. dispatch()
// refuses the last two before a top-level command runs (rejected calls); they arise here inside
// EXEC. Replies the error and returns false when the script may not run.
bool may_run(CommandContext& ctx, std::uint32_t flags, bool ro) {
  if (!(flags & kNoWrites)) {
    if (ro) {
      ctx.reply.error("ERR Can not execute a script with write flag using *_ro command.");
      return false;
    }
    if (!ctx.server.enough_good_replicas()) {
      ctx.reply.error(err::kNoReplicas);
      return false;
    }
  }
  if (!(flags & (kNoWrites | kAllowOom)) && oom_before_command()) {
    ctx.reply.error(err::kOom);
    return false;
  }
  return true;
}

// Calls the function below the arguments on the stack (nargs of them) under the handler and
// replies its result or error. `name` is the script's sha or the function's name.
void run(CommandContext& ctx, Engine& e, int nargs, int kind, std::string_view name,
         std::span<const std::string_view> keys, bool read_only, bool allow_oom) {
  lua_State* L = e.L;
  const int fn_at = lua_gettop(L) - nargs;
  lua_pushcfunction(L, l_error_handler);
  lua_insert(L, fn_at);
  RunSlot& slot = g_slots[ctx.worker.index() % kMaxSlots];
  if (kind == 2) {
    std::lock_guard<std::mutex> lock(slot.mu);
    slot.name = std::string(name);
    slot.command.assign(ctx.argv.begin(), ctx.argv.end());
  }
  slot.wrote.store(false, std::memory_order_relaxed);
  slot.kill.store(false, std::memory_order_relaxed);
  slot.start_ms.store(steady_ms(), std::memory_order_relaxed);
  slot.kind.store(kind, std::memory_order_release);
  e.ctx = &ctx;
  e.slot = &slot;
  e.read_only = read_only;
  e.allow_oom = allow_oom;
  e.declared.assign(keys.begin(), keys.end());
  e.check_keys = must_check_keys(ctx);
  e.resp = 2;  // every script starts in RESP2, as in Redis
  const bool was_in_exec = ctx.conn.in_exec;
  ctx.conn.in_exec = true;  // redis.call: the script's locks are held, no gate, no queuing
  lua_sethook(L, hook, LUA_MASKCOUNT, 100000);
  const bool enforced = lua_sandbox::set_enforced(L, true);
  const int rc = lua_pcall(L, nargs, 1, fn_at);
  lua_sandbox::set_enforced(L, enforced);
  ctx.conn.in_exec = was_in_exec;
  e.ctx = nullptr;
  e.slot = nullptr;
  slot.kind.store(0, std::memory_order_release);
  lua_sethook(L, hook, LUA_MASKCOUNT, 100000);
  if (rc == 0) {
    lua_to_reply(L, ctx.reply, e.resp);
  } else if (lua_type(L, -1) == LUA_TTABLE) {
    raw_field(L, -1, "err");
    std::string text = lua_isstring(L, -1) ? lua_tostring(L, -1) : "ERR unknown error";
    lua_pop(L, 1);
    raw_field(L, -1, "source");
    const char* source = lua_tostring(L, -1);
    std::string where = source != nullptr ? source : "?";
    lua_pop(L, 1);
    raw_field(L, -1, "line");
    const long line = static_cast<long>(lua_tonumber(L, -1));
    lua_pop(L, 1);
    raw_field(L, -1, kCountedField);
    const bool counted = lua_toboolean(L, -1);
    lua_pop(L, 1);
    text += " script: " + std::string(name) + ", on " + where + ":" + std::to_string(line) + ".";
    if (counted) {
      ctx.reply.error_counted_before(text);
    } else {
      ctx.reply.error(text);
    }
  } else {
    const char* m = lua_tostring(L, -1);
    ctx.reply.error(std::string("ERR ") + (m != nullptr ? m : "error running script"));
  }
  lua_settop(L, fn_at - 1);
  lua_sandbox::after_script(L);
  lua_gc(L, LUA_GCSTEP, 1);
}

// Drops this worker's compiled scripts when SCRIPT FLUSH ran since they were compiled.
void sync_scripts(Engine& e) {
  const std::uint64_t g = registry().script_gen.load(std::memory_order_acquire);
  if (g == e.script_gen) return;
  lua_newtable(e.L);
  lua_setfield(e.L, LUA_REGISTRYINDEX, "__kvlab_scripts");
  e.script_gen = g;
}

void eval_generic(CommandContext& ctx, bool by_sha, bool ro) {
  if (ctx.conn.script_debug) {  // see script_debug_cmd
    ctx.reply.error(
        "ERR this connection asked for SCRIPT DEBUG YES/SYNC, and kvlab has no Lua debugger: the "
        "script was not run (SCRIPT DEBUG NO runs scripts again)");
    return;
  }
  if (by_sha && ctx.arg(1).size() != 40) {  // as Redis: no such script, before numkeys
    ctx.reply.error("NOSCRIPT No matching script. Please use EVAL.");
    return;
  }
  std::int64_t numkeys = 0;
  if (!parse_numkeys(ctx, 2, &numkeys)) return;
  std::string sha, body;
  Registry& reg = registry();
  if (by_sha) {
    if (!find_script_body(ctx.arg(1), &body, &sha)) {
      ctx.reply.error("NOSCRIPT No matching script. Please use EVAL.");
      return;
    }
  } else {
    body = std::string(ctx.arg(1));
    sha = sha1_hex(body);
  }
  bool has_shebang = false;
  std::uint32_t flags = 0;
  std::string error;
  if (!parse_eval_shebang(body, &has_shebang, &flags, &error)) {
    ctx.reply.error(error);
    return;
  }
  Engine& e = engine();
  sync_scripts(e);
  lua_State* L = e.L;
  lua_getfield(L, LUA_REGISTRYINDEX, "__kvlab_scripts");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "__kvlab_scripts");
  }
  lua_getfield(L, -1, sha.c_str());
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    if (!compile(L, body, "@user_script", &error)) {
      lua_pop(L, 1);
      ctx.reply.error("ERR Error compiling script (new function): " + error);
      return;
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, sha.c_str());
    if (!by_sha) {
      std::lock_guard<std::mutex> lock(reg.mu);
      reg.scripts.emplace(sha, body);
    }
  }
  lua_remove(L, -2);  // the scripts table
  if (has_shebang && !may_run(ctx, flags, ro)) {  // compiled and cached first, as in Redis
    lua_pop(L, 1);
    return;
  }
  const auto keys = ctx.argv.subspan(3, static_cast<std::size_t>(numkeys));
  const auto args = ctx.argv.subspan(3 + static_cast<std::size_t>(numkeys));
  push_strings(L, keys);
  lua_setfield(L, LUA_GLOBALSINDEX, "KEYS");
  push_strings(L, args);
  lua_setfield(L, LUA_GLOBALSINDEX, "ARGV");
  run(ctx, e, 0, 1, sha, keys, ro || (flags & kNoWrites), (flags & kAllowOom) != 0);
}

// ---- Functions ----

// Collects what a library registers while its code runs (FUNCTION LOAD).
struct Loading {
  std::vector<Function> functions;
  std::string error;
};
thread_local Loading* t_loading = nullptr;

std::uint32_t parse_function_flag(std::string_view f, bool* ok) {
  *ok = true;
  if (f == "no-writes") return kNoWrites;
  if (f == "allow-oom") return kAllowOom;
  if (f == "allow-stale" || f == "no-cluster" || f == "allow-cross-slot-keys") return 0;
  *ok = false;
  return 0;
}

bool valid_name(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// redis.register_function(name, callback) or redis.register_function{function_name=...,
// callback=..., flags={...}, description=...}; errors as Redis 7.0's, raised without a position.
// The work of redis.register_function: nullptr, or the error text (the caller raises, once this
// frame's C++ objects are gone).
const char* register_function_body(lua_State* L, Loading* ld) {
  auto fail = [](const char* text) { return text; };
  Function f;
  int callback_at = 0;
  const int argc = lua_gettop(L);
  if (argc < 1 || argc > 2) return fail("wrong number of arguments to redis.register_function");
  if (argc == 1 && !lua_istable(L, 1))
    return fail(
        "calling redis.register_function with a single argument is only applicable to Lua table "
        "(representing named arguments).");
  if (argc == 2) {
    if (lua_type(L, 1) != LUA_TSTRING)
      return fail("first argument to redis.register_function must be a string");
    if (!lua_isfunction(L, 2))
      return fail("second argument to redis.register_function must be a function");
    std::size_t len = 0;
    const char* name = lua_tolstring(L, 1, &len);
    f.name.assign(name, len);  // a NUL inside makes the name invalid, as in Redis
    callback_at = 2;
  } else {
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
      const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
      const std::string_view k = key;
      if (k == "function_name") {
        if (lua_type(L, -1) != LUA_TSTRING)
          return fail("function_name argument given to redis.register_function must be a string");
        std::size_t len = 0;
        const char* name = lua_tolstring(L, -1, &len);
        f.name.assign(name, len);
      } else if (k == "description") {
        if (lua_type(L, -1) != LUA_TSTRING)
          return fail("description argument given to redis.register_function must be a string");
        f.description = lua_tostring(L, -1);
      } else if (k == "callback") {
        if (!lua_isfunction(L, -1))
          return fail("callback argument given to redis.register_function must be a function");
      } else if (k == "flags") {
        if (!lua_istable(L, -1))
          return fail(
              "flags argument to redis.register_function must be a table representing function "
              "flags");
        for (int i = 1;; ++i) {
          lua_rawgeti(L, -1, i);
          if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            break;
          }
          const char* fl = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
          bool ok = false;
          f.flags |= parse_function_flag(fl, &ok);
          if (!ok) return fail("unknown flag given");
          f.flag_names.emplace_back(fl);
          lua_pop(L, 1);
        }
      } else {
        return fail("unknown argument given to redis.register_function");
      }
      lua_pop(L, 1);
    }
    if (f.name.empty()) return fail("redis.register_function must get a function name argument");
    raw_field(L, 1, "callback");
    if (!lua_isfunction(L, -1)) return fail("redis.register_function must get a callback argument");
    callback_at = lua_gettop(L);
  }
  // Redis 7.0 says "Library names" for a bad function name too (functionsVerifyName's text).
  if (!valid_name(f.name))
    return fail(
        "Library names can only contain letters, numbers, or underscores(_) and must be at least "
        "one character long");
  for (const auto& g : ld->functions)
    if (iequals(g.name, f.name)) return fail("Function already exists in the library");
  lua_getfield(L, LUA_REGISTRYINDEX, kFunctionsTable);
  lua_pushvalue(L, callback_at);
  lua_setfield(L, -2, f.name.c_str());
  lua_pop(L, 1);
  ld->functions.push_back(std::move(f));
  return nullptr;
}

int l_register_function(lua_State* L) {
  Loading* ld = t_loading;
  if (ld == nullptr) return l_register_function_at_runtime(L);
  const char* error = register_function_body(L, ld);
  if (error == nullptr) return 0;
  lua_newtable(L);
  lua_pushfstring(L, "ERR %s", error);
  lua_setfield(L, -2, "err");
  return lua_error(L);
}

// While a library loads, `redis` offers only register_function, log and the constants
// (Redis 7.0's loading API); anything else is a missing global.
int l_loading_redis_index(lua_State* L) {
  const char* name = lua_tostring(L, 2);
  const std::string_view n = name != nullptr ? name : "";
  if (n == "register_function") {
    lua_pushcfunction(L, l_register_function);
    return 1;
  }
  if (n == "log" || n.starts_with("LOG_") || n.starts_with("REDIS_VERSION")) {
    lua_getfield(L, LUA_REGISTRYINDEX, "__kvlab_redis");
    lua_getfield(L, -1, name);
    return 1;
  }
  return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                    name != nullptr ? name : "?");
}

// A library's code gets 500 ms to register its functions, as in Redis.
thread_local std::int64_t t_load_deadline_ms = 0;
void load_hook(lua_State* L, lua_Debug*) {
  if (steady_ms() > t_load_deadline_ms) {
    lua_sethook(L, load_hook, LUA_MASKLINE | LUA_MASKCOUNT, 1);
    lua_pushliteral(L, "FUNCTION LOAD timeout");
    lua_error(L);
  }
}

// Parses "#!lua name=lib" of a library as Redis 7.0 does: the first line split with
// sdssplitargs's quoting (name="lib" names lib), the engine name and "name=" compared without
// case, other metadata refused.
bool parse_library_shebang(std::string_view code, std::string* name, std::string* error) {
  if (!code.starts_with("#!")) {
    *error = "ERR Missing library metadata";
    return false;
  }
  std::vector<std::string> words;
  if (!split_inline_args(code.substr(0, code.find('\n')), &words)) {
    *error = "ERR Invalid library metadata";
    return false;
  }
  if (words.empty() || !iequals(std::string_view(words[0]).substr(2), "lua")) {
    *error = "ERR Engine '" + (words.empty() ? std::string() : words[0].substr(2)) + "' not found";
    return false;
  }
  name->clear();
  bool named = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (words[i].size() >= 5 && iequals(std::string_view(words[i]).substr(0, 5), "name=")) {
      if (named) {
        *error = "ERR Invalid metadata value, name argument was given multiple times";
        return false;
      }
      named = true;
      *name = words[i].substr(5);
    } else {
      *error = "ERR Invalid metadata value given: " + words[i];
      return false;
    }
  }
  if (!named) {
    *error = "ERR Library name was not given";
    return false;
  }
  if (!valid_name(*name)) {
    *error =
        "ERR Library names can only contain letters, numbers, or underscores(_) and must be at "
        "least one character long";
    return false;
  }
  return true;
}

// Runs a library's code in L with redis.register_function live; fills ld. The callbacks land in
// L's functions table.
bool load_library_code(lua_State* L, std::string_view code, Loading* ld) {
  std::string error;
  if (!compile(L, code, "@user_function", &error)) {
    ld->error = "ERR Error compiling function: " + error;
    return false;
  }
  lua_pushcfunction(L, l_error_handler);
  lua_insert(L, -2);
  const int handler = lua_gettop(L) - 1;
  // The loading API: while t_env_loading is set, l_env_index shows the chunk only `redis`, the
  // read-only table whose __index is l_loading_redis_index.
  t_loading = ld;
  t_env_loading = true;
  t_load_deadline_ms = steady_ms() + 500;
  lua_sethook(L, load_hook, LUA_MASKCOUNT, 10000);
  const bool enforced = lua_sandbox::set_enforced(L, true);
  const int rc = lua_pcall(L, 0, 0, handler);
  lua_sandbox::set_enforced(L, enforced);
  t_loading = nullptr;
  t_env_loading = false;
  lua_sethook(L, hook, LUA_MASKCOUNT, 100000);
  if (rc != 0) {
    std::string text = "?";
    if (lua_istable(L, -1)) {
      raw_field(L, -1, "err");
      if (lua_isstring(L, -1)) text = lua_tostring(L, -1);
      lua_pop(L, 1);
    }
    ld->error = "ERR Error registering functions: " + text;
  } else if (ld->functions.empty()) {
    ld->error = "ERR No functions registered";
  }
  lua_settop(L, handler - 1);
  lua_sandbox::after_script(L);
  return ld->error.empty();
}

// Rebuilds this worker's function table when the libraries changed since it was built.
void sync_functions(Engine& e) {
  Registry& reg = registry();
  const std::uint64_t g = reg.function_gen.load(std::memory_order_acquire);
  if (g == e.function_gen) return;
  std::vector<std::string> codes;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    for (const auto& [name, lib] : reg.libraries) codes.push_back(lib.code);
  }
  lua_newtable(e.L);
  lua_setfield(e.L, LUA_REGISTRYINDEX, kFunctionsTable);
  for (const auto& code : codes) {
    Loading ld;
    load_library_code(e.L, code, &ld);
  }
  e.function_gen = g;
}

void fcall_generic(CommandContext& ctx, bool ro) {
  // As Redis: the function is looked up first, and numkeys has FCALL's own text.
  Registry& reg = registry();
  Function f;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    auto it = reg.functions.find(std::string(ctx.arg(1)));
    if (it == reg.functions.end()) {
      ctx.reply.error("ERR Function not found");
      return;
    }
    f = it->second;
  }
  std::int64_t numkeys = 0;
  if (!parse_i64(ctx.arg(2), &numkeys)) {
    ctx.reply.error("ERR Bad number of keys provided");
    return;
  }
  if (!parse_numkeys(ctx, 2, &numkeys)) return;
  if (!may_run(ctx, f.flags, ro)) return;
  Engine& e = engine();
  sync_functions(e);
  lua_State* L = e.L;
  lua_getfield(L, LUA_REGISTRYINDEX, kFunctionsTable);
  lua_getfield(L, -1, f.name.c_str());
  lua_remove(L, -2);
  if (!lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    ctx.reply.error("ERR Function not found");
    return;
  }
  const auto keys = ctx.argv.subspan(3, static_cast<std::size_t>(numkeys));
  const auto args = ctx.argv.subspan(3 + static_cast<std::size_t>(numkeys));
  push_strings(L, keys);
  push_strings(L, args);
  run(ctx, e, 2, 2, f.name, keys, ro || (f.flags & kNoWrites), (f.flags & kAllowOom) != 0);
}

// Validates and registers a library (FUNCTION LOAD, or RESTORE when `restoring`). Returns false
// with *error set.
bool add_library(std::string_view code, bool replace, bool restoring, std::string* lib_name,
                 std::string* error) {
  if (!parse_library_shebang(code, lib_name, error)) return false;
  // Validate in a scratch state, so that a failing library leaves the worker's state untouched.
  lua_State* L = new_state();
  Loading ld;
  const bool ok = load_library_code(L, code, &ld);
  lua_sandbox::close_state(L);
  if (!ok) {
    *error = ld.error;
    return false;
  }
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto old = reg.libraries.find(*lib_name);
  if (old != reg.libraries.end() && !replace) {
    // Redis 7.0 words the two differently: LOAD quotes the name, RESTORE does not.
    *error = restoring ? "ERR Library " + *lib_name + " already exists"
                       : "ERR Library '" + *lib_name + "' already exists";
    return false;
  }
  for (const auto& f : ld.functions) {
    auto it = reg.functions.find(f.name);
    if (it != reg.functions.end() && it->second.library != *lib_name) {
      *error = "ERR Function " + f.name + " already exists";
      return false;
    }
  }
  if (old != reg.libraries.end()) {
    for (const auto& fn : old->second.functions) reg.functions.erase(fn);
  }
  Library lib{*lib_name, std::string(code), {}};
  for (auto& f : ld.functions) {
    f.library = *lib_name;
    lib.functions.push_back(f.name);
    reg.functions[f.name] = f;
  }
  reg.libraries[*lib_name] = std::move(lib);
  reg.function_gen.fetch_add(1, std::memory_order_release);
  return true;
}

bool flush_mode_ok(CommandContext& ctx, std::string_view command) {
  if (ctx.argc() == 3 && !iequals(ctx.arg(2), "async") && !iequals(ctx.arg(2), "sync")) {
    // (sic: Redis spells SCRIPT's "support" and FUNCTION's "supports")
    ctx.reply.error("ERR " + std::string(command) + " FLUSH only " +
                    (command == "SCRIPT" ? "support" : "supports") + " SYNC|ASYNC option");
    return false;
  }
  if (ctx.argc() > 3) {  // as Redis: SCRIPT repeats its option text, FUNCTION a syntax error
    ctx.reply.error(command == "SCRIPT"
                        ? std::string("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
                        : kvlab::server::err::subcommand_syntax(ctx.arg(0), ctx.arg(1)));
    return false;
  }
  return true;
}

}  // namespace

CacheCounts cache_counts() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  return {reg.scripts.size(), reg.functions.size(), reg.libraries.size()};
}

std::size_t cache_bytes() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  std::size_t n = 0;
  for (const auto& [sha, body] : reg.scripts) n += sizeof sha + sha.capacity() + body.capacity();
  for (const auto& [name, lib] : reg.libraries)
    n += sizeof name + sizeof lib + name.capacity() + lib.code.capacity();
  for (const auto& [name, f] : reg.functions)
    n += sizeof name + sizeof f + name.capacity() + f.description.capacity();
  return n;
}

bool called_from_script() {
  return t_engine.ctx != nullptr;
}

void set_disable_deny_scripts(bool on) {
  g_disable_deny_debug.store(on, std::memory_order_relaxed);
}

int busy_script_kind(unsigned workers) {
  const std::int64_t now = steady_ms();
  const std::int64_t limit = g_busy_threshold_ms.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < std::min(kMaxSlots, workers); ++i) {
    const RunSlot& s = g_slots[i];
    const int kind = s.kind.load(std::memory_order_relaxed);
    if (kind != 0 && now - s.start_ms.load(std::memory_order_relaxed) >= limit) return kind;
  }
  return 0;
}

namespace {
void kill_generic(CommandContext& ctx, bool is_eval) {
  const std::int64_t now = steady_ms();
  const std::int64_t limit = g_busy_threshold_ms.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < std::min(kMaxSlots, ctx.server.num_workers()); ++i) {
    RunSlot& s = g_slots[i];
    const int kind = s.kind.load(std::memory_order_acquire);
    if (kind == 0 || now - s.start_ms.load(std::memory_order_relaxed) < limit) continue;
    if (s.wrote.load(std::memory_order_relaxed)) {
      ctx.reply.error(
          "UNKILLABLE Sorry the script already executed write commands against the dataset. You "
          "can either wait the script termination or kill the server in a hard way using the "
          "SHUTDOWN NOSAVE command.");
      return;
    }
    if (is_eval && kind != 1) {
      ctx.reply.error(err::kBusyFunction);
      return;
    }
    if (!is_eval && kind != 2) {
      ctx.reply.error(err::kBusyScript);
      return;
    }
    s.kill.store(true, std::memory_order_relaxed);
    ctx.reply.ok();
    return;
  }
  ctx.reply.error("NOTBUSY No scripts in execution right now.");
}

// The FUNCTION DUMP payload: kvlab's own format (not Redis's RDB encoding): "KVLABFN1", then per
// library its code's length (8 decimal digits... as text "<len>\n") and code.
constexpr std::string_view kDumpMagic = "KVLABFN1\n";

}  // namespace

ScriptFlags script_flags(std::string_view command, std::span<const std::string_view> argv) {
  ScriptFlags out;
  if (argv.size() < 2) return out;
  std::uint32_t flags = 0;
  if (command.starts_with("fcall")) {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    auto it = reg.functions.find(std::string(argv[1]));
    if (it == reg.functions.end()) return out;
    flags = it->second.flags;
  } else {
    std::string body;
    if (command.starts_with("evalsha")) {
      if (!find_script_body(argv[1], &body)) return out;
    } else {
      body = std::string(argv[1]);
    }
    bool has_shebang = false;
    std::string error;
    if (!parse_eval_shebang(body, &has_shebang, &flags, &error) || !has_shebang) return out;
  }
  out.declared = true;
  out.may_write = !(flags & kNoWrites);
  out.deny_oom = !(flags & (kNoWrites | kAllowOom));
  return out;
}

std::span<const std::string_view> script_keys() {
  const Engine& e = t_engine;
  return e.ctx != nullptr ? std::span<const std::string_view>(e.declared)
                          : std::span<const std::string_view>();
}

std::int64_t busy_threshold_ms() {
  return g_busy_threshold_ms.load(std::memory_order_relaxed);
}
void set_busy_threshold_ms(std::int64_t ms) {
  g_busy_threshold_ms.store(ms, std::memory_order_relaxed);
}
void set_kill_after_ms(std::int64_t ms) {
  g_kill_after_ms.store(ms, std::memory_order_relaxed);
}

void eval_cmd(CommandContext& ctx) {
  eval_generic(ctx, false, false);
}
void evalsha_cmd(CommandContext& ctx) {
  eval_generic(ctx, true, false);
}
void eval_ro_cmd(CommandContext& ctx) {
  eval_generic(ctx, false, true);
}
void evalsha_ro_cmd(CommandContext& ctx) {
  eval_generic(ctx, true, true);
}
void fcall_cmd(CommandContext& ctx) {
  fcall_generic(ctx, false);
}
void fcall_ro_cmd(CommandContext& ctx) {
  fcall_generic(ctx, true);
}

void script_load_cmd(CommandContext& ctx) {
  const std::string body(ctx.arg(2));
  const std::string sha = sha1_hex(body);
  Engine& e = engine();
  std::string error;
  if (!compile(e.L, body, "@user_script", &error)) {
    ctx.reply.error("ERR Error compiling script (new function): " + error);
    return;
  }
  lua_pop(e.L, 1);
  {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.scripts.emplace(sha, body);
  }
  ctx.reply.bulk(sha);
}

void script_exists_cmd(CommandContext& ctx) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  ctx.reply.array(ctx.argc() - 2);
  for (std::size_t i = 2; i < ctx.argc(); ++i)
    ctx.reply.integer(reg.scripts.count(lower_sha(ctx.arg(i))) != 0 ? 1 : 0);
}

void script_flush_cmd(CommandContext& ctx) {
  if (!flush_mode_ok(ctx, "SCRIPT")) return;
  Registry& reg = registry();
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.scripts.clear();
    reg.script_gen.fetch_add(1, std::memory_order_release);
  }
  ctx.reply.ok();
}

void script_kill_cmd(CommandContext& ctx) {
  kill_generic(ctx, true);
}
void function_kill_cmd(CommandContext& ctx) {
  kill_generic(ctx, false);
}

// SCRIPT DEBUG YES|SYNC|NO. Redis then runs the connection's next EVAL in its Lua debugger (LDB):
// with YES in a forked server whose writes are thrown away, with SYNC for real. kvlab has no
// debugger. redis-cli --ldb ignores the answer to SCRIPT DEBUG and sends the EVAL, so refusing
// SCRIPT DEBUG alone would run a script meant for a throw-away session against the data: the
// connection remembers the request and EVAL/EVALSHA refuse until SCRIPT DEBUG NO. As Redis, it is
// refused while replies of earlier commands wait to be sent: later in a pipelined batch, or in
// EXEC (whose array header is written first).
void script_debug_cmd(CommandContext& ctx) {
  const std::string_view mode = ctx.arg(2);
  if (!ctx.conn.out.empty() || ctx.conn.in_exec) {
    ctx.reply.error("ERR SCRIPT DEBUG must be called outside a pipeline");
    return;
  }
  if (iequals(mode, "no")) {
    ctx.conn.script_debug = false;
    ctx.reply.ok();
  } else if (iequals(mode, "yes") || iequals(mode, "sync")) {
    ctx.conn.script_debug = true;
    ctx.reply.error(
        "ERR kvlab has no Lua debugger (LDB): EVAL and EVALSHA are refused on this connection "
        "until SCRIPT DEBUG NO");
  } else {
    ctx.reply.error("ERR Use SCRIPT DEBUG YES/SYNC/NO");
  }
}

void script_help_cmd(CommandContext& ctx) {
  reply_help(
      ctx,
      {"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "DEBUG (YES|SYNC|NO)",
       "    Set the debug mode for subsequent scripts executed.", "EXISTS <sha1> [<sha1> ...]",
       "    Return information about the existence of the scripts in the script cache.",
       "FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache. Very dangerous on replicas.",
       "    When called without the optional mode argument, the behavior is determined by the",
       "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
       "    * ASYNC: Asynchronously flush the scripts cache.",
       "    * SYNC: Synchronously flush the scripts cache.", "KILL",
       "    Kill the currently executing Lua script.", "LOAD <script>",
       "    Load a script into the scripts cache without executing it.", "HELP",
       "    Prints this help."});
}

void function_load_cmd(CommandContext& ctx) {
  bool replace = false;
  const std::size_t i = ctx.argc() - 1;  // the code is the last argument
  for (std::size_t k = 2; k < i; ++k) {
    if (!iequals(ctx.arg(k), "replace")) {
      // Redis prints the option as a C string: up to its first NUL byte.
      const std::string_view opt = ctx.arg(k);
      ctx.reply.error("ERR Unknown option given: " + std::string(opt.substr(0, opt.find('\0'))));
      return;
    }
    replace = true;
  }
  std::string name, error;
  if (!add_library(ctx.arg(i), replace, /*restoring=*/false, &name, &error)) {
    ctx.reply.error(error);
    return;
  }
  ctx.reply.bulk(name);
}

void function_list_cmd(CommandContext& ctx) {
  bool with_code = false;
  std::string pattern;
  bool has_pattern = false;
  for (std::size_t i = 2; i < ctx.argc(); ++i) {
    if (iequals(ctx.arg(i), "withcode") && !with_code) {
      with_code = true;
    } else if (iequals(ctx.arg(i), "libraryname") && !has_pattern) {
      if (i + 1 >= ctx.argc()) {
        ctx.reply.error("ERR library name argument was not given");
        return;
      }
      pattern = std::string(ctx.arg(++i));
      has_pattern = true;
    } else {
      const std::string_view a = ctx.arg(i);  // Redis's %s: up to the first NUL byte
      ctx.reply.error("ERR Unknown argument " + std::string(a.substr(0, a.find('\0'))));
      return;
    }
  }
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  std::vector<const Library*> libs;
  for (const auto& [name, lib] : reg.libraries)
    if (!has_pattern || glob_match(pattern, name, /*nocase=*/true)) libs.push_back(&lib);
  ctx.reply.array(libs.size());
  for (const Library* lib : libs) {
    ctx.reply.map(with_code ? 4 : 3);
    ctx.reply.bulk("library_name");
    ctx.reply.bulk(lib->name);
    ctx.reply.bulk("engine");
    ctx.reply.bulk("LUA");
    ctx.reply.bulk("functions");
    ctx.reply.array(lib->functions.size());
    // Redis lists a library's functions in its dictionary's (random) order; kvlab in the order
    // they were registered.
    for (const std::string& fname : lib->functions) {
      const Function& f = reg.functions.at(fname);
      ctx.reply.map(3);
      ctx.reply.bulk("name");
      ctx.reply.bulk(f.name);
      ctx.reply.bulk("description");
      if (f.description.empty())
        ctx.reply.null();
      else
        ctx.reply.bulk(f.description);
      ctx.reply.bulk("flags");
      ctx.reply.set(f.flag_names.size());
      for (const auto& n : f.flag_names) ctx.reply.simple(n);
    }
    if (with_code) {
      ctx.reply.bulk("library_code");
      ctx.reply.bulk(lib->code);
    }
  }
}

void function_delete_cmd(CommandContext& ctx) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto it = reg.libraries.find(std::string(ctx.arg(2)));
  if (it == reg.libraries.end()) {
    ctx.reply.error("ERR Library not found");
    return;
  }
  for (const auto& f : it->second.functions) reg.functions.erase(f);
  reg.libraries.erase(it);
  reg.function_gen.fetch_add(1, std::memory_order_release);
  ctx.reply.ok();
}

void function_flush_cmd(CommandContext& ctx) {
  if (!flush_mode_ok(ctx, "FUNCTION")) return;
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.libraries.clear();
  reg.functions.clear();
  reg.function_gen.fetch_add(1, std::memory_order_release);
  ctx.reply.ok();
}

void function_stats_cmd(CommandContext& ctx) {
  ctx.reply.map(2);
  ctx.reply.bulk("running_script");
  const std::int64_t now = steady_ms();
  bool shown = false;
  // The running function, if any (an EVAL script is not shown: Redis answers BUSY then).
  for (unsigned i = 0; i < std::min(kMaxSlots, ctx.server.num_workers()) && !shown; ++i) {
    RunSlot& s = g_slots[i];
    if (s.kind.load(std::memory_order_acquire) != 2) continue;
    std::lock_guard<std::mutex> lock(s.mu);
    ctx.reply.map(3);
    ctx.reply.bulk("name");
    ctx.reply.bulk(s.name);
    ctx.reply.bulk("command");
    ctx.reply.array(s.command.size());
    for (const auto& a : s.command) ctx.reply.bulk(a);
    ctx.reply.bulk("duration_ms");
    ctx.reply.integer(now - s.start_ms.load(std::memory_order_relaxed));
    shown = true;
  }
  if (!shown) ctx.reply.null();
  ctx.reply.bulk("engines");
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  ctx.reply.map(1);
  ctx.reply.bulk("LUA");
  ctx.reply.map(2);
  ctx.reply.bulk("libraries_count");
  ctx.reply.integer(static_cast<std::int64_t>(reg.libraries.size()));
  ctx.reply.bulk("functions_count");
  ctx.reply.integer(static_cast<std::int64_t>(reg.functions.size()));
}

void function_dump_cmd(CommandContext& ctx) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  std::string out(kDumpMagic);
  for (const auto& [name, lib] : reg.libraries) {
    out += std::to_string(lib.code.size());
    out += '\n';
    out += lib.code;
  }
  ctx.reply.bulk(out);
}

void function_restore_cmd(CommandContext& ctx) {
  std::string_view policy = "append";
  if (ctx.argc() == 4) {
    if (iequals(ctx.arg(3), "flush"))
      policy = "flush";
    else if (iequals(ctx.arg(3), "replace"))
      policy = "replace";
    else if (!iequals(ctx.arg(3), "append")) {
      ctx.reply.error(
          "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
      return;
    }
  } else if (ctx.argc() > 4) {
    ctx.reply.error(kvlab::server::err::subcommand_syntax(ctx.arg(0), ctx.arg(1)));
    return;
  }
  std::string_view p = ctx.arg(2);
  std::vector<std::string> codes;
  bool ok = p.starts_with(kDumpMagic);
  p.remove_prefix(ok ? kDumpMagic.size() : 0);
  while (ok && !p.empty()) {
    const std::size_t nl = p.find('\n');
    std::int64_t n = 0;
    if (nl == std::string_view::npos || !parse_i64(p.substr(0, nl), &n) || n < 0 ||
        static_cast<std::size_t>(n) > p.size() - nl - 1) {
      ok = false;
      break;
    }
    codes.emplace_back(p.substr(nl + 1, static_cast<std::size_t>(n)));
    p.remove_prefix(nl + 1 + static_cast<std::size_t>(n));
  }
  if (!ok) {
    ctx.reply.error("ERR DUMP payload version or checksum are wrong");
    return;
  }
  Registry& reg = registry();
  std::map<std::string, Library> saved_libs;
  std::map<std::string, Function, CaseLess> saved_fns;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    saved_libs = reg.libraries;
    saved_fns = reg.functions;
    if (policy == "flush") {
      reg.libraries.clear();
      reg.functions.clear();
    }
  }
  for (const auto& code : codes) {
    std::string name, error;
    if (!add_library(code, policy == "replace", /*restoring=*/true, &name, &error)) {
      std::lock_guard<std::mutex> lock(reg.mu);  // all or nothing
      reg.libraries = std::move(saved_libs);
      reg.functions = std::move(saved_fns);
      reg.function_gen.fetch_add(1, std::memory_order_release);
      ctx.reply.error(error);
      return;
    }
  }
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.function_gen.fetch_add(1, std::memory_order_release);
  }
  ctx.reply.ok();
}

void function_help_cmd(CommandContext& ctx) {
  reply_help(
      ctx, {"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME",
            "    argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored "
            "using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a "
            "restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, "
            "abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On "
            "collision, replace the old",
            "      libraries with the new libraries (notice that even on this case there is no way "
            "to restore",
            "      the libraries in a way that leaves the server state incoherent).",
            "HELP",
            "    Print this help."});
}

}  // namespace scripting
}  // namespace kvlab::server

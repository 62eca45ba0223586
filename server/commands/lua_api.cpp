// What a script sees: the redis.* API (call, pcall, error_reply, sha1hex, log, setresp, …), the
// sandboxed globals (read-only proxies of the standard tables, the environment that refuses new
// globals), the time-limit hook, and the per-worker lua_State they are installed in.

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

#include "server/features/lua_sandbox.hpp"
#include "server/features/scripting.hpp"
#include "server/commands/scripting_engine.hpp"
#include "server/protocol/errors.hpp"
#include "server/protocol/resp_parser.hpp"
#include "server/util/sha1.hpp"

namespace kvlab::server::scripting {

namespace {

// ---- redis.* ----

// Commands a script may not run: Redis 7.0's noscript flag (src/commands/*.json), on whole
// commands and on single subcommands. BLMPOP and BZMPOP are not among them: they run without
// blocking, as in MULTI.
bool denied_in_script(std::string_view name, std::span<const std::string_view> argv) {
  static const std::unordered_set<std::string_view> kDenied = {
      "auth",         "bgrewriteaof", "bgsave",     "blmove",     "blpop",      "brpop",
      "brpoplpush",   "bzpopmax",     "bzpopmin",   "debug",      "discard",    "eval",
      "eval_ro",      "evalsha",      "evalsha_ro", "exec",       "failover",   "fcall",
      "fcall_ro",     "hello",        "monitor",    "multi",      "psubscribe", "psync",
      "punsubscribe", "quit",         "replconf",   "replicaof",  "reset",      "role",
      "save",         "shutdown",     "slaveof",    "ssubscribe", "subscribe",  "sunsubscribe",
      "sync",         "unsubscribe",  "unwatch",    "wait",       "watch"};
  static const std::unordered_set<std::string_view> kDeniedSub = {
      "client|caching",      "client|getname",   "client|getredir",  "client|id",
      "client|info",         "client|kill",      "client|list",      "client|no-evict",
      "client|pause",        "client|reply",     "client|setname",   "client|tracking",
      "client|trackinginfo", "client|unblock",   "client|unpause",   "cluster|reset",
      "config|get",          "config|resetstat", "config|rewrite",   "config|set",
      "function|delete",     "function|dump",    "function|flush",   "function|kill",
      "function|list",       "function|load",    "function|restore", "function|stats",
      "script|debug",        "script|exists",    "script|flush",     "script|kill",
      "script|load"};
  if (kDenied.count(name) != 0) return true;
  // LATENCY's and ACL's subcommands but HELP.
  if (name == "latency" || name == "acl") return !(argv.size() >= 2 && iequals(argv[1], "help"));
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
  Engine& e = this_engine();
  const int argc = lua_gettop(L);
  auto fail = [&](std::string_view text) {
    *error = std::string(text);
    return CallOutcome::kRefused;
  };
  if (argc == 0) return fail(err::kLuaCallNoArgs);
  std::vector<std::string> args;
  args.reserve(static_cast<std::size_t>(argc));
  for (int i = 1; i <= argc; ++i) {
    const int t = lua_type(L, i);
    if (t != LUA_TSTRING && t != LUA_TNUMBER) return fail(err::kLuaCallArgType);
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
  if (e.ctx == nullptr) return fail(err::kLuaCallWhileLoading);
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
  if (denied_in_script(lower, argv) && !debug_allowed) return refuse(err::kLuaCommandDenied);
  // XREAD / XREADGROUP with BLOCK: refused where Redis 7.0's option loop meets BLOCK (after the
  // options before it, before STREAMS), with the command's name as the script wrote it. Redis
  // counts that as a failed call of the command, not a rejected one.
  if (lower == "xread" || lower == "xreadgroup") {
    for (std::size_t i = 1; i < argv.size(); ++i) {
      const bool more = i + 1 < argv.size();
      if (iequals(argv[i], "block") && more) return refuse(err::lua_block_denied(argv[0]), false);
      if (iequals(argv[i], "streams")) break;
      if (iequals(argv[i], "count") && more)
        ++i;
      else if (lower == "xreadgroup" && iequals(argv[i], "group") && i + 2 < argv.size())
        i += 2;
    }
  }
  if (cmd == nullptr) return refuse(err::kLuaUnknownCommand);
  if (!arity_ok(spec->arity, argv.size())) return refuse(err::kLuaWrongArity);
  // A read-only script may not write, nor run what Redis flags may_replicate (PUBLISH, PFCOUNT),
  // which CLIENT PAUSE WRITE holds back as writes.
  if (e.read_only && ((spec->flags & kWrite) || may_replicate(*spec)))
    return refuse(err::kLuaWriteInRo);
  // The server's state refuses only the script's first write: once it has written, stopping it
  // half-way would leave a partial effect (Redis 7.0's order: replicas, then memory).
  const bool wrote = e.slot->wrote.load(std::memory_order_relaxed);  // this thread's own store
  if ((spec->flags & kWrite) && !wrote && !outer.server.enough_good_replicas())
    return refuse(err::kNoReplicas);
  if ((spec->flags & kDenyOom) && !wrote && !e.allow_oom && oom_before_command())
    return refuse(err::kOom);
  if (e.check_keys && !(spec->flags & kChannelKeys)) {  // a shard channel is no keyspace key
    if (spec->flags & kKeyspaceWide) return refuse(err::kLuaKeyspaceWide);
    std::vector<std::size_t> idx;
    command_keys(*spec, argv, &idx);
    for (std::size_t i : idx) {
      if (std::find(e.declared.begin(), e.declared.end(), argv[i]) == e.declared.end())
        return refuse(err::lua_undeclared_key(argv[i].substr(0, 128)));
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
  if (!parsed) return fail(err::kLuaMalformedReply);
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
  lua_pushlstring(L, err::kErrCode.data(), err::kErrCode.size());
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
    return push_reply_table(L, "err", err::kLuaWrongArgs);
  std::size_t n = 0;
  const char* p = lua_tolstring(L, 1, &n);
  std::string_view m(p, n);
  if (m.starts_with('-')) m.remove_prefix(1);
  std::string text;
  const std::size_t sp = m.find(' ');
  if (!std::string_view(p, n).starts_with('-')) {
    text = std::string(m);  // error_reply prepends '-': "E1 bad" -> code E1
    const std::size_t s2 = text.find(' ');
    if (s2 == std::string::npos) text = err::with_err_code(text);
  } else if (sp == std::string_view::npos) {
    text = err::with_err_code(m);
  } else {
    text = std::string(m);
  }
  while (!text.empty() && (text.back() == '\r' || text.back() == '\n')) text.pop_back();
  return push_reply_table(L, "err", text);
}

int l_status_reply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING)
    return push_reply_table(L, "err", err::kLuaWrongArgs);
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

// Argument idx as C's cast to int truncates it (what Redis reads), or `otherwise` when the
// truncated value is not in [lo, hi]: a cast of inf, NaN or 1e300 to int is undefined behaviour,
// so the range is checked on the double first.
int truncated_in(lua_State* L, int idx, int lo, int hi, int otherwise) {
  const lua_Number d = lua_tonumber(L, idx);
  return d > lo - 1 && d < hi + 1 ? static_cast<int>(d) : otherwise;
}

int l_log(lua_State* L) {
  const int argc = lua_gettop(L);
  if (argc < 2) return raise_plain(L, "redis.log() requires two arguments or more.");
  if (!lua_isnumber(L, 1)) return raise_plain(L, "First argument must be a number (log level).");
  const int level = truncated_in(L, 1, 0, 3, -1);
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
  const int v = truncated_in(L, 1, 2, 3, 0);
  if (v != 2 && v != 3) return raise_plain(L, "RESP version must be 2 or 3.");
  this_engine().resp = v;
  return 0;
}

int l_set_repl(lua_State* L) {
  if (lua_gettop(L) != 1) return raise_plain(L, "redis.set_repl() requires one argument.");
  const int v = truncated_in(L, 1, 0, 3, -1);
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

}  // namespace

int l_register_function_at_runtime(lua_State* L) {
  return luaL_error(L, "redis.register_function can only be called on FUNCTION LOAD command");
}

namespace {

// math.random / math.randomseed on a per-state erand48 generator (Redis replaces Lua's too).
int l_random(lua_State* L) {
  const double r = erand48(this_engine().rand_state);
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
  this_engine().rand_state[0] = 0x330e;
  this_engine().rand_state[1] = static_cast<unsigned short>(seed & 0xffff);
  this_engine().rand_state[2] = static_cast<unsigned short>(seed >> 16);
  return 0;
}

}  // namespace

thread_local bool t_env_loading = false;

namespace {

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

}  // namespace

int l_error_handler(lua_State* L) {
  if (lua_type(L, 1) != LUA_TTABLE) {
    // 'ERR ' .. tostring(err), as Redis's handler.
    std::string text(err::kErrCode);
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
  RunSlot* slot = this_engine().slot;
  if (slot == nullptr) return;
  const std::int64_t kill_after = g_kill_after_ms.load(std::memory_order_relaxed);
  if (kill_after > 0 && steady_ms() - slot->start_ms.load(std::memory_order_relaxed) >= kill_after)
    slot->kill.store(true, std::memory_order_relaxed);
  // Past the threshold this worker's other clients get BUSY (or run SCRIPT/FUNCTION KILL), as in
  // Redis; clients of other workers are served normally unless they wait for the script's locks.
  if (this_engine().ctx != nullptr && !slot->kill.load(std::memory_order_relaxed) &&
      steady_ms() - slot->start_ms.load(std::memory_order_relaxed) >=
          g_busy_threshold_ms.load(std::memory_order_relaxed)) {
    CommandContext& ctx = *this_engine().ctx;
    const bool function = slot->kind.load(std::memory_order_relaxed) == 2;
    ctx.worker.serve_while_busy(&ctx.conn, function);
  }
  if (slot->kill.load(std::memory_order_relaxed)) {
    lua_sethook(L, hook, LUA_MASKLINE | LUA_MASKCOUNT, 1);  // pcall cannot swallow it
    lua_pushstring(L, "Script killed by user with SCRIPT KILL...");
    lua_error(L);
  }
}

namespace {

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

}  // namespace

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
  const std::pair<const char*, lua_CFunction> fns[] = {{"call", l_redis_call},
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
  Engine& e = this_engine();
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

}  // namespace kvlab::server::scripting

// Running a script: EVAL's shebang flags, numkeys, the checks before a script may run, the run
// itself (slot, time limit, error statistics, reply), and EVAL/EVALSHA and their _RO forms.

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
    *error = err::shebang_engine(words.empty() ? line : words[0]);
    return false;
  }
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (!words[i].starts_with("flags=")) {
      *error = err::shebang_option(words[i]);
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
        *error = err::shebang_flag(f);
        return false;
      }
      if (c == std::string_view::npos) break;
      list = list.substr(c + 1);
    }
  }
  return true;
}

bool parse_numkeys(CommandContext& ctx, std::size_t at, std::int64_t* n) {
  if (!arg_i64(ctx, ctx.arg(at), n)) return false;
  if (*n < 0) {
    ctx.reply.error(err::kNumkeysNegative);
    return false;
  }
  if (static_cast<std::uint64_t>(*n) > ctx.argc() - at - 1) {
    ctx.reply.error(err::kNumkeysTooMany);
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

namespace {

// Whether redis.call must refuse keys outside KEYS (see the file comment of scripting.hpp).
bool must_check_keys(CommandContext& ctx) {
  return ctx.server.atomicity().scheme() == Atomicity::Scheme::kKeyLocks &&
         !ctx.server.config().lua_undeclared_keys;
}

}  // namespace

bool may_run(CommandContext& ctx, std::uint32_t flags, bool ro) {
  if (!(flags & kNoWrites)) {
    if (ro) {
      ctx.reply.error(err::kScriptWriteInRo);
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
    std::string text =
        lua_isstring(L, -1) ? lua_tostring(L, -1) : std::string(err::kLuaUnknownError);
    lua_pop(L, 1);
    raw_field(L, -1, "source");
    const char* source = lua_tostring(L, -1);
    std::string where = source != nullptr ? source : "?";
    lua_pop(L, 1);
    raw_field(L, -1, "line");
    // The script may set any number here: cast only one a long holds (else undefined behaviour).
    const lua_Number line_d = lua_tonumber(L, -1);
    const long line = line_d > -1e15 && line_d < 1e15 ? static_cast<long>(line_d) : 0;
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
    ctx.reply.error(err::with_err_code(m != nullptr ? m : "error running script"));
  }
  lua_settop(L, fn_at - 1);
  lua_sandbox::after_script(L);
  lua_gc(L, LUA_GCSTEP, 1);
}

namespace {

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
    ctx.reply.error(err::kScriptDebugRefused);
    return;
  }
  if (by_sha && ctx.arg(1).size() != 40) {  // as Redis: no such script, before numkeys
    ctx.reply.error(err::kNoScript);
    return;
  }
  std::int64_t numkeys = 0;
  if (!parse_numkeys(ctx, 2, &numkeys)) return;
  std::string sha, body;
  Registry& reg = registry();
  if (by_sha) {
    if (!find_script_body(ctx.arg(1), &body, &sha)) {
      ctx.reply.error(err::kNoScript);
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
      ctx.reply.error(err::script_compile(error));
      return;
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, sha.c_str());
    if (!by_sha) {
      std::lock_guard<std::mutex> lock(reg.mu);
      reg.scripts.emplace(sha, body);
    }
  }
  lua_remove(L, -2);                              // the scripts table
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

}  // namespace

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

}  // namespace kvlab::server::scripting

// The script registry and SCRIPT: the process-wide cache of EVAL bodies and FUNCTION libraries,
// the per-worker run slots SCRIPT KILL and FUNCTION KILL read, and the public entry points
// scripting.hpp declares. The engine's parts are listed in scripting_engine.hpp.

#include "server/features/scripting.hpp"

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
#include "server/commands/scripting_engine.hpp"
#include "server/protocol/errors.hpp"
#include "server/protocol/resp_parser.hpp"
#include "server/util/sha1.hpp"

namespace kvlab::server::scripting {

Registry& registry() {
  static Registry r;
  return r;
}

namespace {

// A script's SHA1 as the registry keys it: Redis matches EVALSHA and SCRIPT EXISTS digests
// case-insensitively.
std::string lower_sha(std::string_view sha) {
  std::string s(sha);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

bool find_script_body(std::string_view sha, std::string* body, std::string* key) {
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

std::atomic<std::int64_t> g_kill_after_ms{0};

RunSlot g_slots[kMaxSlots];

thread_local Engine t_engine;

Engine::~Engine() {
  if (L != nullptr) lua_sandbox::close_state(L);
  if (scratch != nullptr) lua_sandbox::close_state(scratch);
}

Engine& this_engine() {
  return t_engine;
}

bool flush_mode_ok(CommandContext& ctx, std::string_view command) {
  if (ctx.argc() == 3 && !iequals(ctx.arg(2), "async") && !iequals(ctx.arg(2), "sync")) {
    // (sic: Redis spells SCRIPT's "support" and FUNCTION's "supports")
    ctx.reply.error(kvlab::server::err::flush_option(command));
    return false;
  }
  if (ctx.argc() > 3) {  // as Redis: SCRIPT repeats its option text, FUNCTION a syntax error
    ctx.reply.error(command == "SCRIPT"
                        ? std::string(kvlab::server::err::kScriptFlushOption)
                        : kvlab::server::err::subcommand_syntax(ctx.arg(0), ctx.arg(1)));
    return false;
  }
  return true;
}

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
      ctx.reply.error(err::kUnkillable);
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
  ctx.reply.error(err::kNotBusy);
}

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

void script_load_cmd(CommandContext& ctx) {
  const std::string body(ctx.arg(2));
  const std::string sha = sha1_hex(body);
  Engine& e = engine();
  std::string error;
  if (!compile(e.L, body, "@user_script", &error)) {
    ctx.reply.error(err::script_compile(error));
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
    ctx.reply.error(err::kScriptDebugPipeline);
    return;
  }
  if (iequals(mode, "no")) {
    ctx.conn.script_debug = false;
    ctx.reply.ok();
  } else if (iequals(mode, "yes") || iequals(mode, "sync")) {
    ctx.conn.script_debug = true;
    ctx.reply.error(err::kScriptDebugNoLdb);
  } else {
    ctx.reply.error(err::kScriptDebugUsage);
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

}  // namespace kvlab::server::scripting

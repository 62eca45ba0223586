// Redis 7.0's functions: loading a library (its shebang, the loading-time API, registered
// functions and their flags), FCALL, and the FUNCTION subcommands (LOAD, LIST, DELETE, FLUSH,
// STATS, DUMP, RESTORE, HELP).

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
  lua_pushlstring(L, err::kErrCode.data(), err::kErrCode.size());
  lua_pushstring(L, error);
  lua_concat(L, 2);
  lua_setfield(L, -2, "err");
  return lua_error(L);
}

}  // namespace

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

namespace {

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
    *error = err::kLibraryNoMetadata;
    return false;
  }
  std::vector<std::string> words;
  if (!split_inline_args(code.substr(0, code.find('\n')), &words)) {
    *error = err::kLibraryBadMetadata;
    return false;
  }
  if (words.empty() || !iequals(std::string_view(words[0]).substr(2), "lua")) {
    *error = err::engine_not_found(words.empty() ? std::string() : words[0].substr(2));
    return false;
  }
  name->clear();
  bool named = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (words[i].size() >= 5 && iequals(std::string_view(words[i]).substr(0, 5), "name=")) {
      if (named) {
        *error = err::kLibraryNameTwice;
        return false;
      }
      named = true;
      *name = words[i].substr(5);
    } else {
      *error = err::library_bad_metadata_value(words[i]);
      return false;
    }
  }
  if (!named) {
    *error = err::kLibraryNoName;
    return false;
  }
  if (!valid_name(*name)) {
    *error = err::kLibraryBadName;
    return false;
  }
  return true;
}

// Runs a library's code in L with redis.register_function live; fills ld. The callbacks land in
// L's functions table.
bool load_library_code(lua_State* L, std::string_view code, Loading* ld) {
  std::string error;
  if (!compile(L, code, "@user_function", &error)) {
    ld->error = err::function_compile(error);
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
    ld->error = err::function_register(text);
  } else if (ld->functions.empty()) {
    ld->error = err::kNoFunctions;
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
      ctx.reply.error(err::kFunctionNotFound);
      return;
    }
    f = it->second;
  }
  std::int64_t numkeys = 0;
  if (!parse_i64(ctx.arg(2), &numkeys)) {
    ctx.reply.error(err::kBadNumkeys);
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
    ctx.reply.error(err::kFunctionNotFound);
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
  // Validate in this thread's scratch state, so that a failing library leaves the worker's state
  // untouched. Its function table starts empty for each library; after a failure the state is
  // dropped, so that nothing a failed load left behind meets the next one.
  Engine& e = this_engine();
  if (e.scratch == nullptr) e.scratch = new_state();
  lua_State* L = e.scratch;
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kFunctionsTable);
  Loading ld;
  const bool ok = load_library_code(L, code, &ld);
  lua_newtable(L);  // the library's functions are not kept here
  lua_setfield(L, LUA_REGISTRYINDEX, kFunctionsTable);
  if (ok) {
    lua_gc(L, LUA_GCSTEP, 1);
  } else {
    lua_sandbox::close_state(L);
    e.scratch = nullptr;
  }
  if (!ok) {
    *error = ld.error;
    return false;
  }
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto old = reg.libraries.find(*lib_name);
  if (old != reg.libraries.end() && !replace) {
    // Redis 7.0 words the two differently: LOAD quotes the name, RESTORE does not.
    *error = restoring ? err::library_exists_restore(*lib_name) : err::library_exists(*lib_name);
    return false;
  }
  for (const auto& f : ld.functions) {
    auto it = reg.functions.find(f.name);
    if (it != reg.functions.end() && it->second.library != *lib_name) {
      *error = err::function_exists(f.name);
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

// The FUNCTION DUMP payload: kvlab's own format (not Redis's RDB encoding): "KVLABFN1", then per
// library its code's length (8 decimal digits... as text "<len>\n") and code.
constexpr std::string_view kDumpMagic = "KVLABFN1\n";

}  // namespace

void fcall_cmd(CommandContext& ctx) {
  fcall_generic(ctx, false);
}

void fcall_ro_cmd(CommandContext& ctx) {
  fcall_generic(ctx, true);
}

void function_load_cmd(CommandContext& ctx) {
  bool replace = false;
  const std::size_t i = ctx.argc() - 1;  // the code is the last argument
  for (std::size_t k = 2; k < i; ++k) {
    if (!iequals(ctx.arg(k), "replace")) {
      // Redis prints the option as a C string: up to its first NUL byte.
      const std::string_view opt = ctx.arg(k);
      ctx.reply.error(err::unknown_option_given(opt.substr(0, opt.find('\0'))));
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
        ctx.reply.error(err::kLibraryNameMissing);
        return;
      }
      pattern = std::string(ctx.arg(++i));
      has_pattern = true;
    } else {
      const std::string_view a = ctx.arg(i);  // Redis's %s: up to the first NUL byte
      ctx.reply.error(err::unknown_argument(a.substr(0, a.find('\0'))));
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
    ctx.reply.error(err::kLibraryNotFound);
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
      ctx.reply.error(err::kRestorePolicy);
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
    ctx.reply.error(err::kDumpPayload);
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

}  // namespace kvlab::server::scripting

// The Lua engine's internals, shared by its parts (not for use outside the files listed here;
// features/scripting.hpp is the public interface, which dispatch and INFO use):
//   scripting_registry.cpp   the registry of scripts and libraries, run slots, SCRIPT
//   lua_values.cpp           Lua <-> RESP conversions
//   lua_api.cpp              redis.*, the sandboxed globals, the hook, the per-worker lua_State
//   scripting_eval.cpp       shebang flags, the checks before a run, the run, EVAL
//   scripting_functions.cpp  libraries, FCALL, FUNCTION
// The engine is in the commands layer: it runs commands as a client does (redis.call builds a
// CommandContext over the caller's connection and worker and goes through dispatch). The Lua
// sandbox and the libraries it loads (lua_sandbox, lua_struct, lua_cmsgpack) need none of that and
// stay in features/.
#pragma once

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
int luaopen_cjson(lua_State*);
int luaopen_bit(lua_State*);
}

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/commands/common.hpp"

namespace kvlab::server::scripting {

inline std::int64_t steady_ms() {
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

inline constexpr unsigned kMaxSlots = 1024;

// ---- The per-worker Lua state ----

struct Engine {
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  // Closes both states when the worker thread exits (t_engine is thread_local), so that a
  // server that stops frees every Lua state it built.
  ~Engine();

  lua_State* L = nullptr;
  // Where FUNCTION LOAD and RESTORE validate a library, apart from L so that a failing library
  // leaves L untouched (add_library). Built on first use and kept: building a state costs about
  // twenty times what loading a small library does. Rebuilt after a library failed to load.
  lua_State* scratch = nullptr;
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

inline constexpr const char* kFunctionsTable = "__kvlab_functions";

// The field of an error table that the error statistics have counted already (a command's error
// reply, or a counted refusal): the script's reply of that error is not counted again. Redis 7.0
// sets the same field, which a script may read.
inline constexpr const char* kCountedField = "ignore_error_stats_update";

// ---- scripting.cpp: the registry and the run slots ----

Registry& registry();

// The body SCRIPT LOAD or EVAL registered under sha (any case), into *body, and the lowered
// digest it is keyed by into *key when key is not null; false when none.
bool find_script_body(std::string_view sha, std::string* body, std::string* key = nullptr);

extern std::atomic<std::int64_t> g_busy_threshold_ms;

extern std::atomic<bool> g_disable_deny_debug;  // set_disable_deny_scripts()

// set_kill_after_ms(): 0, or the run time after which a script is killed as by SCRIPT KILL.
extern std::atomic<std::int64_t> g_kill_after_ms;

extern RunSlot g_slots[kMaxSlots];

// The calling thread's engine (a thread_local in scripting.cpp), for the other files of the
// engine. They reach it through this function, defined beside the variable, not through an
// extern declaration of the variable: under UBSan an access to the
// extern thread_local from lua_api.cpp saw a null Engine (tests/server scripting_test, an EVAL
// whose redis.call has 8,000 arguments), which the access in the defining file does not.
Engine& this_engine();

// SCRIPT FLUSH's and FUNCTION FLUSH's mode argument; replies the error and returns false when bad.
bool flush_mode_ok(CommandContext& ctx, std::string_view command);

// ---- lua_values.cpp: Lua <-> RESP ----

// Pushes t[field] of the table at idx without metamethods. A script's value is read outside the
// script's protected call, where a metamethod's error (a proxy's __index raises for missing
// names) would be an unprotected error and abort the process.
void raw_field(lua_State* L, int idx, const char* field);

// The script's result for the caller's writer r, as Redis 7.0: booleans are 1/nil when the script
// speaks RESP2 (redis.setresp) and true/false in RESP3; {double=}, {big_number=},
// {verbatim_string={format=, string=}}, {map={}} and {set={}} tables give those RESP3 types
// (encoded for r's protocol) whatever the script's.
void lua_to_reply(lua_State* L, ReplyWriter& r, int script_resp, int depth = 0);

// Parses one RESP2 or RESP3 reply at s[*pos] and pushes it, as Redis 7.0 converts them: a RESP3
// map becomes {map={k=v}}, a set {set={e=true}}, a double {double=n}, a big number
// {big_number="..."}, a verbatim string {verbatim_string={format=, string=}}, null nil, a
// boolean a Lua boolean, and an attribute is skipped. Returns false on a malformed reply.
bool push_reply(lua_State* L, std::string_view s, std::size_t* pos, int depth = 0);

// ---- lua_api.cpp: redis.*, the sandbox, the per-worker state ----

// redis.register_function called from a running script (not while a library loads): an error.
int l_register_function_at_runtime(lua_State* L);

// Set while a library's code runs (FUNCTION LOAD): its globals are then the loading API alone,
// `redis` with register_function, log and the constants, as in Redis 7.0; the functions it
// registers see every global when they run later (their environment is this same proxy).
extern thread_local bool t_env_loading;

// The message handler of every script call: {err = "ERR msg"} for a string, the table as is,
// plus where it was raised (the first Lua frame above C functions).
int l_error_handler(lua_State* L);

// The count hook every script runs under: the time limit, SCRIPT KILL, serving other connections.
void hook(lua_State* L, lua_Debug*);

// A new sandboxed state: the libraries, redis.*, the guards (lua_sandbox.hpp), read-only tables.
lua_State* new_state();

// The calling worker's engine, its state created on first use.
Engine& engine();

// Compiles body as a chunk named `chunk`, with the sandbox environment; pushes the function or
// returns false with *error set (the Lua message).
bool compile(lua_State* L, std::string_view body, const char* chunk, std::string* error);

// ---- scripting_eval.cpp: checks and the run ----

// Parses "#!lua flags=a,b" (EVAL). Returns false with *error set.
bool parse_eval_shebang(std::string_view body, bool* has, std::uint32_t* flags, std::string* error);

// Parses numkeys as Redis does; replies the error and returns false when invalid.
bool parse_numkeys(CommandContext& ctx, std::size_t at, std::int64_t* n);

// Pushes a table of the strings v (KEYS, ARGV).
void push_strings(lua_State* L, std::span<const std::string_view> v);

// The checks of a script or function that declares flags, before it runs, as Redis 7.0 makes
// them: one that may write is refused by the _RO commands and without enough good replicas
// (min-replicas-to-write), and one that is neither no-writes nor allow-oom under OOM. dispatch()
// refuses the last two before a top-level command runs (rejected calls); they arise here inside
// EXEC. Replies the error and returns false when the script may not run.
bool may_run(CommandContext& ctx, std::uint32_t flags, bool ro);

// Calls the function below the arguments on the stack (nargs of them) under the handler and
// replies its result or error. `name` is the script's sha or the function's name.
void run(CommandContext& ctx, Engine& e, int nargs, int kind, std::string_view name,
         std::span<const std::string_view> keys, bool read_only, bool allow_oom);

// ---- scripting_functions.cpp ----

// While a library loads, `redis` offers only register_function, log and the constants
// (Redis 7.0's loading API); anything else is a missing global.
int l_loading_redis_index(lua_State* L);

}  // namespace kvlab::server::scripting

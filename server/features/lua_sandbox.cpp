// The Lua sandbox's guards (see lua_sandbox.hpp for the invariants they keep).
//
// Rule for this file: the functions that run inside Lua (the checked versions) hold no C++ object
// with a destructor while they call the Lua API, because a Lua error unwinds with longjmp and
// would skip it.
extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "server/features/lua_sandbox.hpp"

namespace kvlab::server::lua_sandbox {
namespace {

// ---- The capped allocator (invariant 1) ----

// The limit is enforced only while script code or the parser runs: both are protected calls,
// where a refused allocation becomes a clean "not enough memory" error. The server's own API
// calls between scripts (pushing KEYS, caching a compiled script) are unprotected, and a refusal
// there would abort the process; they are small and bounded by the request.
struct Budget {
  std::size_t used = 0;
  bool enforce = false;
};

// set_memory_limit(); relaxed: a setting, read on each allocation that grows a block.
std::atomic<std::size_t> g_limit{kMemoryLimit};

void* capped_alloc(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
  auto* b = static_cast<Budget*>(ud);
  if (nsize == 0) {
    std::free(ptr);
    b->used -= osize;
    return nullptr;
  }
  if (b->enforce && nsize > osize) {
    const std::size_t limit = g_limit.load(std::memory_order_relaxed);
    if (nsize - osize > limit - std::min(b->used, limit)) return nullptr;
  }
  void* p = std::realloc(ptr, nsize);
  if (p == nullptr) return nullptr;
  b->used = b->used - osize + nsize;
  return p;
}

Budget* budget_of(lua_State* L) {
  void* ud = nullptr;
  lua_getallocf(L, &ud);
  return static_cast<Budget*>(ud);
}

int panic(lua_State* L) {
  std::fprintf(stderr, "kvlab-server: unprotected error in a Lua state: %s\n",
               lua_tostring(L, -1) != nullptr ? lua_tostring(L, -1) : "?");
  std::abort();
}

// Sets whether the limit applies and returns the previous setting.
bool enforce(lua_State* L, bool on) {
  Budget* b = budget_of(L);
  const bool was = b->enforce;
  b->enforce = on;
  return was;
}

// ---- The libraries' own functions, called by the checked versions ----

// The C functions behind the library entries that the checked versions replace. They are the
// same in every state (one shared library each), so a state stores them before it reads them on
// the same thread; concurrent stores from other workers' states write the same values, which is
// why relaxed order is enough.
struct Originals {
  std::atomic<lua_CFunction> tohex{nullptr}, rep{nullptr}, find{nullptr}, match{nullptr},
      gmatch{nullptr}, gsub{nullptr}, insert{nullptr}, remove{nullptr}, json_encode{nullptr},
      cjson_new{nullptr};
};
Originals g_orig;

constexpr const char* kJsonConfigFns[] = {"encode_sparse_array",   "encode_max_depth",
                                          "decode_max_depth",      "encode_number_precision",
                                          "encode_keep_buffer",    "encode_invalid_numbers",
                                          "decode_invalid_numbers"};
constexpr int kJsonConfigCount = static_cast<int>(std::size(kJsonConfigFns));
std::atomic<lua_CFunction> g_json_config[kJsonConfigCount];

lua_CFunction orig(const std::atomic<lua_CFunction>& f) {
  return f.load(std::memory_order_relaxed);
}

// Registry fields.
constexpr const char* kJsonDefaults = "__kvlab_cjson_defaults";  // {{fn, {values}}, ...}
// The registry field of the scripts' environment (install_guards' env_key). Every worker stores
// the same pointer when it builds its state; relaxed, as for the originals above.
std::atomic<const char*> g_env_key{""};

// Set when a script changed cjson's settings (module-wide in lua-cjson): after_script() puts
// them back. Per worker, as the state is.
thread_local bool t_json_dirty = false;

// ---- Base library ----

// unpack as Lua 5.1 documents it. Lua 5.1.5 computes the count as e - i + 1 in int, which
// overflows for ranges such as (-2, INT_MAX) and passes a negative size to lua_checkstack
// (CVE-2025-46817). The count minus one is computed in unsigned, where it cannot overflow.
int l_unpack(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const int i = luaL_optint(L, 2, 1);
  const int e = luaL_opt(L, luaL_checkint, 3, luaL_getn(L, 1));
  if (i > e) return 0;
  const unsigned n1 = static_cast<unsigned>(e) - static_cast<unsigned>(i);
  if (n1 >= static_cast<unsigned>(INT_MAX) || !lua_checkstack(L, static_cast<int>(n1) + 1))
    return luaL_error(L, "too many results to unpack");
  for (int k = i;; ++k) {
    lua_rawgeti(L, 1, k);
    if (k == e) break;
  }
  return static_cast<int>(n1) + 1;
}

// Feeds a chunk to lua_load. A leading ESC would make Lua 5.1 load the text as bytecode, which
// its VM runs unverified (arbitrary memory access: CVE-2015-4335's class); a blank before it
// makes the parser see it as the stray character it is, as Redis's text-only loader does, with
// the same error and the same line numbers.
struct TextReader {
  const char* data;
  std::size_t size;
  int stage;
};
const char* read_text(lua_State*, void* ud, std::size_t* size) {
  auto* r = static_cast<TextReader*>(ud);
  if (r->stage == 0) {
    r->stage = 1;
    if (r->size > 0 && r->data[0] == LUA_SIGNATURE[0]) {
      *size = 1;
      return " ";
    }
  }
  if (r->stage == 1) {
    r->stage = 2;
    *size = r->size;
    return r->data;
  }
  *size = 0;
  return nullptr;
}

// Gives the function on top of the stack the scripts' environment.
void set_script_env(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, g_env_key.load(std::memory_order_relaxed));
  if (lua_istable(L, -1)) {
    lua_setfenv(L, -2);
  } else {
    lua_pop(L, 1);
  }
}

// loadstring and load return what Lua's do (the function, or nil and the message), but parse
// text only, anchor the chunk name and give the function the scripts' environment: compiled
// with Lua's own loadstring, a chunk would see the real globals table and could change it for
// every later script.
int finish_load(lua_State* L, int status) {
  if (status == 0) {
    set_script_env(L);
    return 1;
  }
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}
int l_loadstring(lua_State* L) {
  std::size_t n = 0;
  const char* s = luaL_checklstring(L, 1, &n);
  const char* chunkname = luaL_optstring(L, 2, s);
  return finish_load(L, load_text(L, std::string_view(s, n), chunkname));
}

// load(f [, chunkname]): the pieces f returns are joined first (on the Lua stack, so that the
// memory limit counts them), then parsed as one text.
int l_load(lua_State* L) {
  const char* chunkname = luaL_optstring(L, 2, "=(load)");
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 2);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (;;) {
    lua_pushvalue(L, 1);
    if (lua_pcall(L, 0, 1, 0) != 0) {  // the reader's error, as lua_load reports it
      lua_pushnil(L);
      lua_insert(L, -2);
      return 2;
    }
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      break;
    }
    if (!lua_isstring(L, -1)) return luaL_error(L, "reader function must return a string");
    if (lua_objlen(L, -1) == 0) {
      lua_pop(L, 1);
      break;
    }
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  std::size_t n = 0;
  const char* s = lua_tolstring(L, -1, &n);
  return finish_load(L, load_text(L, std::string_view(s, n), chunkname));
}

// ---- string ----

// string.rep builds its result one byte at a time in C, where no hook can stop it, and Lua 5.1
// never checks the size: the size is checked first, and the copy doubles blocks.
int l_string_rep(lua_State* L) {
  std::size_t len = 0;
  const char* s = luaL_checklstring(L, 1, &len);
  const int n = luaL_checkint(L, 2);
  if (n <= 0 || len == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  if (len > memory_limit() / static_cast<std::size_t>(n))
    return luaL_error(L, "resulting string too large");
  const std::size_t total = len * static_cast<std::size_t>(n);
  // Small results are built on the C stack; larger ones in scratch space owned by Lua, so that
  // an error cannot leak it and the limit counts it.
  char small[LUAL_BUFFERSIZE];
  char* buf = total <= sizeof small ? small : static_cast<char*>(lua_newuserdata(L, total));
  std::memcpy(buf, s, len);
  for (std::size_t have = len; have < total;) {
    const std::size_t step = std::min(have, total - have);
    std::memcpy(buf + have, buf, step);
    have += step;
  }
  lua_pushlstring(L, buf, total);
  return 1;
}

// Lua 5.1's matcher recurses once per quantifier (? * + -) and per capture bracket, with no
// limit: a long pattern such as string.rep('a?', 300000) overflows the C stack and kills the
// process (Redis 7.0 too). Counting those characters bounds the depth (an escaped one is
// counted too, which only makes the bound safer).
bool pattern_too_complex(lua_State* L, int idx) {
  std::size_t n = 0;
  const char* p = lua_tolstring(L, idx, &n);
  if (p == nullptr || n <= static_cast<std::size_t>(kMaxPatternItems)) return false;
  int items = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = p[i];
    items += c == '?' || c == '*' || c == '+' || c == '-' || c == '(' || c == ')';
  }
  return items > kMaxPatternItems;
}
int l_string_find(lua_State* L) {
  if (!lua_toboolean(L, 4) && pattern_too_complex(L, 2))
    return luaL_error(L, "pattern too complex");
  return orig(g_orig.find)(L);
}
int l_string_match(lua_State* L) {
  if (pattern_too_complex(L, 2)) return luaL_error(L, "pattern too complex");
  return orig(g_orig.match)(L);
}
int l_string_gmatch(lua_State* L) {
  if (pattern_too_complex(L, 2)) return luaL_error(L, "pattern too complex");
  return orig(g_orig.gmatch)(L);
}
int l_string_gsub(lua_State* L) {
  if (pattern_too_complex(L, 2)) return luaL_error(L, "pattern too complex");
  return orig(g_orig.gsub)(L);
}

// ---- table ----

// table.insert(t, pos, v) and table.remove(t, pos) shift every element between pos and the end,
// one by one in C: a position far below 1 keeps the worker busy for up to 2^31 steps that no
// hook can interrupt. Positions down to kMinTablePosition keep Lua 5.1's behaviour.
int l_table_insert(lua_State* L) {
  if (lua_gettop(L) == 3 && lua_isnumber(L, 2) &&
      lua_tonumber(L, 2) < static_cast<lua_Number>(kMinTablePosition))
    return luaL_argerror(L, 2, "position out of bounds");
  return orig(g_orig.insert)(L);
}
int l_table_remove(lua_State* L) {
  if (lua_isnumber(L, 2) && lua_tonumber(L, 2) < static_cast<lua_Number>(kMinTablePosition))
    return luaL_argerror(L, 2, "position out of bounds");
  return orig(g_orig.remove)(L);
}

// ---- bit ----

// lua-bitop 1.0.2's tohex negates a negative count; INT32_MIN stays negative and becomes a huge
// length (CVE-2024-31449). Redis clamps it to INT32_MIN + 1; so does this. The count converts
// as lua-bitop converts every argument: rounded, modulo 2^32.
int l_bit_tohex(lua_State* L) {
  if (lua_type(L, 2) == LUA_TNUMBER || lua_isnumber(L, 2)) {
    const double shifted = lua_tonumber(L, 2) + 6755399441055744.0;  // 2^52 + 2^51
    std::uint64_t bits = 0;
    std::memcpy(&bits, &shifted, sizeof bits);
    if (static_cast<std::uint32_t>(bits) == 0x80000000u) {
      lua_pushnumber(L, static_cast<lua_Number>(INT32_MIN + 1));
      lua_replace(L, 2);
    }
  }
  return orig(g_orig.tohex)(L);
}

// ---- cjson ----

// An upper bound of what lua-cjson 2.1.0 reserves while encoding the value on top of the stack,
// walked in cjson's own order with cjson's own stack use, so that where cjson would stop with an
// error (nesting, a bad key or type) the walk stops too, having counted at least what cjson wrote
// until then. cjson sizes its buffer in int: a string of more than ~357 MB asks for len * 6 + 2
// bytes, which wraps to a negative size and writes past the buffer (CVE-2022-24834's class).
struct JsonLimits {
  int max_depth = 1000;
  bool sparse_convert = false;
  int sparse_ratio = 2;
  int sparse_safe = 10;
};

enum class Walk { kOk, kStop, kTooLarge };

// x86-64's conversion of an out-of-range double to int (what cjson's `max = k` does there).
int as_int(double k) {
  return k >= 2147483648.0 ? INT_MIN : static_cast<int>(k);
}

Walk json_walk(lua_State* L, const JsonLimits& lim, int depth, std::size_t* total) {
  auto add = [&](std::size_t n) {
    *total += n;
    return *total > kMaxJsonBytes ? Walk::kTooLarge : Walk::kOk;
  };
  switch (lua_type(L, -1)) {
    case LUA_TSTRING:
      return add(lua_objlen(L, -1) * 6 + 2);
    case LUA_TNUMBER:
      return add(32);
    case LUA_TBOOLEAN:
    case LUA_TNIL:
      return add(5);
    case LUA_TTABLE:
      break;
    default:
      return add(4);  // cjson.null, or a type cjson refuses
  }
  ++depth;
  if (depth > lim.max_depth || !lua_checkstack(L, 3)) return Walk::kStop;
  // Array or object, as cjson's lua_array_length decides.
  int max = 0, items = 0;
  bool array = true;
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    double k = 0;
    if (lua_type(L, -2) == LUA_TNUMBER && (k = lua_tonumber(L, -2)) != 0 && std::floor(k) == k &&
        k >= 1) {
      if (k > max) max = as_int(k);
      ++items;
      lua_pop(L, 1);
      continue;
    }
    lua_pop(L, 2);
    array = false;
    break;
  }
  if (array && lim.sparse_ratio > 0 &&
      static_cast<long long>(max) > static_cast<long long>(items) * lim.sparse_ratio &&
      max > lim.sparse_safe) {
    if (!lim.sparse_convert) return Walk::kStop;  // "excessively sparse array"
    array = false;
  }
  if (array && max > 0) {
    if (add(2 + static_cast<std::size_t>(max)) != Walk::kOk) return Walk::kTooLarge;
    for (int i = 1; i <= max; ++i) {
      lua_rawgeti(L, -1, i);
      const Walk w = json_walk(L, lim, depth, total);
      lua_pop(L, 1);
      if (w != Walk::kOk) return w;
    }
    return Walk::kOk;
  }
  if (add(2) != Walk::kOk) return Walk::kTooLarge;
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    const int kt = lua_type(L, -2);
    Walk w = Walk::kOk;
    if (kt == LUA_TNUMBER) {
      w = add(32 + 4);
    } else if (kt == LUA_TSTRING) {
      w = add(lua_objlen(L, -2) * 6 + 2 + 2);
    } else {
      lua_pop(L, 2);
      return Walk::kStop;  // "table key must be a number or string"
    }
    if (w == Walk::kOk) w = json_walk(L, lim, depth, total);
    lua_pop(L, 1);
    if (w != Walk::kOk) {
      lua_pop(L, 1);
      return w;
    }
  }
  return Walk::kOk;
}

// Calls the cjson setting function `which` (of the instance whose config is upvalue 1) with no
// arguments: it answers the current values.
void push_json_setting(lua_State* L, int which, int results) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushcclosure(L, orig(g_json_config[which]), 1);
  lua_call(L, 0, results);
}

// cjson.encode: upvalue 1 is the instance's config, as the original's.
int l_json_encode(lua_State* L) {
  if (lua_gettop(L) == 1) {
    JsonLimits lim;
    if (t_json_dirty) {  // a script changed the settings: ask for them
      push_json_setting(L, 0, 3);
      lim.sparse_convert = lua_toboolean(L, -3);
      lim.sparse_ratio = static_cast<int>(lua_tointeger(L, -2));
      lim.sparse_safe = static_cast<int>(lua_tointeger(L, -1));
      push_json_setting(L, 1, 1);
      lim.max_depth = static_cast<int>(lua_tointeger(L, -1));
      lua_pop(L, 4);
    }
    lua_pushvalue(L, 1);
    std::size_t total = 0;
    const Walk w = json_walk(L, lim, 0, &total);
    lua_settop(L, 1);
    if (w == Walk::kTooLarge)
      return luaL_error(L, "Cannot serialise, the encoding could exceed %d bytes",
                        static_cast<int>(kMaxJsonBytes));
  }
  return orig(g_orig.json_encode)(L);
}

// The setting functions: upvalue 1 the config, upvalue 2 which one.
int l_json_config(lua_State* L) {
  if (lua_gettop(L) > 0) t_json_dirty = true;
  return orig(g_json_config[lua_tointeger(L, lua_upvalueindex(2))])(L);
}

// Replaces the functions of the cjson table on top of the stack by the checked versions, each
// closed over that instance's config.
void guard_cjson_table(lua_State* L);
int l_cjson_new(lua_State* L) {
  lua_pushcfunction(L, orig(g_orig.cjson_new));
  lua_call(L, 0, 1);
  guard_cjson_table(L);
  return 1;
}
void guard_cjson_table(lua_State* L) {
  lua_getfield(L, -1, "encode");
  lua_getupvalue(L, -1, 1);  // the config
  lua_pushcclosure(L, l_json_encode, 1);
  lua_setfield(L, -3, "encode");
  lua_pop(L, 1);
  for (int i = 0; i < kJsonConfigCount; ++i) {
    lua_getfield(L, -1, kJsonConfigFns[i]);
    lua_getupvalue(L, -1, 1);
    lua_pushinteger(L, i);
    lua_pushcclosure(L, l_json_config, 2);
    lua_setfield(L, -3, kJsonConfigFns[i]);
    lua_pop(L, 1);
  }
  lua_pushcfunction(L, l_cjson_new);
  lua_setfield(L, -2, "new");
}

// Replaces t[name] (t on top of the stack) by fn, storing the original C function in *slot.
void replace(lua_State* L, const char* name, lua_CFunction fn, std::atomic<lua_CFunction>* slot) {
  lua_getfield(L, -1, name);
  if (slot != nullptr) slot->store(lua_tocfunction(L, -1), std::memory_order_relaxed);
  lua_pop(L, 1);
  lua_pushcfunction(L, fn);
  lua_setfield(L, -2, name);
}

}  // namespace

lua_State* new_state() {
  auto* b = new Budget;
  lua_State* L = lua_newstate(capped_alloc, b);
  if (L == nullptr) {
    delete b;
    return nullptr;
  }
  lua_atpanic(L, panic);
  return L;
}

void close_state(lua_State* L) {
  Budget* b = budget_of(L);
  b->enforce = false;
  // Collect first, as Redis does since CVE-2024-46981: objects with finalizers are finalized
  // while the state is whole.
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_close(L);
  delete b;
}

std::size_t memory_used(lua_State* L) {
  return budget_of(L)->used;
}

void set_memory_limit(std::size_t bytes) {
  g_limit.store(bytes, std::memory_order_relaxed);
}
std::size_t memory_limit() {
  return g_limit.load(std::memory_order_relaxed);
}

bool set_enforced(lua_State* L, bool on) {
  return enforce(L, on);
}

int load_text(lua_State* L, std::string_view text, const char* chunkname) {
  if (text.size() >= kMemoryLimit) {
    lua_pushliteral(L, "chunk too large");
    return LUA_ERRSYNTAX;
  }
  // The parser interns the chunk name and keeps only a raw pointer to it until its first
  // function prototype refers to it; the copy on the stack keeps the interned string reachable
  // meanwhile (CVE-2025-49844's fix does the same inside Lua).
  lua_pushstring(L, chunkname);
  const bool was = enforce(L, true);
  TextReader r{text.data(), text.size(), 0};
  const int status = lua_load(L, read_text, &r, chunkname);
  enforce(L, was);
  lua_remove(L, -2);
  return status;
}

void install_guards(lua_State* L, const char* env_key) {
  g_env_key.store(env_key, std::memory_order_relaxed);
  lua_pushcfunction(L, l_unpack);
  lua_setglobal(L, "unpack");
  lua_pushcfunction(L, l_loadstring);
  lua_setglobal(L, "loadstring");
  lua_pushcfunction(L, l_load);
  lua_setglobal(L, "load");

  lua_getglobal(L, "string");
  replace(L, "rep", l_string_rep, &g_orig.rep);
  replace(L, "find", l_string_find, &g_orig.find);
  replace(L, "match", l_string_match, &g_orig.match);
  replace(L, "gmatch", l_string_gmatch, &g_orig.gmatch);
  replace(L, "gsub", l_string_gsub, &g_orig.gsub);
  lua_pop(L, 1);

  lua_getglobal(L, "table");
  replace(L, "insert", l_table_insert, &g_orig.insert);
  replace(L, "remove", l_table_remove, &g_orig.remove);
  lua_pop(L, 1);

  lua_getglobal(L, "bit");
  replace(L, "tohex", l_bit_tohex, &g_orig.tohex);
  lua_pop(L, 1);

  lua_getglobal(L, "cjson");
  lua_getfield(L, -1, "encode");
  g_orig.json_encode.store(lua_tocfunction(L, -1), std::memory_order_relaxed);
  lua_pop(L, 1);
  lua_getfield(L, -1, "new");
  g_orig.cjson_new.store(lua_tocfunction(L, -1), std::memory_order_relaxed);
  lua_pop(L, 1);
  // The settings as the module starts, to put back after a script changed them.
  lua_newtable(L);
  for (int i = 0; i < kJsonConfigCount; ++i) {
    lua_getfield(L, -2, kJsonConfigFns[i]);
    g_json_config[i].store(lua_tocfunction(L, -1), std::memory_order_relaxed);
    lua_newtable(L);  // {fn, values...}
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, 1);
    const int top = lua_gettop(L);
    lua_pushvalue(L, -2);
    lua_call(L, 0, LUA_MULTRET);
    const int got = lua_gettop(L) - top;
    for (int k = got; k >= 1; --k) lua_rawseti(L, top, k + 1);
    lua_rawseti(L, -3, i + 1);
    lua_pop(L, 1);  // the function
  }
  lua_setfield(L, LUA_REGISTRYINDEX, kJsonDefaults);
  guard_cjson_table(L);
  lua_pop(L, 1);

  open_struct(L);
  lua_setglobal(L, "struct");
  open_cmsgpack(L);
  lua_setglobal(L, "cmsgpack");
}

void after_script(lua_State* L) {
  if (t_json_dirty) {
    t_json_dirty = false;
    lua_getfield(L, LUA_REGISTRYINDEX, kJsonDefaults);
    const int defaults = lua_gettop(L);
    for (int i = 1; i <= kJsonConfigCount; ++i) {
      lua_rawgeti(L, defaults, i);
      const int entry = lua_gettop(L);
      const int n = static_cast<int>(lua_objlen(L, entry));
      for (int k = 1; k <= n; ++k) lua_rawgeti(L, entry, k);
      lua_pcall(L, n - 1, 0, 0);  // the setting's function with its starting values
      lua_settop(L, defaults);
    }
    lua_pop(L, 1);
  }
  // What a script left behind is garbage (it cannot reach the globals); a large heap is
  // collected now rather than left to crowd the next script's limit.
  if (budget_of(L)->used > memory_limit() / 4) lua_gc(L, LUA_GCCOLLECT, 0);
}

}  // namespace kvlab::server::lua_sandbox

// The Lua sandbox's guards: what stands between a hostile script and Debian's Lua 5.1, lua-bitop
// and lua-cjson, whose known bugs kvlab cannot patch (it links the system libraries).
//
// Every library function a script can reach is either safe on every argument or replaced by a
// checked version that validates its arguments before the library sees them
// (install_guards()). The checked versions call the library's own C function directly, in the
// caller's frame, so that the library's error texts keep the names and positions Redis shows
// ("user_script:1: bad argument #1 to 'encode' ..."). What each guard closes, and why the
// other functions need none, is listed in server/README.md ("The Lua sandbox").
//
// Invariants (each script runs in a state set up by lua_api.cpp's new_state() with these):
//  1. A state's Lua allocations never exceed kMemoryLimit: the allocator refuses, and Lua raises
//     "not enough memory". The integer-overflow bugs of the lexer (chunks of 2^31 lines,
//     delimiters of 2^30 '='), of cjson (strings near INT_MAX) and of unpack need more.
//  2. Every chunk is parsed as text (load_text()): a binary chunk (Lua 5.1 bytecode, which the
//     VM runs unverified) is never loaded, and the chunk name lives on the stack while the
//     parser runs, so that it cannot be collected under it (CVE-2025-49844).
//  3. No script changes what a later script sees: the tables are read-only proxies
//     (lua_api.cpp), the string metatable answers getmetatable() with a read-only view, and
//     cjson's process-wide settings are put back after every script that changed them
//     (after_script()).
//
// Thread safety: every function works on the calling thread's own lua_State only.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

struct lua_State;

namespace kvlab::server::lua_sandbox {

// The most a worker's Lua state may allocate (invariant 1), unless set_memory_limit() lowered it.
inline constexpr std::size_t kMemoryLimit = std::size_t{1} << 30;
// cjson.encode refuses a value whose encoding could exceed this many bytes: lua-cjson 2.1.0
// sizes its buffer in int (CVE-2022-24834's class), and a reply cannot be larger anyway
// (proto-max-bulk-len).
inline constexpr std::size_t kMaxJsonBytes = std::size_t{512} << 20;
// Lua 5.1's pattern matcher recurses once per quantifier and capture: a pattern with more of
// them than this is refused ("pattern too complex"), well before the C stack ends.
inline constexpr int kMaxPatternItems = 2000;
// table.insert/table.remove move elements one by one, in C, where no hook can stop them: a
// position below this would keep the worker busy for billions of steps.
inline constexpr int kMinTablePosition = -65536;

// A fresh state whose allocator enforces kMemoryLimit; close it with close_state().
lua_State* new_state();
void close_state(lua_State* L);
// Bytes the state holds now.
std::size_t memory_used(lua_State* L);
// The limit of every state, process-wide: kMemoryLimit, or less for a harness whose process has
// less room (tests/fuzz/lua_fuzz.cpp runs under libFuzzer's RSS and malloc limits).
void set_memory_limit(std::size_t bytes);
std::size_t memory_limit();
// Whether kMemoryLimit applies to the state's allocations; returns the previous setting. Turn it
// on only around protected calls (a script, a library's code): a refused allocation outside one
// would be an unprotected error.
bool set_enforced(lua_State* L, bool on);

// Replaces the functions with known bugs by checked versions, and adds `struct` and `cmsgpack`.
// Call after the standard libraries, cjson and bit are open and before the tables are made
// read-only. env_key names the registry field holding the scripts' environment: load and
// loadstring give it to the functions they compile.
void install_guards(lua_State* L, const char* env_key);

// Compiles a chunk as text, whatever its first byte (invariant 2), and pushes the function, or
// the error message; returns lua_load's status.
int load_text(lua_State* L, std::string_view text, const char* chunkname);

// Puts back what a script may have changed outside its tables (cjson's settings); call after
// every script and library load. Costs one branch when nothing changed.
void after_script(lua_State* L);

// The libraries Redis embeds and Debian does not package for Lua 5.1, written for kvlab
// (server/features/lua_struct.cpp, server/features/lua_cmsgpack.cpp): each pushes its table.
int open_struct(lua_State* L);
int open_cmsgpack(lua_State* L);

// The conversions Redis's struct and cmsgpack leave to the x86-64 hardware, computed without
// undefined behaviour so that the bytes match: a double to int64 (cvttsd2si: INT64_MIN when out
// of range or NaN), and a double to float (IEEE round to nearest: beyond FLT_MAX, FLT_MAX up to
// half an ulp above it, infinity from there).
inline std::int64_t x86_to_int64(double n) {
  if (!(n >= -9223372036854775808.0 && n < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<std::int64_t>(n);
}
inline float x86_to_float(double d) {
  if (!std::isfinite(d) || std::fabs(d) <= static_cast<double>(FLT_MAX))
    return static_cast<float>(d);
  const double half_ulp_above = static_cast<double>(FLT_MAX) + 0x1p103;
  const float magnitude = std::fabs(d) < half_ulp_above ? FLT_MAX : INFINITY;
  return d < 0 ? -magnitude : magnitude;
}

}  // namespace kvlab::server::lua_sandbox

// `cmsgpack` for scripts: MessagePack pack, unpack, unpack_one and unpack_limit, byte for byte
// as lua-cmsgpack 0.4.0 embedded in Redis 7.0 (with Redis's fixes after CVE-2022-24834 and
// CVE-2018-11218). Debian packages lua-messagepack (pure Lua) and lua-mpack, whose APIs and
// choices of encoding differ; this is kvlab's own implementation of Redis's documented behaviour,
// checked against redis-server by tests/server/scripting_sandbox_test.cpp.
//
// Encoding: a number that is an integer (exactly representable as int64) takes the smallest
// integer form, any other number a float32 when that is exact, else a float64; strings str8/16/
// 32 (never bin); a table whose keys are exactly 1..n an array, any other table a map; tables
// nested 16 deep encode as nil (so that cycles end); booleans; every other type nil. Several
// arguments give their encodings one after the other.
// Decoding: everything above plus uint64 (read as int64, as Redis's Lua 5.1 build does); bin,
// ext and 0xc1 are "Bad data format in input.", a truncated input "Missing bytes in input.".
//
// Bounds: a packed result larger than kMemoryLimit is an error (Redis aborts the process), every
// length is checked against the remaining input before it is read, and each decoded value first
// checks the Lua stack, so nesting ends in "stack overflow (...)", never in a C stack overflow.
extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "server/features/lua_sandbox.hpp"

namespace kvlab::server::lua_sandbox {
namespace {

constexpr int kMaxNesting = 16;
// Values one pack() may encode. Shared subtables are encoded once per reference, so a table of 8
// references to itself, nested 16 deep, asks for 8^16 values: Redis's cmsgpack spins on it in C
// until memory ends. More values than a Lua state could hold as distinct objects are refused.
constexpr std::size_t kMaxPackValues = kMemoryLimit / 32;

// The encoder's output. Per thread and reused, so that a Lua error (which unwinds with longjmp)
// cannot skip a destructor or leak a buffer; an encoding never runs Lua code (see encode()), so
// it is never used by two encodings at once.
thread_local std::string t_out;
thread_local std::size_t t_values = 0;  // values encoded by the running pack()

void append(lua_State* L, const void* p, std::size_t n) {
  const std::size_t limit = memory_limit();
  if (n > limit - std::min(t_out.size(), limit)) luaL_error(L, "MessagePack output too large");
  t_out.append(static_cast<const char*>(p), n);
}

void put_be(unsigned char* out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    out[i] = static_cast<unsigned char>(v & 0xff);
    v >>= 8;
  }
}

void encode_bytes(lua_State* L, const char* s, std::size_t len) {
  unsigned char hdr[5];
  std::size_t n = 0;
  if (len < 32) {
    hdr[0] = static_cast<unsigned char>(0xa0 | len);
    n = 1;
  } else if (len <= 0xff) {
    hdr[0] = 0xd9;
    hdr[1] = static_cast<unsigned char>(len);
    n = 2;
  } else if (len <= 0xffff) {
    hdr[0] = 0xda;
    put_be(hdr + 1, len, 2);
    n = 3;
  } else {
    hdr[0] = 0xdb;
    put_be(hdr + 1, len & 0xffffffffu, 4);
    n = 5;
  }
  append(L, hdr, n);
  append(L, s, len);
}

void encode_double(lua_State* L, double d) {
  unsigned char b[9];
  const float f = x86_to_float(d);
  if (d == static_cast<double>(f)) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    b[0] = 0xca;
    put_be(b + 1, bits, 4);
    append(L, b, 5);
  } else {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, 8);
    b[0] = 0xcb;
    put_be(b + 1, bits, 8);
    append(L, b, 9);
  }
}

void encode_int(lua_State* L, std::int64_t n) {
  unsigned char b[9];
  int len = 0;
  const auto u = static_cast<std::uint64_t>(n);
  if (n >= 0) {
    if (n <= 127) {
      b[0] = static_cast<unsigned char>(n);
      len = 1;
    } else if (n <= 0xff) {
      b[0] = 0xcc;
      put_be(b + 1, u, 1);
      len = 2;
    } else if (n <= 0xffff) {
      b[0] = 0xcd;
      put_be(b + 1, u, 2);
      len = 3;
    } else if (n <= 0xffffffffLL) {
      b[0] = 0xce;
      put_be(b + 1, u, 4);
      len = 5;
    } else {
      b[0] = 0xcf;
      put_be(b + 1, u, 8);
      len = 9;
    }
  } else if (n >= -32) {
    b[0] = static_cast<unsigned char>(n & 0xff);
    len = 1;
  } else if (n >= -128) {
    b[0] = 0xd0;
    put_be(b + 1, u, 1);
    len = 2;
  } else if (n >= -32768) {
    b[0] = 0xd1;
    put_be(b + 1, u, 2);
    len = 3;
  } else if (n >= -2147483648LL) {
    b[0] = 0xd2;
    put_be(b + 1, u, 4);
    len = 5;
  } else {
    b[0] = 0xd3;
    put_be(b + 1, u, 8);
    len = 9;
  }
  append(L, b, static_cast<std::size_t>(len));
}

void encode_header(lua_State* L, std::uint64_t n, unsigned char fix, unsigned char b16,
                   unsigned char b32) {
  unsigned char b[5];
  if (n <= 15) {
    b[0] = static_cast<unsigned char>(fix | n);
    append(L, b, 1);
  } else if (n <= 65535) {
    b[0] = b16;
    put_be(b + 1, n, 2);
    append(L, b, 3);
  } else {
    b[0] = b32;
    put_be(b + 1, n & 0xffffffffu, 4);
    append(L, b, 5);
  }
}

std::int64_t to_i64(double n) {
  return x86_to_int64(n);
}

// Whether the table on top holds exactly the keys 1..n (compared as int, as Redis's does: keys
// beyond INT_MAX make it a map).
bool is_array(lua_State* L) {
  int count = 0, max = 0;
  const int top = lua_gettop(L);
  luaL_checkstack(L, 2, "in function table_is_an_array");
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    lua_pop(L, 1);
    double n = 0;
    if (lua_type(L, -1) != LUA_TNUMBER || (n = lua_tonumber(L, -1)) <= 0 ||
        !(std::isfinite(n) && n < 2147483648.0 && static_cast<double>(static_cast<int>(n)) == n)) {
      lua_settop(L, top);
      return false;
    }
    if (n > max) max = static_cast<int>(n);
    ++count;
  }
  lua_settop(L, top);
  return max == count;
}

// Encodes the value on top of the stack and pops it. Array elements are read with lua_gettable
// as Redis does, but only for keys that exist (is_array), so no metamethod runs.
void encode(lua_State* L, int level) {
  if (++t_values > kMaxPackValues) luaL_error(L, "MessagePack input has too many values");
  int t = lua_type(L, -1);
  if (t == LUA_TTABLE && level == kMaxNesting) t = LUA_TNIL;
  switch (t) {
    case LUA_TSTRING: {
      std::size_t n = 0;
      const char* s = lua_tolstring(L, -1, &n);
      encode_bytes(L, s, n);
      break;
    }
    case LUA_TBOOLEAN: {
      const unsigned char b = lua_toboolean(L, -1) ? 0xc3 : 0xc2;
      append(L, &b, 1);
      break;
    }
    case LUA_TNUMBER: {
      const double n = lua_tonumber(L, -1);
      if (!std::isinf(n) && static_cast<double>(to_i64(n)) == n)
        encode_int(L, to_i64(n));
      else
        encode_double(L, n);
      break;
    }
    case LUA_TTABLE:
      if (is_array(L)) {
        const std::size_t len = lua_objlen(L, -1);
        encode_header(L, len, 0x90, 0xdc, 0xdd);
        luaL_checkstack(L, 1, "in function mp_encode_lua_table_as_array");
        for (std::size_t j = 1; j <= len; ++j) {
          lua_pushnumber(L, static_cast<lua_Number>(j));
          lua_gettable(L, -2);
          encode(L, level + 1);
        }
      } else {
        luaL_checkstack(L, 3, "in function mp_encode_lua_table_as_map");
        std::uint64_t len = 0;
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {
          lua_pop(L, 1);
          ++len;
        }
        encode_header(L, len, 0x80, 0xde, 0xdf);
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {
          lua_pushvalue(L, -2);
          encode(L, level + 1);  // the key
          encode(L, level + 1);  // the value
        }
      }
      break;
    default: {
      const unsigned char b = 0xc0;
      append(L, &b, 1);
    }
  }
  lua_pop(L, 1);
}

int l_pack(lua_State* L) {
  const int nargs = lua_gettop(L);
  if (nargs == 0) return luaL_argerror(L, 0, "MessagePack pack needs input.");
  if (!lua_checkstack(L, nargs))
    return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
  t_values = 0;
  for (int i = 1; i <= nargs; ++i) {
    t_out.clear();
    luaL_checkstack(L, 1, "in function mp_check");
    lua_pushvalue(L, i);
    encode(L, 0);
    lua_pushlstring(L, t_out.data(), t_out.size());
  }
  t_out.clear();
  if (t_out.capacity() > (std::size_t{1} << 20)) std::string().swap(t_out);  // no large leftovers
  lua_concat(L, nargs);
  return 1;
}

// ---- Decoding ----

enum class Err { kNone, kEof, kBadFormat };
struct Cursor {
  const unsigned char* p;
  std::size_t left;
  Err err;
};

std::uint64_t get_be(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

void decode(lua_State* L, Cursor* c);

// Redis pushes an unsigned value with lua_pushinteger: above INT64_MAX it reads as negative.
void push_unsigned(lua_State* L, std::uint64_t v) {
  lua_pushinteger(L, static_cast<lua_Integer>(static_cast<std::int64_t>(v)));
}

void decode_array(lua_State* L, Cursor* c, std::size_t len) {
  lua_newtable(L);
  luaL_checkstack(L, 1, "in function mp_decode_to_lua_array");
  for (std::size_t i = 1; i <= len; ++i) {
    lua_pushnumber(L, static_cast<lua_Number>(i));
    decode(L, c);
    if (c->err != Err::kNone) return;
    lua_settable(L, -3);
  }
}

void decode_map(lua_State* L, Cursor* c, std::size_t len) {
  lua_newtable(L);
  while (len-- > 0) {
    decode(L, c);  // key
    if (c->err != Err::kNone) return;
    decode(L, c);  // value
    if (c->err != Err::kNone) return;
    lua_settable(L, -3);
  }
}

// Decodes one value at c and pushes it (leaving whatever it pushed when it sets c->err).
void decode(lua_State* L, Cursor* c) {
  auto need = [c](std::size_t n) {
    if (c->left >= n) return true;
    c->err = Err::kEof;
    return false;
  };
  auto consume = [c](std::size_t n) {
    c->p += n;
    c->left -= n;
  };
  if (!need(1)) return;
  luaL_checkstack(L, 1, "too many return values at once; use unpack_one or unpack_limit instead.");
  const unsigned char tag = c->p[0];
  switch (tag) {
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: {
      const int bytes = 1 << (tag - 0xcc);
      if (!need(1 + static_cast<std::size_t>(bytes))) return;
      push_unsigned(L, get_be(c->p + 1, bytes));
      consume(1 + static_cast<std::size_t>(bytes));
      return;
    }
    case 0xd0:
      if (!need(2)) return;
      lua_pushinteger(L, static_cast<std::int8_t>(c->p[1]));
      consume(2);
      return;
    case 0xd1:
      if (!need(3)) return;
      lua_pushinteger(L, static_cast<std::int16_t>(get_be(c->p + 1, 2)));
      consume(3);
      return;
    case 0xd2:
      if (!need(5)) return;
      lua_pushinteger(L, static_cast<std::int32_t>(get_be(c->p + 1, 4)));
      consume(5);
      return;
    case 0xd3:
      if (!need(9)) return;
      lua_pushnumber(L, static_cast<lua_Number>(static_cast<std::int64_t>(get_be(c->p + 1, 8))));
      consume(9);
      return;
    case 0xc0:
      lua_pushnil(L);
      consume(1);
      return;
    case 0xc2:
    case 0xc3:
      lua_pushboolean(L, tag == 0xc3);
      consume(1);
      return;
    case 0xca: {
      if (!need(5)) return;
      const auto bits = static_cast<std::uint32_t>(get_be(c->p + 1, 4));
      float f = 0;
      std::memcpy(&f, &bits, 4);
      lua_pushnumber(L, f);
      consume(5);
      return;
    }
    case 0xcb: {
      if (!need(9)) return;
      const std::uint64_t bits = get_be(c->p + 1, 8);
      double d = 0;
      std::memcpy(&d, &bits, 8);
      lua_pushnumber(L, d);
      consume(9);
      return;
    }
    case 0xd9:
    case 0xda:
    case 0xdb: {
      const int bytes = 1 << (tag - 0xd9);
      if (!need(1 + static_cast<std::size_t>(bytes))) return;
      const std::size_t l = get_be(c->p + 1, bytes);
      consume(1 + static_cast<std::size_t>(bytes));
      if (!need(l)) return;
      lua_pushlstring(L, reinterpret_cast<const char*>(c->p), l);
      consume(l);
      return;
    }
    case 0xdc:
    case 0xdd:
    case 0xde:
    case 0xdf: {
      const int bytes = (tag == 0xdc || tag == 0xde) ? 2 : 4;
      if (!need(1 + static_cast<std::size_t>(bytes))) return;
      const std::size_t l = get_be(c->p + 1, bytes);
      consume(1 + static_cast<std::size_t>(bytes));
      if (tag <= 0xdd)
        decode_array(L, c, l);
      else
        decode_map(L, c, l);
      return;
    }
    default:
      break;
  }
  if ((tag & 0x80) == 0) {  // positive fixint
    lua_pushinteger(L, tag);
    consume(1);
  } else if ((tag & 0xe0) == 0xe0) {  // negative fixint
    lua_pushinteger(L, static_cast<std::int8_t>(tag));
    consume(1);
  } else if ((tag & 0xe0) == 0xa0) {  // fixstr
    const std::size_t l = tag & 0x1f;
    if (!need(1 + l)) return;
    lua_pushlstring(L, reinterpret_cast<const char*>(c->p + 1), l);
    consume(1 + l);
  } else if ((tag & 0xf0) == 0x90) {  // fixarray
    consume(1);
    decode_array(L, c, tag & 0xf);
  } else if ((tag & 0xf0) == 0x80) {  // fixmap
    consume(1);
    decode_map(L, c, tag & 0xf);
  } else {
    c->err = Err::kBadFormat;
  }
}

// Decodes up to `limit` values from byte `offset` of argument 1 (limit 0 and offset 0: all, with
// no offset returned); otherwise the next offset (-1 at the end) comes first.
int unpack_full(lua_State* L, lua_Integer limit, lua_Integer offset) {
  std::size_t len = 0;
  const char* s = luaL_checklstring(L, 1, &len);
  const bool all = limit == 0 && offset == 0;
  if (offset < 0 || limit < 0)  // (Redis prints the input's length as the limit)
    return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.",
                      static_cast<int>(offset), static_cast<int>(len));
  if (static_cast<std::size_t>(offset) > len)
    return luaL_error(L, "Start offset %d greater than input length %d.", static_cast<int>(offset),
                      static_cast<int>(len));
  if (all) limit = INT_MAX;
  Cursor c{reinterpret_cast<const unsigned char*>(s) + offset,
           len - static_cast<std::size_t>(offset), Err::kNone};
  int count = 0;
  for (; c.left > 0 && count < limit; ++count) {
    decode(L, &c);
    if (c.err == Err::kEof) return luaL_error(L, "Missing bytes in input.");
    if (c.err == Err::kBadFormat) return luaL_error(L, "Bad data format in input.");
  }
  if (!all) {
    luaL_checkstack(L, 1, "in function mp_unpack_full");
    lua_pushinteger(L, c.left == 0 ? -1 : static_cast<lua_Integer>(len - c.left));
    lua_insert(L, 2);
    ++count;
  }
  return count;
}

int l_unpack(lua_State* L) {
  return unpack_full(L, 0, 0);
}
int l_unpack_one(lua_State* L) {
  const lua_Integer offset = luaL_optinteger(L, 2, 0);
  lua_pop(L, lua_gettop(L) - 1);
  return unpack_full(L, 1, offset);
}
int l_unpack_limit(lua_State* L) {
  const lua_Integer limit = luaL_checkinteger(L, 2);
  const lua_Integer offset = luaL_optinteger(L, 3, 0);
  lua_pop(L, lua_gettop(L) - 1);
  return unpack_full(L, limit, offset);
}

}  // namespace

int open_cmsgpack(lua_State* L) {
  lua_createtable(L, 0, 8);
  for (auto [name, fn] : {std::pair<const char*, lua_CFunction>{"pack", l_pack},
                          {"unpack", l_unpack},
                          {"unpack_one", l_unpack_one},
                          {"unpack_limit", l_unpack_limit}}) {
    lua_pushcfunction(L, fn);
    lua_setfield(L, -2, name);
  }
  for (auto [name, text] : {std::pair<const char*, const char*>{"_NAME", "cmsgpack"},
                            {"_VERSION", "lua-cmsgpack 0.4.0"},
                            {"_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo"},
                            {"_DESCRIPTION", "MessagePack C implementation for Lua"}}) {
    lua_pushstring(L, text);
    lua_setfield(L, -2, name);
  }
  return 1;
}

}  // namespace kvlab::server::lua_sandbox

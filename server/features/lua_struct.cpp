// `struct` for scripts: pack, unpack and size of binary records, byte for byte as the struct
// library embedded in Redis 7.0 (Roberto Ierusalimschy's struct 0.2, as Redis patched it after
// CVE-2020-14147). Debian packages no struct for Lua 5.1; this is kvlab's own implementation of
// the documented format, checked against redis-server by tests/server/scripting_sandbox_test.cpp.
//
// Format: '>' big endian, '<' little endian, '![n]' alignment (n a power of 2, default 8), 'x'
// a zero byte, b/B h/H l/L signed/unsigned char, short, long, 'T' size_t, 'i[n]'/'I[n]' signed/
// unsigned integer of n bytes (default 4, at most 32), 'f' float, 'd' double, 'c[n]' n chars
// (pack: 0 or none takes the whole string; unpack: c0 takes the previous number as the length),
// 's' a zero-terminated string, ' ' ignored. The format is read up to its first zero byte.
//
// Where Redis's C code leaves a result to the x86-64 conversion of an out-of-range double or to
// a shift by 64 or more, this code computes what that hardware does, explicitly, so that the
// bytes match and no undefined behaviour remains. Bounds: every size is checked against the
// data before it is read (unpack), sizes are parsed with an overflow check (the bug of
// CVE-2020-14147), and results are pushed only after lua_checkstack.
extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include <cctype>
#include <climits>
#include <cstdint>
#include <cstring>

#include "server/features/lua_sandbox.hpp"

namespace kvlab::server::lua_sandbox {
namespace {

constexpr int kMaxIntSize = 32;
constexpr int kMaxAlign = 8;  // alignof(double) on x86-64, struct's default for '!'
enum Endian { kBig = 0, kLittle = 1 };

struct Header {
  int endian = kLittle;  // x86-64's native order
  int align = 1;
};

// Reads a decimal size at *fmt, or returns df when there is none.
int read_size(lua_State* L, const char** fmt, int df) {
  if (!std::isdigit(static_cast<unsigned char>(**fmt))) return df;
  int a = 0;
  do {
    const int d = **fmt - '0';
    if (a > INT_MAX / 10 || a * 10 > INT_MAX - d) luaL_error(L, "integral size overflow");
    a = a * 10 + d;
    ++*fmt;
  } while (std::isdigit(static_cast<unsigned char>(**fmt)));
  return a;
}

std::size_t option_size(lua_State* L, int opt, const char** fmt) {
  switch (opt) {
    case 'B':
    case 'b':
      return 1;
    case 'H':
    case 'h':
      return 2;
    case 'L':
    case 'l':
    case 'T':
    case 'd':
      return 8;
    case 'f':
      return 4;
    case 'x':
      return 1;
    case 'c':
      return static_cast<std::size_t>(read_size(L, fmt, 1));
    case 'i':
    case 'I': {
      const int sz = read_size(L, fmt, 4);
      if (sz > kMaxIntSize)
        luaL_error(L, "integral size %d is larger than limit of %d", sz, kMaxIntSize);
      return static_cast<std::size_t>(sz);
    }
    default:
      return 0;
  }
}

// Padding before an item of `size` bytes at offset len (struct's formula, also for sizes that
// are no power of 2).
std::size_t padding(std::size_t len, const Header& h, int opt, std::size_t size) {
  if (size == 0 || opt == 'c') return 0;
  if (size > static_cast<std::size_t>(h.align)) size = static_cast<std::size_t>(h.align);
  return (size - (len & (size - 1))) & (size - 1);
}

void control_option(lua_State* L, int opt, const char** fmt, Header* h) {
  switch (opt) {
    case ' ':
      return;
    case '>':
      h->endian = kBig;
      return;
    case '<':
      h->endian = kLittle;
      return;
    case '!': {
      const int a = read_size(L, fmt, kMaxAlign);
      if (a <= 0 || (a & (a - 1)) != 0) luaL_error(L, "alignment %d is not a power of 2", a);
      h->align = a;
      return;
    }
    default: {
      const char c = static_cast<char>(opt);
      const char* msg = lua_pushfstring(L, "invalid format option '%c'", c);
      luaL_argerror(L, 1, msg);
    }
  }
}

// x86-64's conversions of a double to 64-bit integers (x86_to_int64; the unsigned conversion
// compilers emit subtracts 2^63 first from values at or above it, and a NaN fails that
// comparison).
std::int64_t to_i64(double n) {
  return x86_to_int64(n);
}
std::uint64_t to_u64(double n) {
  if (!(n >= 9223372036854775808.0)) return static_cast<std::uint64_t>(to_i64(n));  // NaN too
  return static_cast<std::uint64_t>(to_i64(n - 9223372036854775808.0)) ^ (std::uint64_t{1} << 63);
}

void put_integer(lua_State* L, luaL_Buffer* b, int arg, int endian, std::size_t size) {
  const lua_Number n = luaL_checknumber(L, arg);
  std::uint64_t value = n < 0 ? static_cast<std::uint64_t>(to_i64(n)) : to_u64(n);
  char buf[kMaxIntSize];
  // Bytes past the eighth are zero, whatever the sign (the value is shifted out).
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t at = endian == kLittle ? i : size - 1 - i;
    buf[at] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  luaL_addlstring(b, buf, size);
}

// Copies n bytes of a native (little-endian) value into out in the requested order.
void put_bytes(char* out, const void* value, std::size_t n, int endian) {
  std::memcpy(out, value, n);
  if (endian != kLittle) {
    for (std::size_t i = 0; i < n / 2; ++i) {
      const char t = out[i];
      out[i] = out[n - 1 - i];
      out[n - 1 - i] = t;
    }
  }
}

int l_pack(lua_State* L) {
  const char* fmt = luaL_checkstring(L, 1);
  Header h;
  int arg = 2;
  std::size_t total = 0;
  lua_pushnil(L);  // keeps the arguments below the buffer's pieces
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  while (*fmt != '\0') {
    const int opt = *fmt++;
    std::size_t size = option_size(L, opt, &fmt);
    std::size_t pad = padding(total, h, opt, size);
    total += pad;
    while (pad-- > 0) luaL_addchar(&b, '\0');
    switch (opt) {
      case 'b':
      case 'B':
      case 'h':
      case 'H':
      case 'l':
      case 'L':
      case 'T':
      case 'i':
      case 'I':
        put_integer(L, &b, arg++, h.endian, size);
        break;
      case 'x':
        luaL_addchar(&b, '\0');
        break;
      case 'f': {
        const float f = x86_to_float(luaL_checknumber(L, arg++));
        char out[4];
        put_bytes(out, &f, 4, h.endian);
        luaL_addlstring(&b, out, 4);
        break;
      }
      case 'd': {
        const double d = luaL_checknumber(L, arg++);
        char out[8];
        put_bytes(out, &d, 8, h.endian);
        luaL_addlstring(&b, out, 8);
        break;
      }
      case 'c':
      case 's': {
        std::size_t l = 0;
        const char* s = luaL_checklstring(L, arg++, &l);
        if (size == 0) size = l;
        // (struct names the argument after the string: arg was advanced already)
        luaL_argcheck(L, l >= size, arg, "string too short");
        luaL_addlstring(&b, s, size);
        if (opt == 's') {
          luaL_addchar(&b, '\0');
          ++size;
        }
        break;
      }
      default:
        control_option(L, opt, &fmt, &h);
    }
    total += size;
  }
  luaL_pushresult(&b);
  return 1;
}

lua_Number get_integer(const unsigned char* p, int endian, bool is_signed, std::size_t size) {
  std::uint64_t l = 0;
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t at = endian == kBig ? i : size - 1 - i;
    l = (l << 8) | p[at];
  }
  if (!is_signed) return static_cast<lua_Number>(l);
  // The sign bit's mask, shifted as x86-64 shifts (by the count modulo 64).
  const unsigned shift = static_cast<unsigned>(static_cast<int>(size) * 8 - 1) & 63u;
  const std::uint64_t mask = ~std::uint64_t{0} << shift;
  if (l & mask) l |= mask;
  return static_cast<lua_Number>(static_cast<std::int64_t>(l));
}

int l_unpack(lua_State* L) {
  Header h;
  const char* fmt = luaL_checkstring(L, 1);
  std::size_t ld = 0;
  const char* data = luaL_checklstring(L, 2, &ld);
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  std::size_t pos = static_cast<std::size_t>(luaL_optinteger(L, 3, 1));
  luaL_argcheck(L, pos > 0, 3, "offset must be 1 or greater");
  --pos;
  int n = 0;
  while (*fmt != '\0') {
    const int opt = *fmt++;
    std::size_t size = option_size(L, opt, &fmt);
    pos += padding(pos, h, opt, size);
    luaL_argcheck(L, size <= ld && pos <= ld - size, 2, "data string too short");
    luaL_checkstack(L, 2, "too many results");
    switch (opt) {
      case 'b':
      case 'B':
      case 'h':
      case 'H':
      case 'l':
      case 'L':
      case 'T':
      case 'i':
      case 'I':
        lua_pushnumber(L, get_integer(bytes + pos, h.endian, std::islower(opt) != 0, size));
        ++n;
        break;
      case 'x':
        break;
      case 'f': {
        float f = 0;
        char in[4];
        put_bytes(in, bytes + pos, 4, h.endian);
        std::memcpy(&f, in, 4);
        lua_pushnumber(L, f);
        ++n;
        break;
      }
      case 'd': {
        double d = 0;
        char in[8];
        put_bytes(in, bytes + pos, 8, h.endian);
        std::memcpy(&d, in, 8);
        lua_pushnumber(L, d);
        ++n;
        break;
      }
      case 'c': {
        if (size == 0) {
          if (n == 0 || !lua_isnumber(L, -1)) luaL_error(L, "format 'c0' needs a previous size");
          size = static_cast<std::size_t>(to_u64(lua_tonumber(L, -1)));
          lua_pop(L, 1);
          --n;
          luaL_argcheck(L, size <= ld && pos <= ld - size, 2, "data string too short");
        }
        lua_pushlstring(L, data + pos, size);
        ++n;
        break;
      }
      case 's': {
        const void* e = std::memchr(data + pos, '\0', ld - pos);
        if (e == nullptr) luaL_error(L, "unfinished string in data");
        size = static_cast<std::size_t>(static_cast<const char*>(e) - (data + pos)) + 1;
        lua_pushlstring(L, data + pos, size - 1);
        ++n;
        break;
      }
      default:
        control_option(L, opt, &fmt, &h);
    }
    pos += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(pos + 1));
  return n + 1;
}

int l_size(lua_State* L) {
  Header h;
  const char* fmt = luaL_checkstring(L, 1);
  std::size_t pos = 0;
  while (*fmt != '\0') {
    const int opt = *fmt++;
    const std::size_t size = option_size(L, opt, &fmt);
    pos += padding(pos, h, opt, size);
    if (opt == 's')
      luaL_argerror(L, 1, "option 's' has no fixed size");
    else if (opt == 'c' && size == 0)
      luaL_argerror(L, 1, "option 'c0' has no fixed size");
    if (!std::isalnum(static_cast<unsigned char>(opt))) control_option(L, opt, &fmt, &h);
    pos += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(pos));
  return 1;
}

}  // namespace

int open_struct(lua_State* L) {
  lua_createtable(L, 0, 3);
  lua_pushcfunction(L, l_pack);
  lua_setfield(L, -2, "pack");
  lua_pushcfunction(L, l_unpack);
  lua_setfield(L, -2, "unpack");
  lua_pushcfunction(L, l_size);
  lua_setfield(L, -2, "size");
  return 1;
}

}  // namespace kvlab::server::lua_sandbox

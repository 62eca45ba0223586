// The two conversions between Lua values and RESP: a script's result into a reply (Lua -> RESP,
// as Redis 7.0 converts it, RESP2 or RESP3 by the script's protocol), and a command's reply into
// Lua values for redis.call (RESP -> Lua). Both bound their recursion depth.

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

void raw_field(lua_State* L, int idx, const char* field) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  lua_pushstring(L, field);
  lua_rawget(L, idx);
}

namespace {

// Pushes t[field] when t (at -1) is a table with that field of type `type`; else pushes nothing.
bool typed_field(lua_State* L, const char* field, int type) {
  raw_field(L, -1, field);
  if (lua_type(L, -1) == type) return true;
  lua_pop(L, 1);
  return false;
}

}  // namespace

void lua_to_reply(lua_State* L, ReplyWriter& r, int script_resp, int depth) {
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
        r.error(err::kLuaReplyDepth);
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

bool push_reply(lua_State* L, std::string_view s, std::size_t* pos, int depth) {
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

}  // namespace kvlab::server::scripting

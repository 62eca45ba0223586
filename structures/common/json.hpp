// JSON string literals for every tool that writes JSON (the registry table, kvlab bench, kvlab
// load, kvlab topo). RFC 8259: '"' and '\' escaped, control characters as \n \r \t or \u00XX;
// other bytes (UTF-8 included) pass through unchanged.
#pragma once

#include <string>
#include <string_view>

namespace kvlab {

// Appends s to out as a quoted JSON string.
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

// s as a quoted JSON string.
inline std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_json_string(out, s);
  return out;
}

}  // namespace kvlab

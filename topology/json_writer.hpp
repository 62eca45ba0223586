// A small streaming JSON writer for the topology reports: objects and arrays, two-space indent,
// arrays of scalars optionally on one line. Not a general library: it trusts the caller to nest
// calls correctly (key() inside objects, values inside arrays).
//
// Thread safety: none; one writer per thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "structures/common/json.hpp"

namespace kvlab::topo {

class JsonWriter {
 public:
  JsonWriter& begin_object() {
    open('{', false);
    return *this;
  }
  JsonWriter& end_object() {
    close('}');
    return *this;
  }
  // inline_items: keep the whole array on one line (for short lists of numbers).
  JsonWriter& begin_array(bool inline_items = false) {
    open('[', inline_items);
    return *this;
  }
  JsonWriter& end_array() {
    close(']');
    return *this;
  }

  JsonWriter& key(std::string_view k) {
    separate();
    quote(k);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) {
    separate();
    quote(s);
    return *this;
  }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) {
    separate();
    out_ += b ? "true" : "false";
    return *this;
  }
  JsonWriter& value(std::int64_t v) {
    separate();
    out_ += std::to_string(v);
    return *this;
  }
  JsonWriter& value(std::uint64_t v) {
    separate();
    out_ += std::to_string(v);
    return *this;
  }
  JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<std::uint64_t>(v)); }
  JsonWriter& value(double v) {
    separate();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    out_ += buf;
    return *this;
  }
  JsonWriter& null() {
    separate();
    out_ += "null";
    return *this;
  }

  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  const std::string& str() const { return out_; }

 private:
  struct Level {
    bool first = true;
    bool inline_items = false;
  };

  void open(char c, bool inline_items) {
    separate();
    out_ += c;
    levels_.push_back({true, inline_items || in_inline()});
  }
  void close(char c) {
    const Level level = levels_.back();
    levels_.pop_back();
    if (!level.first && !level.inline_items) newline();
    out_ += c;
  }
  bool in_inline() const { return !levels_.empty() && levels_.back().inline_items; }
  // Emits the comma/newline/indent that precedes a key or a value.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (levels_.empty()) return;
    Level& level = levels_.back();
    if (!level.first) out_ += level.inline_items ? ", " : ",";
    if (!level.inline_items) newline();
    level.first = false;
  }
  void newline() {
    out_ += '\n';
    out_.append(levels_.size() * 2, ' ');
  }
  void quote(std::string_view s) { append_json_string(out_, s); }

  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace kvlab::topo

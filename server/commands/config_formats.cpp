// How a parameter's value is validated and written, as Redis 7.0 does it for each type and for
// the special multi-word formats (save, client-output-buffer-limit, notify-keyspace-events, ...),
// with Redis's error texts. Used by CONFIG SET and by the start-up configuration alike.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/commands/config_table.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server::config {

std::vector<std::string_view> split_blanks(std::string_view v) {
  std::vector<std::string_view> out;
  if (v.empty()) return out;
  std::size_t i = 0;
  for (;;) {
    const std::size_t j = v.find(' ', i);
    out.push_back(v.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return out;
}

// The digits saturate (strtoull) and the unit multiplies with wrap-around, as in Redis.
bool parse_memory(std::string_view s, std::uint64_t* out) {
  std::size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < i; ++k) {
    const std::uint64_t d = static_cast<std::uint64_t>(s[k] - '0');
    v = v > (kULLMax - d) / 10 ? kULLMax : v * 10 + d;
  }
  std::string unit;
  to_lower(s.substr(i), &unit);
  std::uint64_t mul = 0;
  if (unit.empty() || unit == "b")
    mul = 1;
  else if (unit == "k")
    mul = 1000;
  else if (unit == "kb")
    mul = 1024;
  else if (unit == "m")
    mul = 1000 * 1000;
  else if (unit == "mb")
    mul = 1024 * 1024;
  else if (unit == "g")
    mul = 1000ull * 1000 * 1000;
  else if (unit == "gb")
    mul = 1024ull * 1024 * 1024;
  else
    return false;
  *out = v * mul;
  return true;
}

bool valid_save(std::string_view in, std::string* out, std::string* why) {
  const auto words = split_blanks(in);
  if (words.size() % 2 != 0) {
    *why = "Invalid save parameters";
    return false;
  }
  std::string canon;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::int64_t n = 0;
    if (!parse_i64(words[i], &n) || n < 0) {
      *why = "Invalid save parameters";
      return false;
    }
    if (!canon.empty()) canon += ' ';
    canon += std::to_string(n);
  }
  *out = canon;
  return true;
}

bool parse_obuf(std::string_view in, std::vector<std::pair<int, ObufClass>>* todo,
                std::string* why) {
  const auto w = split_blanks(in);
  if (w.size() % 4 != 0) {
    *why = "Wrong number of arguments in buffer limit configuration.";
    return false;
  }
  for (std::size_t i = 0; i < w.size(); i += 4) {
    int cls = -1;
    if (iequals(w[i], "normal")) cls = 0;
    if (iequals(w[i], "replica") || iequals(w[i], "slave")) cls = 1;
    if (iequals(w[i], "pubsub")) cls = 2;
    if (cls < 0) {
      *why = "Invalid client class specified in buffer limit configuration.";
      return false;
    }
    ObufClass c{};
    std::int64_t secs = 0;
    // soft_seconds: strtoll with nothing left over; Redis accepts a leading '+' or zeros there.
    std::string_view s = w[i + 3];
    bool secs_ok = !s.empty();
    if (secs_ok) {
      std::size_t k = (s[0] == '+' || s[0] == '-') ? 1 : 0;
      secs_ok = k < s.size();
      for (; k < s.size() && secs_ok; ++k) secs_ok = s[k] >= '0' && s[k] <= '9';
      if (secs_ok) secs = std::strtoll(std::string(s).c_str(), nullptr, 10);
    }
    if (!parse_memory(w[i + 1], &c.hard) || !parse_memory(w[i + 2], &c.soft) || !secs_ok ||
        secs < 0) {
      *why = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
      return false;
    }
    c.secs = static_cast<std::uint64_t>(secs);
    todo->emplace_back(cls, c);
  }
  return true;
}

bool valid_obuf(std::string_view in, std::string* out, std::string* why) {
  std::vector<std::pair<int, ObufClass>> todo;
  if (!parse_obuf(in, &todo, why)) return false;
  *out = std::string(in);  // merged with the current classes when applied
  return true;
}

bool valid_oom_values(std::string_view in, std::string* out, std::string* why) {
  const auto w = split_blanks(in);
  if (w.size() != 3) {
    *why = "wrong number of arguments";
    return false;
  }
  std::string canon;
  for (auto s : w) {
    std::int64_t n = 0;
    if (!parse_i64(s, &n) || n < -2000 || n > 2000) {
      *why = "Invalid oom-score-adj-values, elements must be between -2000 and 2000.";
      return false;
    }
    if (!canon.empty()) canon += ' ';
    canon += std::to_string(n);
  }
  *out = canon;
  return true;
}

// notify-keyspace-events: the classes in Redis's order; "A" stands for g$lshzxetd. The stored
// form keeps n after A ("AnKE"), which CONFIG GET leaves out as Redis does (get_notify).
bool valid_notify(std::string_view in, std::string* out, std::string* why) {
  constexpr std::string_view kAll = "g$lshzxetd";
  std::string seen;
  for (char c : in) {
    if (c == 'A') {
      seen += kAll;
    } else if (std::string_view("g$lshzxetdnKEm").find(c) != std::string_view::npos) {
      seen += c;
    } else {
      *why = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
      return false;
    }
  }
  auto has = [&](char c) { return seen.find(c) != std::string::npos; };
  std::string canon;
  bool all = true;
  for (char c : kAll) all = all && has(c);
  if (all) {
    canon = "A";
  } else {
    for (char c : kAll)
      if (has(c)) canon += c;
  }
  if (has('n')) canon += 'n';
  for (char c : std::string_view("KEm"))
    if (has(c)) canon += c;
  *out = canon;
  return true;
}

namespace {

// Formats a percentile as Redis does ("%f" without trailing zeros).
std::string trim_double(double d) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%f", d);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

bool valid_percentiles(std::string_view in, std::string* out, std::string* why) {
  std::string canon;
  for (auto s : split_blanks(in)) {
    double d = 0;
    if (!parse_double(s, &d)) {
      *why = "Invalid latency-tracking-info-percentiles parameters";
      return false;
    }
    if (d < 0.0 || d > 100.0) {
      *why = "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]";
      return false;
    }
    if (!canon.empty()) canon += ' ';
    canon += trim_double(d);
  }
  *out = canon;
  return true;
}

bool valid_any(std::string_view in, std::string* out, std::string*) {
  *out = std::string(in);
  return true;
}

bool valid_hostname(std::string_view in, std::string* out, std::string* why) {
  for (char c : in) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok) {
      *why = "Hostnames may only contain alphanumeric characters, hyphens or dots";
      return false;
    }
  }
  *out = std::string(in);
  return true;
}

bool valid_proc_title(std::string_view in, std::string* out, std::string* why) {
  // Redis accepts plain text and the variables below; anything else in braces is refused.
  static constexpr std::string_view kVars[] = {"{title}",      "{listen-addr}", "{server-mode}",
                                               "{port}",       "{tls-port}",    "{unixsocket}",
                                               "{config-file}"};
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '}') {
      *why = "template format is invalid or contains unknown variables";
      return false;
    }
    if (in[i] != '{') continue;
    bool known = false;
    for (auto v : kVars) {
      if (in.substr(i, v.size()) == v) {
        known = true;
        i += v.size() - 1;
        break;
      }
    }
    if (!known) {
      *why = "template format is invalid or contains unknown variables";
      return false;
    }
  }
  *out = std::string(in);
  return true;
}

bool valid_bind(std::string_view in, std::string* out, std::string* why) {
  const auto w = split_blanks(in);
  if (w.size() > 16) {
    *why = "Too many bind addresses specified.";
    return false;
  }
  *out = std::string(in);
  return true;
}

namespace {

std::string range_error(const Param& p) {
  return "argument must be between " + std::to_string(p.min) + " and " + std::to_string(p.max) +
         " inclusive";
}

// Enum choices as (name, canonical) pairs; "relative=yes" names an alias.
std::vector<std::pair<std::string_view, std::string_view>> choices(const Param& p) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  std::string_view c = p.choices;
  while (!c.empty()) {
    const std::size_t comma = c.find(',');
    std::string_view item = c.substr(0, comma);
    c = comma == std::string_view::npos ? std::string_view() : c.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      out.emplace_back(item, item);
    } else {
      out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
  }
  return out;
}

std::string enum_error(const Param& p) {
  std::string list;
  for (const auto& [name, canon] : choices(p)) {
    // kvlab's own research policies are accepted but not listed: the text stays Redis's.
    if (name == "allkeys-sieve" || name == "allkeys-s3fifo") continue;
    if (!list.empty()) list += ", ";
    list += name;
  }
  return "argument(s) must be one of the following: " + list;
}

}  // namespace

bool canonical(const Param& p, std::string_view in, std::string* out, std::string* why) {
  switch (p.type) {
    case Type::kBool:
      if (iequals(in, "yes") || iequals(in, "no")) {
        if (p.name == "activedefrag" && iequals(in, "yes")) {
          *why =
              "Active defragmentation cannot be enabled: it requires a Redis server compiled with "
              "a modified Jemalloc like the one shipped by default with the Redis source "
              "distribution";
          return false;
        }
        *out = iequals(in, "yes") ? "yes" : "no";
        return true;
      }
      *why = "argument must be 'yes' or 'no'";
      return false;
    case Type::kEnum:
      for (const auto& [name, canon] : choices(p)) {
        if (iequals(in, name)) {
          *out = std::string(canon);
          return true;
        }
      }
      *why = enum_error(p);
      return false;
    case Type::kFlags: {
      // Several names; "default" (value 0) only shows when nothing else is set.
      const auto names = choices(p);
      std::vector<bool> set(names.size(), false);
      const auto words = split_blanks(in);
      if (words.empty()) {
        *why = enum_error(p);
        return false;
      }
      for (auto w : words) {
        bool found = false;
        for (std::size_t k = 0; k < names.size(); ++k) {
          if (iequals(w, names[k].first)) {
            set[k] = true;
            found = true;
          }
        }
        if (!found) {
          *why = enum_error(p);
          return false;
        }
      }
      if (set[1] && set[2]) {  // save, nosave
        *why = "shutdown options SAVE and NOSAVE can't be used simultaneously";
        return false;
      }
      std::string canon;
      for (std::size_t k = 1; k < names.size(); ++k) {
        if (!set[k]) continue;
        if (!canon.empty()) canon += ' ';
        canon += names[k].first;
      }
      *out = canon.empty() ? std::string(names[0].first) : canon;
      return true;
    }
    case Type::kInt: {
      std::int64_t v = 0;
      if (!parse_i64(in, &v)) {
        *why = "argument couldn't be parsed into an integer";
        return false;
      }
      if (v < p.min || (v >= 0 && static_cast<std::uint64_t>(v) > p.max)) {
        *why = range_error(p);
        return false;
      }
      *out = std::to_string(v);
      return true;
    }
    case Type::kMemoryPercent:
      if (!in.empty() && in.back() == '%') {
        std::int64_t pct = 0;
        if (!parse_i64(in.substr(0, in.size() - 1), &pct) || pct < 0) {
          *why = "argument must be a memory or percent value";
          return false;
        }
        if (pct > 100) {
          *why = "percentage argument must be less or equal to 100";
          return false;
        }
        *out = pct == 0 ? "0" : std::to_string(pct) + "%";
        return true;
      }
      [[fallthrough]];
    case Type::kMemory: {
      std::uint64_t v = 0;
      if (!parse_memory(in, &v)) {
        *why = p.type == Type::kMemory ? "argument must be a memory value"
                                       : "argument must be a memory or percent value";
        return false;
      }
      if (v < static_cast<std::uint64_t>(p.min) || v > p.max) {
        *why = range_error(p);
        return false;
      }
      *out = std::to_string(v);
      return true;
    }
    case Type::kOctal:
    case Type::kString:
      if (p.special != nullptr) return p.special(in, out, why);
      *out = std::string(in);
      return true;
    case Type::kSpecial:
      return p.special(in, out, why);
  }
  return false;
}

}  // namespace kvlab::server::config

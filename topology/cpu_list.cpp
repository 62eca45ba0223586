// CPU list strings as Linux prints them (cpuset "list format", taskset -c): "0-3,8,10-11".
#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "topology/placement.hpp"

namespace kvlab::topo {

std::string format_cpu_list(const std::vector<unsigned>& cpus) {
  std::vector<unsigned> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(sorted[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(sorted[j]);
    }
    i = j + 1;
  }
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

bool parse_number(std::string_view s, unsigned* out) {
  s = trim(s);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

bool parse_cpu_list(std::string_view text, std::vector<unsigned>* out, std::string* error) {
  // A guard against "0-4000000000" allocating gigabytes: no machine hwloc 2.9 knows has more.
  constexpr unsigned kMaxCpu = 1u << 20;
  std::vector<unsigned> cpus;
  const auto fail = [&](std::string_view item, const char* why) {
    if (error)
      *error =
          "bad CPU list item '" + std::string(item) + "' in '" + std::string(text) + "': " + why;
    return false;
  };
  std::string_view rest = trim(text);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) return fail(item, "empty item");
    const std::size_t dash = item.find('-');
    unsigned lo = 0;
    unsigned hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_number(item, &lo)) return fail(item, "not a number");
      hi = lo;
    } else {
      if (!parse_number(item.substr(0, dash), &lo) || !parse_number(item.substr(dash + 1), &hi)) {
        return fail(item, "expected N or N-M");
      }
      if (hi < lo) return fail(item, "range runs backwards");
    }
    if (hi >= kMaxCpu) return fail(item, "CPU number too large");
    for (unsigned c = lo; c <= hi; ++c) cpus.push_back(c);
    if (comma == std::string_view::npos) break;
    if (trim(rest).empty()) return fail(rest, "trailing comma");
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  *out = std::move(cpus);
  return true;
}

}  // namespace kvlab::topo

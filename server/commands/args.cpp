#include "server/commands/args.hpp"

#include "server/util/strings_util.hpp"

namespace kvlab::server {

std::string_view ArgParser::next() {
  if (done()) {
    fail(err::kSyntax);
    return {};
  }
  return argv_[at_++];
}

bool ArgParser::check(std::string_view word, std::size_t values) {
  if (done() || left() < 1 + values) return false;
  std::string_view a = argv_[at_];
  if (match_ == Match::kCString) a = a.substr(0, a.find('\0'));
  if (!iequals(a, word)) return false;
  ++at_;
  return true;
}

std::int64_t ArgParser::next_int(std::int64_t min, std::int64_t max, std::string_view out_of_range,
                                 std::string_view not_integer) {
  const std::string_view a = next();
  if (!ok()) return 0;
  std::int64_t v = 0;
  if (!parse_i64(a, &v)) {
    fail(not_integer);
    return 0;
  }
  if (v < min || v > max) {
    fail(out_of_range);
    return 0;
  }
  return v;
}

std::span<const std::string_view> ArgParser::next_keys(const NumkeysTexts& texts) {
  const std::string_view a = next();
  if (!ok()) return {};
  std::int64_t n = 0;
  if (!parse_i64(a, &n)) {
    fail(texts.not_integer);
    return {};
  }
  if (n < 1) {
    fail(texts.below_one);
    return {};
  }
  // n is in [1, 2^63): adding `after` cannot wrap.
  if (static_cast<std::uint64_t>(n) + texts.after > left()) {
    fail(texts.too_many);
    return {};
  }
  const std::span<const std::string_view> keys = argv_.subspan(at_, static_cast<std::size_t>(n));
  at_ += keys.size();
  return keys;
}

void ArgParser::scan_options(unsigned allowed, ScanArgs* a) {
  if (!ok()) return;
  const std::string_view e = scan_options_error(argv_, at_, allowed, a);
  at_ = argv_.size();
  if (!e.empty()) fail(e);
}

}  // namespace kvlab::server

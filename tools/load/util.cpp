// Parsing helpers for the CLI and the one blocking request the tool makes outside the event loop
// (INFO, for the manifest).
#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

#include "tools/load/connection.hpp"
#include "tools/load/load.hpp"

namespace kvlab::load {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool parse_number(std::string_view s, double* out) {
  s = trim(s);
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(*out);
}

}  // namespace

bool parse_rate(std::string_view text, double* out) {
  text = trim(text);
  if (text.empty()) return false;
  double mult = 1;
  switch (text.back()) {
    case 'k':
    case 'K':
      mult = 1e3;
      break;
    case 'm':
    case 'M':
      mult = 1e6;
      break;
    case 'g':
    case 'G':
      mult = 1e9;
      break;
    default:
      break;
  }
  if (mult != 1) text.remove_suffix(1);
  double v = 0;
  if (!parse_number(text, &v) || !(v > 0)) return false;
  *out = v * mult;
  return true;
}

bool parse_rate_list(std::string_view text, std::vector<double>* out) {
  out->clear();
  while (true) {
    const std::size_t comma = text.find(',');
    double v = 0;
    if (!parse_rate(text.substr(0, comma), &v)) return false;
    out->push_back(v);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return !out->empty();
}

bool parse_duration(std::string_view text, double* seconds) {
  text = trim(text);
  double mult = 1;
  if (text.ends_with("ms")) {
    mult = 1e-3, text.remove_suffix(2);
  } else if (text.ends_with("us")) {
    mult = 1e-6, text.remove_suffix(2);
  } else if (text.ends_with('s')) {
    text.remove_suffix(1);
  } else if (text.ends_with('m')) {
    mult = 60, text.remove_suffix(1);
  } else if (text.ends_with('h')) {
    mult = 3600, text.remove_suffix(1);
  }
  double v = 0;
  if (!parse_number(text, &v) || v < 0) return false;
  *seconds = v * mult;
  return true;
}

bool parse_template(std::string_view text, CommandTemplate* out) {
  out->args.clear();
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size()) break;
    std::string arg;
    if (text[i] == '"' || text[i] == '\'') {  // a quoted argument may hold blanks
      const char q = text[i++];
      const std::size_t close = text.find(q, i);
      if (close == std::string_view::npos) return false;
      arg.assign(text.substr(i, close - i));
      i = close + 1;
    } else {
      const std::size_t start = i;
      while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      arg.assign(text.substr(start, i - start));
    }
    out->args.push_back(std::move(arg));
  }
  return !out->args.empty();
}

bool parse_ratio(std::string_view text, std::vector<CommandTemplate>* out) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  double set = 0, get = 0;
  if (!parse_number(text.substr(0, colon), &set) || !parse_number(text.substr(colon + 1), &get))
    return false;
  if (set < 0 || get < 0 || set + get <= 0 || set != std::floor(set) || get != std::floor(get))
    return false;
  out->clear();
  if (set > 0) out->push_back({{"SET", "__key__", "__data__"}, static_cast<unsigned>(set)});
  if (get > 0) out->push_back({{"GET", "__key__"}, static_cast<unsigned>(get)});
  return true;
}

bool fetch_info(const LoadConfig& config, const std::string& section,
                std::map<std::string, std::string>* out, std::string* error) {
  Connection conn;
  if (!conn.connect(config.host, config.port, config.connect_timeout_s, error)) return false;
  std::string req;
  auto add = [&](const std::vector<std::string>& args) {
    req += '*';
    req += std::to_string(args.size());
    req += "\r\n";
    for (const auto& a : args) {
      req += '$';
      req += std::to_string(a.size());
      req += "\r\n";
      req += a;
      req += "\r\n";
    }
  };
  if (!config.password.empty()) add({"AUTH", config.password});
  add({"INFO", section});
  const std::size_t want = config.password.empty() ? 1 : 2;
  // A plain hiredis reader (reply objects) here: the text of INFO is needed.
  redisReader* reader = redisReaderCreate();
  std::size_t sent = 0, got = 0;
  const std::int64_t deadline =
      now_ns() + static_cast<std::int64_t>(config.connect_timeout_s * 1e9);
  bool ok = true;
  char buf[16384];
  while (ok && got < want) {
    if (now_ns() > deadline) {
      *error = "INFO timed out", ok = false;
      break;
    }
    pollfd p{conn.fd(), static_cast<short>(sent < req.size() ? POLLOUT : POLLIN), 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if (sent < req.size()) {
      const ssize_t n = ::send(conn.fd(), req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<std::size_t>(n);
      continue;
    }
    const ssize_t n = ::recv(conn.fd(), buf, sizeof buf, 0);
    if (n == 0) {
      *error = "connection closed during INFO", ok = false;
      break;
    }
    if (n < 0) continue;
    redisReaderFeed(reader, buf, static_cast<size_t>(n));
    for (;;) {
      void* obj = nullptr;
      if (redisReaderGetReply(reader, &obj) != REDIS_OK) {
        *error = "protocol error in INFO reply", ok = false;
        break;
      }
      if (!obj) break;
      auto* reply = static_cast<redisReply*>(obj);
      ++got;
      if (reply->type == REDIS_REPLY_ERROR) {
        *error = std::string("server replied: ") + reply->str, ok = false;
      } else if (got == want && reply->type == REDIS_REPLY_STRING) {
        std::string_view text(reply->str, reply->len);
        while (!text.empty()) {
          const std::size_t nl = text.find('\n');
          std::string_view line = trim(text.substr(0, nl));
          text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
          const std::size_t colon = line.find(':');
          if (line.empty() || line[0] == '#' || colon == std::string_view::npos) continue;
          (*out)[std::string(line.substr(0, colon))] = std::string(line.substr(colon + 1));
        }
      }
      freeReplyObject(reply);
    }
  }
  redisReaderFree(reader);
  return ok;
}

}  // namespace kvlab::load

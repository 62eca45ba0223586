#include "tools/load/cluster.hpp"

#include <hiredis/hiredis.h>

#include <charconv>
#include <memory>

namespace kvlab::load {

unsigned crc16_xmodem(std::string_view bytes) {
  unsigned crc = 0;
  for (const char ch : bytes) {
    crc ^= static_cast<unsigned>(static_cast<unsigned char>(ch)) << 8;
    for (int i = 0; i < 8; ++i)
      crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

unsigned key_slot(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1)
      key = key.substr(open + 1, close - open - 1);
  }
  return crc16_xmodem(key) % kClusterSlots;
}

std::uint16_t SlotMap::node_index(const NodeAddr& addr) {
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i] == addr) return static_cast<std::uint16_t>(i);
  nodes.push_back(addr);
  return static_cast<std::uint16_t>(nodes.size() - 1);
}

unsigned SlotMap::unserved() const {
  unsigned n = 0;
  for (const auto o : owner) n += o == kNoNode;
  return n;
}

namespace {

using Ctx = std::unique_ptr<redisContext, decltype(&redisFree)>;
using Reply = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

Reply call(redisContext* c, std::initializer_list<std::string_view> args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto a : args) argv.push_back(a.data()), lens.push_back(a.size());
  return Reply(static_cast<redisReply*>(
                   redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data())),
               &freeReplyObject);
}

std::string text(const redisReply* r) {
  return r ? std::string(r->str, r->len) : std::string();
}

// A node entry of CLUSTER SLOTS: [host, port, id, ...]. An empty host means "the address you
// reached me at".
bool node_of(const redisReply* e, const std::string& seed_host, NodeAddr* out) {
  if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || e->element[1]->type != REDIS_REPLY_INTEGER)
    return false;
  out->host = e->element[0]->type == REDIS_REPLY_STRING ? text(e->element[0]) : "";
  if (out->host.empty() || out->host == "?") out->host = seed_host;
  out->port = static_cast<std::uint16_t>(e->element[1]->integer);
  return true;
}

}  // namespace

bool fetch_slot_map(const std::string& host, std::uint16_t port, const std::string& password,
                    double timeout_s, SlotMap* out, std::string* error) {
  const timeval tv{static_cast<time_t>(timeout_s),
                   static_cast<suseconds_t>(
                       (timeout_s - static_cast<double>(static_cast<time_t>(timeout_s))) * 1e6)};
  Ctx c(redisConnectWithTimeout(host.c_str(), port, tv), &redisFree);
  if (!c || c->err) {
    *error = "cannot connect to " + host + ":" + std::to_string(port) +
             (c ? std::string(": ") + c->errstr : std::string());
    return false;
  }
  redisSetTimeout(c.get(), tv);
  if (!password.empty()) {
    Reply r = call(c.get(), {"AUTH", password});
    if (!r || r->type == REDIS_REPLY_ERROR) return *error = "AUTH failed: " + text(r.get()), false;
  }
  Reply r = call(c.get(), {"CLUSTER", "SLOTS"});
  if (!r) return *error = "no reply to CLUSTER SLOTS: " + std::string(c->errstr), false;
  if (r->type == REDIS_REPLY_ERROR)
    return *error = "CLUSTER SLOTS: " + text(r.get()) + " (is it a cluster node?)", false;
  *out = SlotMap{};
  for (std::size_t i = 0; i < r->elements; ++i) {
    const redisReply* range = r->element[i];
    if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
        range->element[0]->type != REDIS_REPLY_INTEGER ||
        range->element[1]->type != REDIS_REPLY_INTEGER)
      return *error = "CLUSTER SLOTS: unexpected reply shape", false;
    NodeAddr primary;
    if (!node_of(range->element[2], host, &primary))
      return *error = "CLUSTER SLOTS: unexpected node entry", false;
    const auto lo = range->element[0]->integer, hi = range->element[1]->integer;
    if (lo < 0 || hi >= kClusterSlots || lo > hi)
      return *error = "CLUSTER SLOTS: bad slot range", false;
    const std::uint16_t n = out->node_index(primary);
    for (long long s = lo; s <= hi; ++s) out->owner[static_cast<std::size_t>(s)] = n;
  }
  if (out->nodes.empty()) return *error = "CLUSTER SLOTS: no slot is served", false;
  return true;
}

bool parse_redirect(std::string_view e, Redirect* out) {
  if (!e.empty() && e[0] == '-') e.remove_prefix(1);
  if (e.rfind("MOVED ", 0) == 0) {
    out->ask = false;
    e.remove_prefix(6);
  } else if (e.rfind("ASK ", 0) == 0) {
    out->ask = true;
    e.remove_prefix(4);
  } else {
    return false;
  }
  const std::size_t sp = e.find(' ');
  if (sp == std::string_view::npos) return false;
  unsigned slot = 0;
  if (std::from_chars(e.data(), e.data() + sp, slot).ec != std::errc{} || slot >= kClusterSlots)
    return false;
  std::string_view addr = e.substr(sp + 1);
  while (!addr.empty() && (addr.back() == '\r' || addr.back() == '\n' || addr.back() == ' '))
    addr.remove_suffix(1);
  const std::size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) return false;
  unsigned port = 0;
  if (std::from_chars(addr.data() + colon + 1, addr.data() + addr.size(), port).ec != std::errc{} ||
      port == 0 || port > 65535)
    return false;
  out->slot = slot;
  out->to.host = std::string(addr.substr(0, colon));
  out->to.port = static_cast<std::uint16_t>(port);
  return true;
}

}  // namespace kvlab::load

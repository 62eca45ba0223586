// The blocking registry (see blocking.hpp) and the hook through which the core serves waiters.
#include "server/core/blocking.hpp"

namespace kvlab::server {

namespace {
// Set once, during static initialization (commands/blocking.cpp), before any thread but main
// exists; the workers, started later, see it through their creation (a plain pointer suffices).
ServeBlockedFn g_serve_blocked = nullptr;
}  // namespace

void set_serve_blocked(ServeBlockedFn fn) {
  g_serve_blocked = fn;
}

void serve_blocked(CommandContext& ctx) {
  g_serve_blocked(ctx);
}

void BlockingRegistry::add(const std::shared_ptr<BlockedClient>& b) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& k : b->keys) by_key_[k].push_back(b);
  by_conn_[b->conn_id] = b;
  count_.fetch_add(1, std::memory_order_relaxed);
}

void BlockingRegistry::remove(const BlockedClient& b) {
  std::lock_guard<std::mutex> lock(mu_);
  auto c = by_conn_.find(b.conn_id);
  if (c == by_conn_.end() || c->second.get() != &b) return;  // removed already
  by_conn_.erase(c);
  for (const auto& k : b.keys) {
    auto it = by_key_.find(k);
    if (it == by_key_.end()) continue;
    auto& q = it->second;
    for (auto e = q.begin(); e != q.end(); ++e) {
      if (e->get() == &b) {
        q.erase(e);
        break;
      }
    }
    if (q.empty()) by_key_.erase(it);
  }
  count_.fetch_sub(1, std::memory_order_relaxed);
}

bool BlockingRegistry::has_waiters(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  return by_key_.find(std::string(key)) != by_key_.end();
}

std::vector<std::shared_ptr<BlockedClient>> BlockingRegistry::waiters(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(std::string(key));
  if (it == by_key_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::shared_ptr<BlockedClient> BlockingRegistry::find(std::uint64_t conn_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_conn_.find(conn_id);
  return it == by_conn_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<BlockedClient>> BlockingRegistry::all() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<BlockedClient>> out;
  out.reserve(by_conn_.size());
  for (const auto& [id, b] : by_conn_) out.push_back(b);
  return out;
}

std::vector<std::string> BlockingRegistry::keys() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.reserve(by_key_.size());
  for (const auto& [key, q] : by_key_) out.push_back(key);
  return out;
}

ReadyKeys& ready_keys() {
  thread_local ReadyKeys r;
  return r;
}

}  // namespace kvlab::server

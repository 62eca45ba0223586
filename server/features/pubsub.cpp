// Pub/sub registry, frames and PUBLISH fan-out; see pubsub.hpp for the model.
#include "server/features/pubsub.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>

#include "server/features/host.hpp"
#include "server/features/notify.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server {

// ---- frames and batches ----

namespace {
// Appends "$<len>\r\n<bytes>\r\n" at p; returns the end.
char* put_bulk(char* p, std::string_view s) {
  *p++ = '$';
  p += format_i64(static_cast<std::int64_t>(s.size()), p);
  *p++ = '\r';
  *p++ = '\n';
  if (!s.empty()) std::memcpy(p, s.data(), s.size());  // an empty view may hold nullptr
  p += s.size();
  *p++ = '\r';
  *p++ = '\n';
  return p;
}
constexpr std::size_t kBulkOverhead = 1 + 20 + 2 + 2;  // '$', length digits, two CRLFs
}  // namespace

PubSubFrame* PubSubFrame::allocate(std::size_t len) {
  void* mem = ::operator new(sizeof(PubSubFrame) + len);
  return new (mem) PubSubFrame(len);
}

void PubSubFrame::destroy(PubSubFrame* f) {
  f->~PubSubFrame();
  ::operator delete(f);
}

PubSubFrame* PubSubFrame::make_raw(std::string_view bytes) {
  PubSubFrame* f = allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(reinterpret_cast<char*>(f + 1), bytes.data(), bytes.size());
  return f;
}

PubSubFrame* PubSubFrame::make_message(std::string_view channel, std::string_view payload,
                                       std::string_view kind) {
  const std::size_t cap = 4 + kind.size() + channel.size() + payload.size() + 3 * kBulkOverhead;
  PubSubFrame* f = allocate(cap);
  char* const begin = reinterpret_cast<char*>(f + 1);
  char* p = begin;
  std::memcpy(p, "*3\r\n", 4);
  p += 4;
  p = put_bulk(p, kind);
  p = put_bulk(p, channel);
  p = put_bulk(p, payload);
  f->len_ = static_cast<std::size_t>(p - begin);
  return f;
}

PubSubFrame* PubSubFrame::make_pmessage(std::string_view pattern, std::string_view channel,
                                        std::string_view payload) {
  const std::size_t cap = 18 + pattern.size() + channel.size() + payload.size() + 3 * kBulkOverhead;
  PubSubFrame* f = allocate(cap);
  char* const begin = reinterpret_cast<char*>(f + 1);
  char* p = begin;
  std::memcpy(p, "*4\r\n$8\r\npmessage\r\n", 18);
  p += 18;
  p = put_bulk(p, pattern);
  p = put_bulk(p, channel);
  p = put_bulk(p, payload);
  f->len_ = static_cast<std::size_t>(p - begin);
  return f;
}

PubSubBatch* PubSubBatch::make(std::uint32_t count) {
  void* mem = ::operator new(sizeof(PubSubBatch) + count * sizeof(PubSubEnvelope));
  auto* b = new (mem) PubSubBatch;
  b->count = count;
  return b;
}

void PubSubBatch::destroy(PubSubBatch* b, bool release_frames) {
  if (release_frames)
    for (std::uint32_t i = 0; i < b->count; ++i) b->items()[i].frame->release();
  ::operator delete(b);
}

// ---- registry ----

bool PubSubRegistry::add(Map& m, std::string_view name, SubscriberRef s) {
  auto it = m.find(name);
  if (it == m.end()) it = m.emplace(std::string(name), std::vector<SubscriberRef>{}).first;
  auto& v = it->second;
  if (std::find(v.begin(), v.end(), s) != v.end()) return false;
  v.push_back(s);
  return true;
}

bool PubSubRegistry::remove(Map& m, std::string_view name, SubscriberRef s) {
  auto it = m.find(name);
  if (it == m.end()) return false;
  auto& v = it->second;
  auto pos = std::find(v.begin(), v.end(), s);
  if (pos == v.end()) return false;
  *pos = v.back();  // delivery order between subscribers is unspecified, as in Redis
  v.pop_back();
  if (v.empty()) m.erase(it);
  return true;
}

namespace {
// REQUIRES: the exclusive lock. Release: pairs with the acquire load in idle().
void adjust(std::atomic<std::size_t>& n, bool added, bool removed) {
  if (added) n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  if (removed) n.store(n.load(std::memory_order_relaxed) - 1, std::memory_order_release);
}
}  // namespace

bool PubSubRegistry::subscribe(std::string_view channel, SubscriberRef s) {
  std::unique_lock lock(mu_);
  const bool added = add(channels_, channel, s);
  adjust(subscriptions_, added, false);
  return added;
}

bool PubSubRegistry::unsubscribe(std::string_view channel, SubscriberRef s) {
  std::unique_lock lock(mu_);
  const bool removed = remove(channels_, channel, s);
  adjust(subscriptions_, false, removed);
  return removed;
}

bool PubSubRegistry::psubscribe(std::string_view pattern, SubscriberRef s) {
  std::unique_lock lock(mu_);
  const bool added = add(patterns_, pattern, s);
  adjust(subscriptions_, added, false);
  return added;
}

bool PubSubRegistry::punsubscribe(std::string_view pattern, SubscriberRef s) {
  std::unique_lock lock(mu_);
  const bool removed = remove(patterns_, pattern, s);
  adjust(subscriptions_, false, removed);
  return removed;
}

bool PubSubRegistry::ssubscribe(std::string_view channel, SubscriberRef s) {
  std::unique_lock lock(mu_);
  const bool added = add(shard_, channel, s);
  adjust(subscriptions_, added, false);
  return added;
}

bool PubSubRegistry::sunsubscribe(std::string_view channel, SubscriberRef s) {
  std::unique_lock lock(mu_);
  const bool removed = remove(shard_, channel, s);
  adjust(subscriptions_, false, removed);
  return removed;
}

void PubSubRegistry::remove_all(SubscriberRef s, const SubscriptionSet& channels,
                                const SubscriptionSet& patterns,
                                const SubscriptionSet& shard_channels) {
  std::unique_lock lock(mu_);
  for (const auto& c : channels) adjust(subscriptions_, false, remove(channels_, c, s));
  for (const auto& p : patterns) adjust(subscriptions_, false, remove(patterns_, p, s));
  for (const auto& c : shard_channels) adjust(subscriptions_, false, remove(shard_, c, s));
}

void PubSubRegistry::visit_receivers(
    std::string_view channel, FunctionRef<void(SubscriberRef)> on_channel,
    FunctionRef<void(std::string_view, SubscriberRef)> on_pattern) {
  std::shared_lock lock(mu_);
  if (auto it = channels_.find(channel); it != channels_.end())
    for (const SubscriberRef& s : it->second) on_channel(s);
  for (const auto& [pattern, subs] : patterns_) {
    if (!glob_match(pattern, channel)) continue;
    for (const SubscriberRef& s : subs) on_pattern(pattern, s);
  }
}

void PubSubRegistry::visit_shard_receivers(std::string_view channel,
                                           FunctionRef<void(SubscriberRef)> on_shard) {
  std::shared_lock lock(mu_);
  if (auto it = shard_.find(channel); it != shard_.end())
    for (const SubscriberRef& s : it->second) on_shard(s);
}

std::vector<std::string> PubSubRegistry::channels(std::optional<std::string_view> pattern,
                                                  bool shard) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, subs] : shard ? shard_ : channels_)
    if (!pattern || glob_match(*pattern, name)) out.push_back(name);
  return out;
}

std::size_t PubSubRegistry::numsub(std::string_view channel, bool shard) const {
  std::shared_lock lock(mu_);
  const Map& m = shard ? shard_ : channels_;
  auto it = m.find(channel);
  return it == m.end() ? 0 : it->second.size();
}

std::size_t PubSubRegistry::channel_count(bool shard) const {
  std::shared_lock lock(mu_);
  return shard ? shard_.size() : channels_.size();
}

std::size_t PubSubRegistry::pattern_count() const {
  std::shared_lock lock(mu_);
  return patterns_.size();
}

// ---- fan-out ----

namespace {
// Per publishing thread scratch, reused across PUBLISH calls (no allocation in the steady state
// besides frames and batches).
struct FanOut {
  std::vector<std::vector<PubSubEnvelope>> remote;  // per target worker
  std::vector<unsigned> touched;                    // workers with envelopes
  std::vector<PubSubEnvelope> local;                // receivers on the publishing worker
  std::vector<PubSubFrame*> frames;
};
thread_local FanOut t_fan;

// Called once the registry lock is released: posts to other workers, in order, then writes the
// local receivers, then drops the publisher's frame references.
void post_fan_out(FeatureHost& server, unsigned self, FanOut& f) {
  for (unsigned w : f.touched) {
    auto& v = f.remote[w];
    PubSubBatch* b = PubSubBatch::make(static_cast<std::uint32_t>(v.size()));
    std::copy(v.begin(), v.end(), b->items());
    server.post(w, b);
    v.clear();
  }
  f.touched.clear();
  for (const PubSubEnvelope& e : f.local) server.deliver(self, e.conn, e.frame->bytes());
  f.local.clear();
  for (PubSubFrame* fr : f.frames) fr->release();
  f.frames.clear();
}
}  // namespace

std::int64_t publish(FeatureHost& server, unsigned self, std::string_view channel,
                     std::string_view payload) {
  // Keyspace notifications the caller's writes noted go first (a script's or a transaction's
  // PUBLISH after a write; notify.hpp).
  if (notify_pending()) notify_flush(server, self);
  PubSubRegistry& reg = server.pubsub();
  if (reg.idle()) return 0;  // the common benchmark case: no lock, no allocation
  FanOut& f = t_fan;
  const unsigned n = server.num_workers();
  if (f.remote.size() < n) f.remote.resize(n);
  std::int64_t receivers = 0;
  PubSubFrame* frame = nullptr;    // the frame being filled
  std::uint32_t frame_remote = 0;  // its envelopes on other workers
  auto finish_frame = [&] {
    if (frame == nullptr) return;
    frame->set_refs(1 + frame_remote);  // + the publisher's reference, dropped below
    f.frames.push_back(frame);
    frame = nullptr;
    frame_remote = 0;
  };
  auto add = [&](SubscriberRef s) {
    ++receivers;
    if (s.worker == self) {
      f.local.push_back({frame, s.conn});
      return;
    }
    auto& v = f.remote[s.worker];
    if (v.empty()) f.touched.push_back(s.worker);
    v.push_back({frame, s.conn});
    ++frame_remote;
  };
  std::string_view current_pattern;
  bool have_pattern = false;
  reg.visit_receivers(
      channel,
      [&](SubscriberRef s) {
        if (frame == nullptr) frame = PubSubFrame::make_message(channel, payload);
        add(s);
      },
      [&](std::string_view pattern, SubscriberRef s) {
        // Patterns arrive grouped: a new pattern starts a new frame. The pattern's bytes are
        // copied into the frame here, while the shared lock still protects them.
        if (!have_pattern || pattern.data() != current_pattern.data()) {
          finish_frame();
          frame = PubSubFrame::make_pmessage(pattern, channel, payload);
          current_pattern = pattern;
          have_pattern = true;
        }
        add(s);
      });
  finish_frame();
  post_fan_out(server, self, f);
  return receivers;
}

std::int64_t spublish(FeatureHost& server, unsigned self, std::string_view channel,
                      std::string_view payload) {
  PubSubRegistry& reg = server.pubsub();
  if (reg.idle()) return 0;
  FanOut& f = t_fan;
  const unsigned n = server.num_workers();
  if (f.remote.size() < n) f.remote.resize(n);
  std::int64_t receivers = 0;
  PubSubFrame* frame = nullptr;
  std::uint32_t frame_remote = 0;
  reg.visit_shard_receivers(channel, [&](SubscriberRef s) {
    if (frame == nullptr) frame = PubSubFrame::make_message(channel, payload, "smessage");
    ++receivers;
    if (s.worker == self) {
      f.local.push_back({frame, s.conn});
      return;
    }
    auto& v = f.remote[s.worker];
    if (v.empty()) f.touched.push_back(s.worker);
    v.push_back({frame, s.conn});
    ++frame_remote;
  });
  if (frame != nullptr) {
    frame->set_refs(1 + frame_remote);  // + the publisher's reference, dropped by post_fan_out
    f.frames.push_back(frame);
  }
  post_fan_out(server, self, f);
  return receivers;
}

}  // namespace kvlab::server

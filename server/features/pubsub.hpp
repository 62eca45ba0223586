// Pub/sub: the process-wide subscription registry, the shared message frames and the fan-out of
// PUBLISH to subscribers on every worker.
//
// Model (Redis semantics, multi-threaded delivery):
//   PUBLISH on worker P ──registry (shared lock)──▶ receivers as (worker, connection id)
//     receivers on P       : bytes appended to their output buffers at once (no queue)
//     receivers on W != P  : one PubSubBatch per W ──W's inbox (--queue backend)──▶ W's loop
//                            delivers each envelope to the connection with that id, if it still
//                            exists; an eventfd write wakes W at most once per drain (Worker).
// Frames: a published message is encoded once per kind (one `message` frame for the channel's
// subscribers, one `pmessage` frame per matching pattern; SPUBLISH one `smessage` frame) in a
// single reference-counted allocation shared by all its receivers; the queue element is a pointer
// to a batch of {frame*, connection id} envelopes. The last receiver (or the drop of a message
// whose connection closed) frees the frame.
//
// Order: per publisher and channel, messages reach every subscriber in PUBLISH order: the
// publishing thread delivers local receivers synchronously and pushes to each target worker's
// inbox in order; every inbox is FIFO per producer and has a single consumer.
//
// Thread safety: the registry is guarded by a shared_mutex (PUBLISH and PUBSUB take the shared
// side; (UN)SUBSCRIBE and connection close the exclusive side). Frames are immutable once posted.
// A connection's own list of subscriptions (Connection::channels/patterns) belongs to its worker.
//
// Sharded pub/sub (SSUBSCRIBE, SPUBLISH; Redis 7.0): shard channels are a namespace of their own,
// apart from channels and patterns (PUBLISH never reaches an SSUBSCRIBEr, nor SPUBLISH a pattern),
// delivered by the same frames and inboxes. kvlab is one shard, so every shard channel is local.
//
// Invariants:
//  1. (channel, ref) is in the registry iff ref's connection has channel in its own set (both
//     change together, on the connection's worker, under the exclusive lock for the registry);
//     likewise for patterns and shard channels.
//  2. subscriptions_ equals the number of (channel|pattern|shard channel, ref) pairs in the
//     registry.
//  3. A frame's refs equals the number of envelopes (and publisher references) not yet released.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "structures/common/function_ref.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::server {

class FeatureHost;
struct Connection;

// Which connection a subscription belongs to; connection ids are unique for the process' life.
struct SubscriberRef {
  unsigned worker;
  std::uint64_t conn;
  bool operator==(const SubscriberRef&) const = default;
};

// A connection's own subscriptions (sorted: UNSUBSCRIBE without arguments answers in this order).
using SubscriptionSet = std::set<std::string, std::less<>>;

// One encoded RESP2 push (`message` or `pmessage` array) shared by all its receivers. A RESP3
// receiver gets the same bytes with '>' for the leading '*' (Worker::deliver).
class PubSubFrame {
 public:
  // refs starts at 1 (the publisher's reference).
  // kind is "message" (PUBLISH) or "smessage" (SPUBLISH).
  static PubSubFrame* make_message(std::string_view channel, std::string_view payload,
                                   std::string_view kind = "message");
  static PubSubFrame* make_pmessage(std::string_view pattern, std::string_view channel,
                                    std::string_view payload);
  // A frame holding `bytes` as they are (client-side caching's tagged frames, tracking.hpp).
  static PubSubFrame* make_raw(std::string_view bytes);
  std::string_view bytes() const { return {reinterpret_cast<const char*>(this + 1), len_}; }
  // REQUIRES: the frame is not yet visible to another thread.
  void set_refs(std::uint32_t n) { refs_.store(n, std::memory_order_relaxed); }
  // Drops one reference; the last one frees the frame.
  void release() {
    // acq_rel: release orders our reads of the bytes before the free; acquire makes the freeing
    // thread see every other receiver's reads finished.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(this);
  }

 private:
  PubSubFrame(std::size_t len) : len_(len) {}
  static PubSubFrame* allocate(std::size_t len);
  static void destroy(PubSubFrame* f);
  std::atomic<std::uint32_t> refs_{1};
  std::size_t len_;
};

struct PubSubEnvelope {
  PubSubFrame* frame;
  std::uint64_t conn;
};

// What travels through an inbox: the envelopes of one PUBLISH for one target worker, in one
// allocation (header followed by `count` envelopes).
struct alignas(PubSubEnvelope) PubSubBatch {
  std::uint32_t count;
  PubSubEnvelope* items() { return reinterpret_cast<PubSubEnvelope*>(this + 1); }
  static PubSubBatch* make(std::uint32_t count);
  // Frees the batch; release_frames also drops its frame references (undelivered messages).
  static void destroy(PubSubBatch* b, bool release_frames);
};
static_assert(sizeof(PubSubBatch) % alignof(PubSubEnvelope) == 0);

class PubSubRegistry {
 public:
  // Each returns true when the subscription is new (exclusive lock).
  bool subscribe(std::string_view channel, SubscriberRef s);
  bool unsubscribe(std::string_view channel, SubscriberRef s);
  bool psubscribe(std::string_view pattern, SubscriberRef s);
  bool punsubscribe(std::string_view pattern, SubscriberRef s);
  bool ssubscribe(std::string_view channel, SubscriberRef s);
  bool sunsubscribe(std::string_view channel, SubscriberRef s);
  // Removes every subscription of a closing connection, with one exclusive lock.
  void remove_all(SubscriberRef s, const SubscriptionSet& channels, const SubscriptionSet& patterns,
                  const SubscriptionSet& shard_channels);

  // True when nobody subscribes to anything: PUBLISH then answers 0 without taking the lock.
  bool idle() const {
    // acquire: pairs with the release stores in (un)subscribe; a subscription whose reply the
    // subscriber has read (and so could have told a publisher about) is seen here.
    return subscriptions_.load(std::memory_order_acquire) == 0;
  }

  // Under the shared lock: on_channel(ref) for every subscriber of channel, then
  // on_pattern(pattern, ref) for every subscription of a pattern that matches it.
  void visit_receivers(std::string_view channel, FunctionRef<void(SubscriberRef)> on_channel,
                       FunctionRef<void(std::string_view, SubscriberRef)> on_pattern);

  // Under the shared lock: on_shard(ref) for every subscriber of shard channel `channel`.
  void visit_shard_receivers(std::string_view channel, FunctionRef<void(SubscriberRef)> on_shard);

  // PUBSUB CHANNELS [pattern], NUMSUB, NUMPAT, and INFO's counts; with shard = true, PUBSUB
  // SHARDCHANNELS and SHARDNUMSUB (and INFO's pubsubshard_channels).
  std::vector<std::string> channels(std::optional<std::string_view> pattern,
                                    bool shard = false) const;
  std::size_t numsub(std::string_view channel, bool shard = false) const;
  std::size_t channel_count(bool shard = false) const;
  std::size_t pattern_count() const;

 private:
  using Map = std::unordered_map<std::string, std::vector<SubscriberRef>, kvlab::StringHash,
                                 kvlab::StringEqual>;
  static bool add(Map& m, std::string_view name, SubscriberRef s);
  static bool remove(Map& m, std::string_view name, SubscriberRef s);

  mutable std::shared_mutex mu_;
  Map channels_;                               // channel → subscribers (non-empty vectors only)
  Map patterns_;                               // pattern → subscribers (non-empty vectors only)
  Map shard_;                                  // shard channel → subscribers (non-empty only)
  std::atomic<std::size_t> subscriptions_{0};  // invariant 2; written under mu_ (exclusive)
};

// PUBLISH from a handler running on `self`: delivers to every receiver and returns how many
// there were (Redis's count: channel subscribers plus matching pattern subscriptions).
std::int64_t publish(FeatureHost& server, unsigned self, std::string_view channel,
                     std::string_view payload);

// SPUBLISH: delivers an `smessage` to every subscriber of shard channel `channel`; returns how
// many there were.
std::int64_t spublish(FeatureHost& server, unsigned self, std::string_view channel,
                      std::string_view payload);

}  // namespace kvlab::server

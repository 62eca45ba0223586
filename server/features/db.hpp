// The keyspace as commands see it: the backend (AnyKeyspace) plus what Redis does on every
// modification of a key — here, marking the transactions that WATCH it. Same operations and names
// as AnyKeyspace, so command code reads the same; a modification costs one relaxed load more when
// nobody watches anything.
//
// WATCH follows Redis 7.0 (multi.c): a watched key is "touched" by every command that modifies it,
// whoever runs it; EXEC then fails. A key that had already expired when it was watched is not
// touched by its own deletion (logically nothing changed), and EXEC also fails when a watched key
// that was live at WATCH time has expired since.
//
// Thread safety: Db's operations are the backend's (concurrent). WatchRegistry has one mutex; its
// count is read relaxed on every modification, which is enough because WATCH registers inside an
// escalated operation (atomicity.hpp): a command that starts after it sees the count through the
// escalation's release, and one that started before it finishes before it.
//
// Layer: Db is where the features meet the keyspace (every write reaches eviction's key index,
// tracking, keyspace notifications, WATCH and blocked clients from modified(), inline), so it is
// in the features layer; core names it only by a forward declaration (CommandContext::ks).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/core/blocking.hpp"
#include "server/data/object.hpp"
#include "server/features/eviction.hpp"
#include "server/features/notify.hpp"
#include "server/features/tracking.hpp"
#include "structures/any_keyspace.hpp"

namespace kvlab::server {

using Keyspace = AnyKeyspace<Value>;

// One connection's watched keys. `dirty` is set by whoever touches one of them.
struct WatchClient {
  std::atomic<bool> dirty{false};  // relaxed: read by EXEC inside an escalation (see above)
  struct Key {
    std::string key;
    bool expired_at_watch;  // guarded by the registry's mutex
  };
  std::vector<std::unique_ptr<Key>> keys;  // guarded by the registry's mutex
};

class WatchRegistry {
 public:
  bool active() const { return count_.load(std::memory_order_relaxed) != 0; }
  // Adds key to c's watched keys (once). expired: the key exists but its TTL has passed.
  void watch(WatchClient& c, std::string_view key, bool expired);
  void unwatch_all(WatchClient& c);
  // A command modified key; now_absent: the key does not exist after the modification.
  void touch(std::string_view key, bool now_absent);
  // FLUSHALL: exists(key) says whether a watched key exists physically (even if expired).
  template <class Exists>
  void touch_all(Exists&& exists);
  // EXEC: true when a key that was live when watched has expired since.
  template <class Expired>
  bool any_expired(WatchClient& c, Expired&& expired);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<std::pair<WatchClient*, WatchClient::Key*>>> by_key_;
  std::atomic<std::size_t> count_{0};  // watched (client, key) pairs
};

class Db {
 public:
  Db(Keyspace& ks, WatchRegistry& watches, BlockingRegistry& blocking, TrackingRegistry& tracking)
      : ks_(ks), watches_(watches), blocking_(blocking), tracking_(tracking) {}

  const BackendTraits& traits() const { return ks_.traits(); }
  template <class F>
  bool find(std::string_view key, F&& visitor) {
    return ks_.find(key, visitor);
  }
  bool insert(std::string_view key, const Value& v) {
    const bool done = ks_.insert(key, v);
    if (done) modified(key, false, true, wakes_waiters(v));
    return done;
  }
  bool insert_or_assign(std::string_view key, const Value& v) {
    const bool inserted = ks_.insert_or_assign(key, v);
    modified(key, false, inserted, wakes_waiters(v));
    return inserted;
  }
  bool insert_or_assign(std::string_view key, Value&& v) {
    const bool wake = wakes_waiters(v);
    const bool inserted = ks_.insert_or_assign(key, std::move(v));
    modified(key, false, inserted, wake);
    return inserted;
  }
  bool erase(std::string_view key) {
    const bool done = ks_.erase(key);
    if (done) modified(key, true);
    return done;
  }
  // A SET-family write of a whole new value (Redis's setKey): as insert_or_assign, and under an
  // LFU policy the new value inherits the old one's counter, touched (dbSetValue; eviction.hpp).
  bool overwrite(std::string_view key, Value&& v) {
    if (eviction_ == nullptr || !eviction_->lfu()) return insert_or_assign(key, std::move(v));
    const bool wake = wakes_waiters(v);
    const UpdateOutcome o = ks_.update(key, [&](const Value* old) {
      // The old value counts only while live (Redis's lookupKeyWrite deletes an expired key).
      if (old != nullptr && !old->expired_at(eviction_->clock())) {
        eviction_->touch_write(*old->obj);
        v.obj->set_access(old->obj->access());  // v is not published yet
      }
      return Update<Value>::assign(v);  // a copy: fn may run more than once
    });
    modified(key, false, o == UpdateOutcome::inserted, wake);
    return o == UpdateOutcome::inserted;
  }
  // fn's key, when present, is touched first (Redis's lookupKeyWrite updates the LRU/LFU word).
  template <class F>
  UpdateOutcome update(std::string_view key, F&& fn) {
    bool wake = false;  // of the value fn stored last (fn may run more than once)
    const UpdateOutcome o = ks_.update(key, [&](const Value* v) {
      if (v != nullptr && eviction_ != nullptr) eviction_->touch_write(*v->obj);
      auto u = fn(v);
      wake = u.kind() == Update<Value>::Kind::assign && wakes_waiters(u.value());
      return u;
    });
    if (o != UpdateOutcome::unchanged)
      modified(key, o == UpdateOutcome::erased, o == UpdateOutcome::inserted, wake);
    return o;
  }
  std::size_t size_approx() { return ks_.size_approx(); }
  template <class F>
  void for_each(F&& fn) {
    ks_.for_each(fn);
  }
  template <class F>
  bool range(std::string_view lo, std::string_view hi, F&& fn) {
    return ks_.range(lo, hi, fn);
  }
  template <class F>
  bool prefetch(std::span<const std::string_view> keys, F&& on_value) {
    return ks_.prefetch(keys, on_value);
  }
  // FLUSHALL/FLUSHDB: touches the watched keys that exist, then empties the keyspace.
  void clear();
  // A container changed in place (LPUSH on an existing list…): the key was modified.
  void touch(std::string_view key) { modified(key, false); }

  Keyspace& backend() { return ks_; }
  // maxmemory's key tracking (eviction.hpp); set once by Server::start() before any worker runs.
  void set_eviction(Eviction* e) { eviction_ = e; }
  Eviction* eviction() { return eviction_; }
  WatchRegistry& watches() { return watches_; }
  TrackingRegistry& tracking() { return tracking_; }

 private:
  // A value blocked list, sorted-set and stream clients can be served from (ReadyKeys).
  static bool wakes_waiters(const Value& v) {
    const ObjectType t = v.obj->type();
    return t == ObjectType::kList || t == ObjectType::kZSet || t == ObjectType::kStream;
  }
  // created: the key did not exist before (eviction tracks it from now on). wake: the key now
  // holds a value that blocked clients of any kind can be served from (ReadyKeys).
  void modified(std::string_view key, bool now_absent, bool created = false, bool wake = false) {
    // Redis's dbAdd: class n, before the command's own event.
    if (created) notify_keyspace_event(kNotifyNew, "new", key);
    if (eviction_ != nullptr) {
      if (created) eviction_->on_insert(key);
      if (now_absent) eviction_->on_erase(key);
    }
    if (watches_.active()) watches_.touch(key, now_absent);
    // Client-side caching: noted here, sent once the command has replied (tracking.hpp).
    if (tracking_.active()) tracking_note_modified(key);
    if (blocking_.active()) {  // for serve_blocked()
      ReadyKeys& r = ready_keys();
      if (r.collecting) r.add(key, wake);
    }
  }

  Keyspace& ks_;
  WatchRegistry& watches_;
  BlockingRegistry& blocking_;
  TrackingRegistry& tracking_;
  Eviction* eviction_ = nullptr;
};

template <class Exists>
void WatchRegistry::touch_all(Exists&& exists) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, watchers] : by_key_) {
    if (!exists(key)) continue;
    for (auto& [c, k] : watchers) {
      if (k->expired_at_watch) {
        k->expired_at_watch = false;  // deleted now: logically no change
        continue;
      }
      c->dirty.store(true, std::memory_order_relaxed);
    }
  }
}

template <class Expired>
bool WatchRegistry::any_expired(WatchClient& c, Expired&& expired) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& k : c.keys)
    if (!k->expired_at_watch && expired(k->key)) return true;
  return false;
}

// Removes key if its stored value has expired by now_ms. Returns true when this call removed it.
inline bool expire_if_due(Db& ks, std::string_view key, std::int64_t now_ms) {
  const TrackingServerChange by_server;  // the invalidation names no client (NOLOOP)
  bool removed = false;
  ks.update(key, [&](const Value* v) {
    removed = v != nullptr && v->expired_at(now_ms);
    return removed ? Update<Value>::erase() : Update<Value>::keep();
  });
  if (removed) notify_keyspace_event(kNotifyExpired, "expired", key);
  return removed;
}

}  // namespace kvlab::server

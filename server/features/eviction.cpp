// maxmemory and eviction (the contract and the safety argument are in eviction.hpp).
#include "server/features/eviction.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <functional>
#include <limits>

#include "server/core/atomicity.hpp"
#include "server/features/db.hpp"
#include "server/util/clock.hpp"
#include "server/util/memory.hpp"
#include "structures/reclaim/epoch.hpp"

namespace kvlab::server {
// MEMORY USAGE's estimate of one key (server/commands/introspection.cpp).
std::uint64_t memory_usage_estimate(std::string_view key, const Value& v, std::int64_t samples);
namespace {

struct PolicyName {
  std::string_view name;
  EvictPolicy policy;
};
constexpr PolicyName kPolicies[] = {
    {"noeviction", EvictPolicy::kNoEviction},
    {"volatile-lru", EvictPolicy::kVolatileLru},
    {"volatile-lfu", EvictPolicy::kVolatileLfu},
    {"volatile-random", EvictPolicy::kVolatileRandom},
    {"volatile-ttl", EvictPolicy::kVolatileTtl},
    {"allkeys-lru", EvictPolicy::kAllkeysLru},
    {"allkeys-lfu", EvictPolicy::kAllkeysLfu},
    {"allkeys-random", EvictPolicy::kAllkeysRandom},
    {"allkeys-sieve", EvictPolicy::kAllkeysSieve},
    {"allkeys-s3fifo", EvictPolicy::kAllkeysS3Fifo},
};

std::uint64_t hash_key(std::string_view key) {
  return std::hash<std::string_view>{}(key);
}

// What deleting a key with this value frees, roughly: the name, the Object and the entry.
std::size_t estimate_bytes(std::string_view key, const Value& v) {
  std::size_t obj = 256;  // a container: its payload is not walked here
  if (v.obj && v.obj->type() == ObjectType::kString) obj = v.obj->footprint();
  return key.size() + obj + 64;
}

// A ghost hash's slot. The hash's low bit is forced to 1 (0 marks an empty slot), so it is shifted
// out: indexing by the low bits left every even slot unused (half the table).
std::size_t ghost_slot(std::uint64_t h, std::size_t mask) {
  return static_cast<std::size_t>(h >> 1) & mask;
}

std::uint32_t lfu_minutes(std::int64_t now_ms) {
  return static_cast<std::uint32_t>(now_ms / 60000) & 0xffffu;
}

}  // namespace

std::optional<EvictPolicy> parse_evict_policy(std::string_view name) {
  for (const auto& p : kPolicies)
    if (p.name == name) return p.policy;
  return std::nullopt;
}

std::string_view evict_policy_name(EvictPolicy p) {
  for (const auto& q : kPolicies)
    if (q.policy == p) return q.name;
  return "noeviction";
}

// ---- KeyIndex ----

namespace {
std::uint64_t index_hash(std::string_view key) {
  return hash_key(key) | 1;
}
}  // namespace

std::size_t KeyIndex::Shard::find(std::uint64_t h) const {
  if (table.empty()) return 0;
  const std::size_t mask = table.size() - 1;
  for (std::size_t i = (h >> 8) & mask;; i = (i + 1) & mask) {
    if (table[i].hash == h) return i;
    if (table[i].hash == 0) return table.size();
  }
}

void KeyIndex::Shard::erase_at(std::size_t i) {
  const std::size_t mask = table.size() - 1;
  for (std::size_t j = (i + 1) & mask; table[j].hash != 0; j = (j + 1) & mask) {
    const std::size_t home = (table[j].hash >> 8) & mask;
    // Move j into the hole i when its home does not lie cyclically in (i, j].
    if (((j - home) & mask) >= ((j - i) & mask)) {
      table[i] = table[j];
      i = j;
    }
  }
  table[i] = Entry{};
}

void KeyIndex::Shard::grow() {
  std::vector<Entry> old = std::move(table);
  table.assign(old.empty() ? 64 : 2 * old.size(), Entry{});
  const std::size_t mask = table.size() - 1;
  for (const Entry& e : old) {
    if (e.hash == 0) continue;
    std::size_t i = (e.hash >> 8) & mask;
    while (table[i].hash != 0) i = (i + 1) & mask;
    table[i] = e;
  }
}

void KeyIndex::add(std::string_view key) {
  const std::uint64_t h = index_hash(key);
  Shard& s = shards_[h % kShards];
  std::lock_guard<std::mutex> lock(s.mu);
  if (2 * (s.names.size() + 1) > s.table.size()) s.grow();  // load factor <= 1/2
  if (s.find(h) != s.table.size()) return;
  const std::size_t mask = s.table.size() - 1;
  std::size_t i = (h >> 8) & mask;
  while (s.table[i].hash != 0) i = (i + 1) & mask;
  s.table[i] = Entry{h, static_cast<std::uint32_t>(s.names.size())};
  s.names.emplace_back(key);
  s.hashes.push_back(h);
  size_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
}

void KeyIndex::remove(std::string_view key) {
  const std::uint64_t h = index_hash(key);
  Shard& s = shards_[h % kShards];
  std::lock_guard<std::mutex> lock(s.mu);
  const std::size_t e = s.find(h);
  if (e == s.table.size()) return;
  const std::uint32_t slot = s.table[e].slot;
  s.erase_at(e);
  const std::size_t last = s.names.size() - 1;
  if (slot != last) {  // the last name moves into the hole; its entry follows
    s.names[slot] = std::move(s.names[last]);
    s.hashes[slot] = s.hashes[last];
    s.table[s.find(s.hashes[slot])].slot = slot;
  }
  s.names.pop_back();
  s.hashes.pop_back();
  size_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: a statistic
}

void KeyIndex::sample(std::mt19937_64& rng, std::size_t n, std::vector<std::string>* out) {
  if (size() == 0) return;
  // The shards partition the keys by hash, so the keys of one random shard are a uniform sample
  // of all keys: n picks from one shard cost one lock (an empty shard costs another try).
  for (std::size_t tries = 0; tries < 2 * kShards; ++tries) {
    Shard& s = shards_[rng() % kShards];
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.names.empty()) continue;
    for (std::size_t i = 0; i < n; ++i) out->push_back(s.names[rng() % s.names.size()]);
    return;
  }
}

void KeyIndex::clear() {
  for (Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    size_.fetch_sub(s.names.size(), std::memory_order_relaxed);  // relaxed: a statistic
    s.table.clear();
    s.names.clear();
    s.hashes.clear();
  }
}

// ---- Eviction: configuration ----

Eviction::Eviction(unsigned workers, std::unique_ptr<MessageQueue> small,
                   std::unique_ptr<MessageQueue> main)
    : workers_(std::make_unique<WorkerState[]>(workers == 0 ? 1 : workers)),
      num_workers_(workers == 0 ? 1 : workers),
      small_(std::move(small)),
      main_(std::move(main)) {
  for (unsigned i = 0; i < num_workers_; ++i) workers_[i].rng.seed(0x6b766c6162ull + i);
  // Redis creates its shared integers at startup: their clocks start now.
  const auto now =
      static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  shared_lru_ = std::make_unique<std::atomic<std::uint32_t>[]>(kSharedIntegers);
  for (int i = 0; i < kSharedIntegers; ++i) shared_lru_[i].store(now, std::memory_order_relaxed);
}

Eviction::~Eviction() {
  {
    std::lock_guard<std::mutex> lock(sieve_mu_);
    while (sieve_head_ != nullptr) sieve_unlink(sieve_head_);
  }
  std::lock_guard<std::mutex> lock(s3_mu_);
  s3_clear();
  delete ghost_.load(std::memory_order_acquire);  // no worker runs any more
}

Eviction::Ghost::Ghost(std::size_t n)
    : mask(n - 1), slots(std::make_unique<std::atomic<std::uint64_t>[]>(n)) {
  for (std::size_t i = 0; i < n; ++i) slots[i].store(0, std::memory_order_relaxed);  // unpublished
}

std::size_t Eviction::ghost_slots_for(std::int64_t keys) {
  const auto k = static_cast<std::size_t>(std::max<std::int64_t>(keys, 1));
  return std::clamp(std::bit_ceil(k), kGhostMin, kGhostMax);
}

std::size_t Eviction::ghost_slots() const {
  reclaim::Guard g;
  const Ghost* gt = ghost_.load(std::memory_order_acquire);
  return gt == nullptr ? 0 : gt->mask + 1;
}

void Eviction::resize_ghost() {
  Ghost* old = ghost_.load(std::memory_order_relaxed);  // relaxed: written only under s3_mu_
  if (old == nullptr) return;
  // relaxed: sizing hints.
  const std::size_t want = ghost_slots_for(small_n_.load(std::memory_order_relaxed) +
                                           main_n_.load(std::memory_order_relaxed));
  const std::size_t have = old->mask + 1;
  if (want <= have && 4 * want > have) return;  // grown past it, or fallen below a quarter
  auto* next = new Ghost(want);
  for (std::size_t i = 0; i < have; ++i) {  // rehash: a later entry overwrites a colliding one
    const std::uint64_t h = old->slots[i].load(std::memory_order_relaxed);
    if (h != 0) next->slots[ghost_slot(h, next->mask)].store(h, std::memory_order_relaxed);
  }
  ghost_.store(next, std::memory_order_release);  // release: next's slots before its pointer
  reclaim::retire(old);                           // freed once no reader's Guard can still hold it
}

std::string_view Eviction::queue_name() const {
  return small_ ? small_->traits().name : std::string_view("none");
}

bool Eviction::set_maxmemory(std::uint64_t bytes) {
  // Before the limit applies: used_memory is counted. Started at run time, the keyspace's
  // estimate is added by the first make_room_slow() (it has the keyspace; memory.hpp).
  const bool at_run_time = bytes != 0 && memory::start_counting() && started_;
  if (at_run_time)
    baseline_.store(true, std::memory_order_release);  // release: pairs with make_room_slow()
  maxmemory_.store(bytes, std::memory_order_relaxed);  // relaxed: read per command as a limit
  reconfigure();
  return at_run_time;
}

void Eviction::set_policy(EvictPolicy p) {
  policy_.store(p, std::memory_order_relaxed);  // relaxed: see maxmemory_
  reconfigure();
}

void Eviction::reconfigure() {
  std::lock_guard<std::mutex> lock(config_mu_);
  const EvictPolicy p = policy();
  const bool track = maxmemory() != 0 && p != EvictPolicy::kNoEviction;
  // The word is kept whatever maxmemory is (eviction.hpp): the clock unless the policy says
  // otherwise, as Redis.
  Kind k = Kind::kLru;
  if (p == EvictPolicy::kAllkeysLfu || p == EvictPolicy::kVolatileLfu) k = Kind::kLfu;
  if (p == EvictPolicy::kAllkeysSieve || p == EvictPolicy::kAllkeysS3Fifo) k = Kind::kFreq;
  // Drop the structures of the previous setting; the next eviction refills the current ones from
  // the keyspace (a hook racing with this may leave a stale name: harmless, safety 5).
  all_.clear();
  volatile_.clear();
  {
    std::lock_guard<std::mutex> l(sieve_mu_);
    while (sieve_head_ != nullptr) sieve_unlink(sieve_head_);
  }
  {
    std::lock_guard<std::mutex> l(s3_mu_);
    s3_clear();
    // The smallest ghost; evict_s3fifo() sizes it from the key counts (eviction.hpp).
    if (p == EvictPolicy::kAllkeysS3Fifo && ghost_.load(std::memory_order_relaxed) == nullptr)
      ghost_.store(new Ghost(kGhostMin), std::memory_order_release);  // release: as resize_ghost
  }
  for (unsigned i = 0; i < num_workers_; ++i) workers_[i].pool.clear();  // REQUIRES-free: hint
  // relaxed stores: the hooks read these as hints; a worker that sees the new policy a little
  // late registers a key in the old structure (dropped) or not at all (rebuild covers it).
  kind_.store(k, std::memory_order_relaxed);
  // Redis shares integers unless maxmemory is set with an LRU or LFU policy.
  const bool lru_or_lfu = p == EvictPolicy::kAllkeysLru || p == EvictPolicy::kVolatileLru ||
                          p == EvictPolicy::kAllkeysLfu || p == EvictPolicy::kVolatileLfu;
  shared_ints_.store(maxmemory() == 0 || !lru_or_lfu, std::memory_order_relaxed);
  tracking_.store(track, std::memory_order_relaxed);
  rebuild_.store(track, std::memory_order_relaxed);
}

// ---- hooks ----

void Eviction::insert_slow(std::string_view key) {
  switch (policy()) {
    case EvictPolicy::kNoEviction:
      return;
    case EvictPolicy::kAllkeysSieve: {
      std::lock_guard<std::mutex> lock(sieve_mu_);
      if (sieve_map_.count(key) != 0) return;
      auto* n = new SieveNode{std::string(key)};
      n->next = sieve_head_;
      if (sieve_head_ != nullptr) sieve_head_->prev = n;
      sieve_head_ = n;
      if (sieve_tail_ == nullptr) sieve_tail_ = n;
      sieve_map_.emplace(n->key, n);
      return;
    }
    case EvictPolicy::kAllkeysS3Fifo: {
      if (!small_) return;
      const std::uint64_t h = hash_key(key) | 1;  // 0 marks an empty ghost slot
      bool ghost = false;
      {
        reclaim::Guard g;  // the table may be replaced meanwhile; retired, not freed under us
        const Ghost* gt = ghost_.load(std::memory_order_acquire);  // acquire: see Ghost
        if (gt == nullptr) return;
        // relaxed: the ghost is a hint; a racing overwrite only changes which queue a key enters.
        ghost = gt->slots[ghost_slot(h, gt->mask)].load(std::memory_order_relaxed) == h;
      }
      auto* e = new QueueEntry{std::string(key)};
      MessageQueue& q = ghost ? *main_ : *small_;
      if (!q.push(e)) {  // bounded backends are refused at start-up; be safe anyway
        delete e;
        return;
      }
      (ghost ? main_n_ : small_n_).fetch_add(1, std::memory_order_relaxed);  // a sizing hint
      return;
    }
    default:
      all_.add(key);
      return;
  }
}

void Eviction::erase_slow(std::string_view key) {
  const EvictPolicy p = policy();
  if (p == EvictPolicy::kAllkeysSieve) {
    std::lock_guard<std::mutex> lock(sieve_mu_);
    auto it = sieve_map_.find(key);
    if (it != sieve_map_.end()) sieve_unlink(it->second);
    return;
  }
  if (p == EvictPolicy::kAllkeysS3Fifo) return;  // queue entries of gone keys drop when popped
  all_.remove(key);
  if (volatile_.size() != 0) volatile_.remove(key);
}

void Eviction::on_clear() {
  if (!tracking()) return;
  all_.clear();
  volatile_.clear();
  std::lock_guard<std::mutex> lock(sieve_mu_);
  while (sieve_head_ != nullptr) sieve_unlink(sieve_head_);
}

void Eviction::sieve_unlink(SieveNode* n) {
  if (sieve_hand_ == n) sieve_hand_ = n->prev;
  if (n->prev != nullptr)
    n->prev->next = n->next;
  else
    sieve_head_ = n->next;
  if (n->next != nullptr)
    n->next->prev = n->prev;
  else
    sieve_tail_ = n->prev;
  sieve_map_.erase(n->key);
  delete n;
}

void Eviction::s3_clear() {
  if (!small_) return;
  while (void* p = small_->try_pop()) delete static_cast<QueueEntry*>(p);
  while (void* p = main_->try_pop()) delete static_cast<QueueEntry*>(p);
  small_n_.store(0, std::memory_order_relaxed);  // relaxed: a sizing hint
  main_n_.store(0, std::memory_order_relaxed);
}

std::uint32_t Eviction::lfu_decayed(std::uint32_t word, std::int64_t now_ms) const {
  const std::uint32_t ldt = word >> 8, counter = word & 0xffu;
  const std::uint32_t now = lfu_minutes(now_ms);
  const std::uint32_t elapsed = now >= ldt ? now - ldt : 65535 - ldt + now;
  const int decay = lfu_decay_time_.load(std::memory_order_relaxed);  // relaxed: a setting
  const std::uint32_t periods = decay > 0 ? elapsed / static_cast<std::uint32_t>(decay) : 0;
  return periods > counter ? 0 : counter - periods;
}

void Eviction::touch_lfu(const Object& o, std::int64_t now_ms) const {
  const std::uint32_t word = o.access();
  std::uint32_t counter = lfu_decayed(word, now_ms);
  if (counter < 255) {
    thread_local std::minstd_rand coin{0x4c4655u};
    const double r = static_cast<double>(coin() - coin.min()) / (coin.max() - coin.min());
    const double base = counter > kLfuInit ? counter - kLfuInit : 0;
    const int factor = lfu_log_factor_.load(std::memory_order_relaxed);  // relaxed: a setting
    if (r < 1.0 / (base * factor + 1)) ++counter;
  }
  const std::uint32_t next = (lfu_minutes(now_ms) << 8) | counter;
  if (next != word) o.set_access(next);
}

void Eviction::end_iteration(unsigned w, std::int64_t now_ms) {
  WorkerState& ws = workers_[w];
  ws.pending_at = (ws.pending_at + 1) % WorkerState::kPendingIterations;
  ws.pending -= ws.pending_ring[ws.pending_at];
  ws.pending_ring[ws.pending_at] = 0;
  tick(now_ms);
}

std::uint32_t Eviction::initial_word(std::int64_t now_ms) const {
  switch (kind_.load(std::memory_order_relaxed)) {  // relaxed: a hint
    case Kind::kLru:
      return static_cast<std::uint32_t>(now_ms);
    case Kind::kLfu:
      return (lfu_minutes(now_ms) << 8) | kLfuInit;
    case Kind::kFreq:
      return 0;
  }
  return 0;
}

std::int64_t Eviction::clock_ms() {
  return t_now_ms != 0 ? t_now_ms : wall_ms();  // a thread that never ticked: the wall clock
}

void Eviction::restore_access(const Object& o, std::int64_t idle_s, int freq,
                              std::int64_t now_ms) const {
  switch (kind_.load(std::memory_order_relaxed)) {  // relaxed: a hint
    case Kind::kLfu:
      if (freq >= 0) o.set_access((lfu_minutes(now_ms) << 8) | static_cast<std::uint32_t>(freq));
      return;
    case Kind::kLru:
      if (idle_s >= 0) {
        // The word spans 2^32 ms (49.7 days); a longer idle time is clamped to that span.
        constexpr std::int64_t kMaxIdleMs = std::numeric_limits<std::uint32_t>::max();
        const std::int64_t idle_ms = idle_s > kMaxIdleMs / 1000 ? kMaxIdleMs : idle_s * 1000;
        o.set_access(static_cast<std::uint32_t>(now_ms) - static_cast<std::uint32_t>(idle_ms));
      }
      return;
    case Kind::kFreq:
      return;
  }
}

std::uint64_t Eviction::evicted_keys() const {
  std::uint64_t n = 0;
  for (unsigned i = 0; i < num_workers_; ++i)
    n += workers_[i].evicted.load(std::memory_order_relaxed);  // relaxed: a statistic
  return n;
}

std::size_t Eviction::tracked_keys() const {
  switch (policy()) {
    case EvictPolicy::kAllkeysSieve: {
      std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(sieve_mu_));
      return sieve_map_.size();
    }
    case EvictPolicy::kAllkeysS3Fifo:
      return static_cast<std::size_t>(std::max<std::int64_t>(
          0, small_n_.load(std::memory_order_relaxed) + main_n_.load(std::memory_order_relaxed)));
    default:
      return is_volatile(policy()) ? volatile_.size() : all_.size();
  }
}

// ---- eviction ----

void Eviction::rebuild(Db& db) {
  const bool vol = is_volatile(policy());
  db.for_each([&](std::string_view key, const Value& v) {
    insert_slow(key);
    if (vol && v.expire_ms != 0) volatile_.add(key);
  });
}

bool Eviction::make_room_slow(Db& db, Atomicity& gate, unsigned w, std::int64_t now_ms) {
  bool want = true;
  // acquire: pairs with set_maxmemory()'s release; one worker adds the baseline, once.
  if (baseline_.load(std::memory_order_relaxed) &&
      baseline_.compare_exchange_strong(want, false, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
    std::uint64_t sum = 0;
    db.for_each(
        [&](std::string_view key, const Value& v) { sum += memory_usage_estimate(key, v, 5); });
    memory::add_baseline(static_cast<std::int64_t>(sum));
    baseline_left_.store(static_cast<std::int64_t>(sum), std::memory_order_relaxed);
  }
  WorkerState& ws = workers_[w];
  const auto max = static_cast<std::int64_t>(maxmemory());
  const auto used = static_cast<std::int64_t>(memory::used_bytes());
  if (used - ws.pending <= max) return true;
  if (!tracking()) return false;  // noeviction
  bool expected = true;
  // acq_rel: the worker that wins fills the indexes; the others go on (a missing name only delays
  // that key's eviction, safety 5).
  if (rebuild_.load(std::memory_order_relaxed) &&
      rebuild_.compare_exchange_strong(expected, false, std::memory_order_acq_rel))
    rebuild(db);
  const std::int64_t excess = used - ws.pending - max;
  std::int64_t freed = 0;
  int n = 0;
  while (freed < excess && n < kMaxPerCommand) {
    std::size_t bytes = 0;
    if (!evict_one(db, gate, w, now_ms, &bytes)) break;
    freed += static_cast<std::int64_t>(bytes);
    ++n;
  }
  if (n == 0 && ws.pending == 0 && !is_volatile(policy())) {
    // Nothing left to evict under an allkeys policy, yet above the limit: what remains of a
    // run-time baseline is the estimate's error (memory.hpp), not data; drop it rather than refuse
    // every write. relaxed: baseline_left_ is a correction with no data published through it.
    const std::int64_t left = baseline_left_.exchange(0, std::memory_order_relaxed);
    if (left > 0) {
      memory::add_baseline(-std::min(left, excess));
      return true;
    }
  }
  ws.pending += freed;
  ws.pending_ring[ws.pending_at] += freed;
  // relaxed: a statistic with one writer (this worker).
  ws.evicted.store(ws.evicted.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  return n > 0 || ws.pending > 0;
}

bool Eviction::evict_one(Db& db, Atomicity& gate, unsigned w, std::int64_t now_ms,
                         std::size_t* bytes) {
  switch (policy()) {
    case EvictPolicy::kNoEviction:
      return false;
    case EvictPolicy::kAllkeysSieve:
      return evict_sieve(db, gate, w, bytes);
    case EvictPolicy::kAllkeysS3Fifo:
      return evict_s3fifo(db, gate, w, bytes);
    default:
      return evict_sampled(db, gate, workers_[w], w, now_ms, bytes);
  }
}

bool Eviction::delete_key(Db& db, Atomicity& gate, unsigned w, const std::string& key,
                          const Object* obj, bool need_ttl, std::size_t* bytes) {
  bool done = false;
  const int stripe = gate.begin_single(w, key);  // safety 4
  db.update(key, [&](const Value* v) {
    // Safety 2: only the value the policy judged, and (volatile-*) only while it has a TTL.
    done =
        v != nullptr && (obj == nullptr || v->obj.get() == obj) && (!need_ttl || v->expire_ms != 0);
    if (done) *bytes = estimate_bytes(key, *v);
    return done ? Update<Value>::erase() : Update<Value>::keep();
  });
  gate.end_single(w, stripe);
  if (done) notify_keyspace_event(kNotifyEvicted, "evicted", key);
  return done;
}

bool Eviction::evict_sampled(Db& db, Atomicity& gate, WorkerState& ws, unsigned w,
                             std::int64_t now_ms, std::size_t* bytes) {
  const EvictPolicy p = policy();
  const bool vol = is_volatile(p);
  KeyIndex& index = vol ? volatile_ : all_;
  const auto samples =
      static_cast<std::size_t>(std::max(1, samples_.load(std::memory_order_relaxed)));
  const bool random = p == EvictPolicy::kAllkeysRandom || p == EvictPolicy::kVolatileRandom;
  for (int round = 0; round < 16; ++round) {
    if (index.size() == 0) return false;
    ws.sample.clear();
    index.sample(ws.rng, random ? 1 : samples, &ws.sample);
    // Overlap the samples' cache misses (bucket, entry, Object) where the backend can.
    std::string_view views[64];
    const std::size_t nv = std::min<std::size_t>(ws.sample.size(), 64);
    for (std::size_t i = 0; i < nv; ++i) views[i] = ws.sample[i];
    db.prefetch(std::span<const std::string_view>(views, nv),
                [](const Value& v) { __builtin_prefetch(v.obj.get(), 0, 3); });
    for (const std::string& key : ws.sample) {
      bool present = false, has_ttl = false;
      std::uint64_t idle = 0;
      const Object* obj = nullptr;
      db.find(key, [&](const Value& v) {
        present = true;
        has_ttl = v.expire_ms != 0;
        obj = v.obj.get();
        if (p == EvictPolicy::kVolatileTtl) {
          idle =
              std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(v.expire_ms);
        } else if (p == EvictPolicy::kAllkeysLfu || p == EvictPolicy::kVolatileLfu) {
          idle = 255 - lfu_decayed(v.obj->access(), now_ms);
        } else if (!random) {
          idle = static_cast<std::uint32_t>(static_cast<std::uint32_t>(now_ms) - v.obj->access());
        }
      });
      if (!present || (vol && !has_ttl)) {  // a stale name (safety 5)
        index.remove(key);
        continue;
      }
      if (random) {
        if (delete_key(db, gate, w, key, obj, vol, bytes)) return true;
        continue;
      }
      // Redis's evictionPoolPopulate: keep the kPoolSize idlest, ascending.
      auto& pool = ws.pool;
      bool dup = false;
      for (auto& e : pool) {
        if (e.key == key) {
          e.idle = idle;
          e.obj = obj;
          dup = true;
        }
      }
      if (dup) continue;
      if (pool.size() >= static_cast<std::size_t>(kPoolSize)) {
        if (idle <= pool.front().idle) continue;
        pool.erase(pool.begin());
      }
      auto at = std::lower_bound(pool.begin(), pool.end(), idle,
                                 [](const PoolEntry& e, std::uint64_t i) { return e.idle < i; });
      pool.insert(at, PoolEntry{idle, key, obj});
    }
    while (!ws.pool.empty()) {
      PoolEntry best = std::move(ws.pool.back());
      ws.pool.pop_back();
      if (delete_key(db, gate, w, best.key, best.obj, vol, bytes)) return true;  // the
      // deletion's on_erase hook removes the name from the indexes
    }
  }
  return false;
}

bool Eviction::evict_sieve(Db& db, Atomicity& gate, unsigned w, std::size_t* bytes) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string victim;
    const Object* obj = nullptr;
    {
      std::lock_guard<std::mutex> lock(sieve_mu_);
      // The hand passes each node at most twice (once clearing its bit, once evicting).
      std::size_t budget = 2 * sieve_map_.size() + 2;
      while (victim.empty() && budget-- > 0) {
        if (sieve_hand_ == nullptr) sieve_hand_ = sieve_tail_;
        SieveNode* n = sieve_hand_;
        if (n == nullptr) return false;  // nothing tracked
        bool present = false, visited = false;
        db.find(n->key, [&](const Value& v) {
          present = true;
          obj = v.obj.get();
          visited = v.obj->access() != 0;
          if (visited) v.obj->set_access(0);
        });
        if (!present) {
          sieve_unlink(n);  // moves the hand to n->prev
          continue;
        }
        if (visited) {
          sieve_hand_ = n->prev;
          continue;
        }
        victim = n->key;
        sieve_unlink(n);
      }
    }
    if (victim.empty()) return false;
    if (delete_key(db, gate, w, victim, obj, false, bytes)) return true;
    insert_slow(victim);  // overwritten since: it stays, as a new entry
  }
  return false;
}

bool Eviction::evict_s3fifo(Db& db, Atomicity& gate, unsigned w, std::size_t* bytes) {
  if (!small_ || ghost_.load(std::memory_order_relaxed) == nullptr) return false;  // a hint
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::unique_ptr<QueueEntry> victim;
    const Object* obj = nullptr;
    bool victim_small = false;
    {
      // The choice runs under s3_mu_; the deletion after it, without it, so that no worker waits
      // for this mutex while it holds or waits for the atomicity gate.
      std::lock_guard<std::mutex> lock(s3_mu_);
      if (attempt == 0) resize_ghost();  // the ghost follows the key counts (eviction.hpp)
      // relaxed loads of the sizes: hints for the 10 % split.
      const std::int64_t total =
          small_n_.load(std::memory_order_relaxed) + main_n_.load(std::memory_order_relaxed);
      for (std::int64_t budget = 4 * total + 16; !victim && budget > 0; --budget) {
        const std::int64_t s = small_n_.load(std::memory_order_relaxed);
        const std::int64_t m = main_n_.load(std::memory_order_relaxed);
        bool from_small = s > 0 && (10 * s >= s + m || m <= 0);
        void* p = (from_small ? small_ : main_)->try_pop();
        if (p == nullptr) {
          from_small = !from_small;
          p = (from_small ? small_ : main_)->try_pop();
          if (p == nullptr) return false;
        }
        (from_small ? small_n_ : main_n_).fetch_sub(1, std::memory_order_relaxed);
        std::unique_ptr<QueueEntry> e(static_cast<QueueEntry*>(p));
        bool present = false;
        std::uint32_t freq = 0;
        db.find(e->key, [&](const Value& v) {
          present = true;
          obj = v.obj.get();
          freq = v.obj->access();
          if (from_small && freq > 1) v.obj->set_access(0);          // promoted: counts anew
          if (!from_small && freq > 0) v.obj->set_access(freq - 1);  // reinserted
        });
        if (!present) continue;  // deleted meanwhile (safety 5)
        if (from_small ? freq > 1 : freq > 0) {
          if (main_->push(e.get())) {
            e.release();
            main_n_.fetch_add(1, std::memory_order_relaxed);
          }
          continue;
        }
        victim = std::move(e);
        victim_small = from_small;
      }
    }
    if (!victim) return false;
    if (delete_key(db, gate, w, victim->key, obj, false, bytes)) {
      if (victim_small) {
        const std::uint64_t h = hash_key(victim->key) | 1;
        reclaim::Guard g;
        Ghost* gt = ghost_.load(std::memory_order_acquire);           // acquire: see Ghost
        gt->slots[ghost_slot(h, gt->mask)].store(h, std::memory_order_relaxed);  // relaxed: a hint
      }
      return true;
    }
    // Overwritten since it was judged: it stays, at the main queue's tail.
    if (main_->push(victim.get())) {
      victim.release();
      main_n_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return false;
}

}  // namespace kvlab::server

// maxmemory and eviction: Redis's eight maxmemory-policy values, plus SIEVE [zhang2024sieve] and
// S3-FIFO [yang2023s3fifo] as research options, on a keyspace that every worker changes at once.
//
// What a command sees (as Redis 7.0, server.c processCommand / evict.c performEvictions): before
// a top-level command runs, a worker whose used_memory (server/util/memory.hpp) is above maxmemory
// evicts keys until its estimate of the bytes freed covers the excess (at most kMaxPerCommand
// keys); CONFIG SET maxmemory does the same at once (Redis's updateMaxmemory). When nothing can
// be evicted (noeviction, or no candidate: volatile-* with no key that has a TTL, an empty
// keyspace), a command flagged kDenyOom is refused with
// `-OOM command not allowed when used memory > 'maxmemory'.`; reads and DEL still run. A script
// is refused by its flags, or at its first deny-oom call (oom_before_command(), scripting.hpp).
//
// Policies and the per-Object access word (Object::access(), 32 bits in the Object header):
//   *-lru     the access word is the wall clock in ms (mod 2^32) of the last read or the
//             creation; idle = now - word. Redis keeps 24 bits of seconds; ms make a short trace
//             meaningful and wrap after 49 days (idle is computed modulo 2^32, as Redis does).
//   *-lfu     Redis's layout and arithmetic (evict.c): 16 bits of minutes of the last decrement
//             time, 8 bits of logarithmic counter (LFU_INIT_VAL 5); a read decays the counter by
//             one per lfu-decay-time minutes elapsed, then increments it with probability
//             1 / ((counter - 5) * lfu-log-factor + 1); idle = 255 - decayed counter.
//   *-random  no metadata.
//   volatile-ttl  idle = - expire time (soonest expiry first).
//   allkeys-sieve / allkeys-s3fifo  the word is a 2-bit saturating read count.
// A read writes the word only when its value changes (the same ms, a counter increment that the
// coin refused, a saturated count: no store), so a hot key's header line is not written on every
// read.
//
// When the word is kept (as Redis 7.0, db.c lookupKey / object.c): always, whatever maxmemory is —
// the LRU clock under every policy that is not LFU (noeviction, the default, included: Redis sets
// the clock on every lookup unless the policy is LFU, so OBJECT IDLETIME works without maxmemory),
// the LFU counter under *-lfu, the read count under SIEVE/S3-FIFO. Reads touch (read_live), and so
// do writes that find the key (Db::update touches the old value, as lookupKeyWrite does); new
// Objects start with the current clock (LFU: LFU_INIT_VAL), and a SET-family overwrite under LFU
// carries the old counter to the new value (Db::overwrite, as Redis's dbSetValue). TYPE, EXISTS,
// TTL/PTTL/EXPIRETIME, OBJECT and MEMORY USAGE do not touch (Redis's LOOKUP_NOTOUCH).
// OBJECT IDLETIME answers (now - word) / 1000 under the LRU kind; OBJECT FREQ the decayed counter
// under LFU. RESTORE IDLETIME/FREQ set the word as Redis's objectSetLRUOrLFU (an idle time beyond
// the 2^32 ms the word spans is clamped to it).
//
// The clock: tick(now) runs before each batch of commands (Worker::on_event) and at the end of
// each loop iteration; it keeps the worker's now in a thread-local (what a write's touch uses) and
// the initial word of new Objects in g_initial_access (stored only when it changes).
//
// Sampling (Redis's approximation). Keys are sampled from a KeyIndex (all keys, or the keys that
// have a TTL for volatile-*): a sharded set of key names with O(1) random sampling, kept beside
// the backend because the keyspace interface has no random access. maxmemory-samples keys are
// sampled; each joins the worker's eviction pool (Redis's EVPOOL_SIZE = 16 best candidates, kept
// across evictions, sorted by idle) when it is idler than the pool's least idle entry; the idlest
// pool entry that still exists is evicted. Redis has one pool; kvlab has one per worker (each
// worker evicts for its own commands), so a pool may hold a key another worker already evicted —
// the deletion then finds it gone and takes the next.
//
// SIEVE (allkeys-sieve): one FIFO list of keys, new keys at the head, a hand that walks from the
// tail toward the head clearing the visited bit (read count > 0) of the keys it passes and evicts
// the first unvisited one; survivors keep their place. List and hand are under one mutex (inserts
// and evictions of every worker serialize on it: a research option, measured as such).
// S3-FIFO (allkeys-s3fifo): a small FIFO (10 % of the tracked keys) and a main FIFO, both queues on
// a library queue backend (`--eviction-queue NAME`, so the queue's cost is measurable), plus a
// ghost of recently evicted key hashes. New keys enter the small queue (the main one when their
// hash is in the ghost); evicting from the small queue moves a key read more than once to the
// main queue and evicts the others into the ghost; the main queue reinserts keys read since
// (decrementing their count) and evicts the others. Inserts push lock-free (any worker); the
// evicting side (pops, reinsertions) runs under one mutex, so single-consumer backends fit too.
// The ghost is a direct-mapped table of 64-bit key hashes (a later hash overwrites an older one: a
// FIFO approximated by collisions, as fixed-size ghost filters do), sized like the paper's ghost
// queue, which holds as many entries as the main queue: the next power of two at or above the
// tracked key count (small + main), between 2^10 and 2^22 slots (8 KiB .. 32 MiB, counted in
// used_memory). The evicting side resizes it (under s3_mu_, before an eviction) when the count
// has grown past it or fallen below a quarter of it — so after CONFIG SET maxmemory, whose
// rebuild refills the counts, it follows the new cache size at the next eviction; entries are
// rehashed into the new table (full hashes are kept for that). Readers (inserts on any worker,
// and an evicting worker recording its victim) load the table pointer with acquire inside a
// reclaim::Guard; a replaced table is retired to the epoch reclaimer, so it is freed only after
// every such reader has left. A victim recorded into a table being replaced may be lost: a hint.
//
// Safety under the concurrent keyspace (the argument; the eviction test checks it under TSan):
// 1. An eviction is a deletion through the keyspace's own atomic update(key, fn), the operation
//    that DEL and the expiry sweep use: the backend decides it atomically against every other
//    write of that key, so a key is either fully present (with the value of some write) or gone,
//    never half-removed, and no write to it is lost — a SET that lands before the eviction is
//    then evicted with the key (a DEL after it), one that lands after it creates the key anew.
// 2. The deletion is conditional: fn erases only when the stored value is still the one the
//    policy judged (the same Object, compared by address while the backend protects it) and, for
//    volatile-*, still has a TTL. A key overwritten since it was sampled is left alone.
// 3. No use after free: eviction never dereferences an Object outside a find()/update() callback
//    (where the backend protects it), and the indexes hold key names (copies), never pointers to
//    keyspace memory; pool entries keep an Object address only to compare it, never to read it.
//    The evicted value is freed by the backend's reclamation (epochs, hazard pointers, locks)
//    exactly as a DEL's is, after every reader that could hold it has finished.
// 4. Atomicity: each eviction takes the key's gate like a single-key command
//    (Atomicity::begin_single), so a transaction or multi-key command never sees a key vanish
//    halfway through it; evictions run only between top-level commands, or in a CONFIG SET run
//    outside EXEC (it names no key), when the worker holds no lock of the gate.
// 5. The indexes are hints: a key missing from one is not evicted (inserts register it before
//    the command returns), a name whose key is gone is dropped when sampled; no index decides
//    presence — the keyspace does.
//
// Memory bound: evictions delete at once but free when the backend reclaims (two epochs later,
// i.e. a few quiescent points of every worker); a worker counts what it evicted in its last four
// loop iterations against the excess, so it does not evict again for bytes already on their way
// out (without this, each iteration evicted the same excess again and the dataset shrank to half
// of what fits). A worker that finds nothing to evict while its own evictions are still on their
// way out lets the command run, as Redis does while lazy frees are pending. used_memory
// then stays within maxmemory plus: the bytes written by one command after its check (as in
// Redis), the per-thread staleness of the counter (memory.hpp), the pool block caches and what the
// reclamation lag holds. tests/server/maxmemory_test.cpp measures the margin.
//
// Thread safety: configuration setters from any thread (atomics); hooks (on_insert, on_erase,
// on_expire_set, touch) from any worker; make_room(w) and end_iteration(w) only by worker w.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/util/message_queue.hpp"
#include "server/data/object.hpp"

namespace kvlab::server {

class Db;
class Atomicity;

enum class EvictPolicy : std::uint8_t {
  kNoEviction,
  kVolatileLru,
  kVolatileLfu,
  kVolatileRandom,
  kVolatileTtl,
  kAllkeysLru,
  kAllkeysLfu,
  kAllkeysRandom,
  kAllkeysSieve,
  kAllkeysS3Fifo,
};
std::optional<EvictPolicy> parse_evict_policy(std::string_view name);
std::string_view evict_policy_name(EvictPolicy p);
// Redis's memory value syntax (digits, then b, k, kb, m, mb, g or gb); commands/config.cpp.
bool parse_memory_units(std::string_view s, std::uint64_t* out);

// A set of key names with random sampling: kShards shards (by hash), each a vector of names
// (sampling) and an open-addressed table from the name's 64-bit hash to its slot in the vector
// (membership; O(1) removal by moving the last name into the hole). Two names with one 64-bit hash
// would share an entry: one of them is then not tracked, or removed for the other — harmless,
// because the index is a hint (eviction.hpp, safety 5). A flat table, not a std::unordered_map of
// names: add/remove cost one cache line instead of a bucket, a node and the name (the map made
// SETs under maxmemory several times slower: papers/server-choices.md).
// Thread safety: every operation locks one shard at a time.
class KeyIndex {
 public:
  void add(std::string_view key);
  void remove(std::string_view key);
  // Appends up to n names picked uniformly from random shards (fewer when empty).
  void sample(std::mt19937_64& rng, std::size_t n, std::vector<std::string>* out);
  std::size_t size() const { return size_.load(std::memory_order_relaxed); }  // a statistic
  void clear();

 private:
  static constexpr std::size_t kShards = 64;
  struct Entry {
    std::uint64_t hash = 0;  // 0 = empty (hashes are forced odd)
    std::uint32_t slot = 0;
  };
  struct alignas(64) Shard {
    std::mutex mu;
    std::vector<std::string> names;           // guarded by mu
    std::vector<std::uint64_t> hashes;        // hashes[i] is names[i]'s; guarded by mu
    std::vector<Entry> table;                 // linear probing, size a power of two; guarded by mu
    std::size_t find(std::uint64_t h) const;  // the entry's index, or table.size()
    void erase_at(std::size_t i);             // backward-shift deletion
    void grow();
  };
  Shard shards_[kShards];
  std::atomic<std::size_t> size_{0};  // relaxed: INFO only
};

class Eviction {
 public:
  static constexpr int kPoolSize = 16;          // Redis's EVPOOL_SIZE
  static constexpr int kMaxPerCommand = 64;     // evictions one command may perform
  static constexpr std::uint32_t kLfuInit = 5;  // Redis's LFU_INIT_VAL

  Eviction(unsigned workers, std::unique_ptr<MessageQueue> small,
           std::unique_ptr<MessageQueue> main);
  ~Eviction();

  // Configuration (CONFIG SET, flags). Any thread.
  // Returns true when this call started counting used_memory at run time (memory.hpp): the
  // caller then adds to the baseline what it holds outside the keyspace (the keyspace's own
  // estimate is added by the first make_room()).
  bool set_maxmemory(std::uint64_t bytes);
  std::uint64_t maxmemory() const { return maxmemory_.load(std::memory_order_relaxed); }
  void set_policy(EvictPolicy p);
  EvictPolicy policy() const { return policy_.load(std::memory_order_relaxed); }
  void set_samples(int n) { samples_.store(n, std::memory_order_relaxed); }
  int samples() const { return samples_.load(std::memory_order_relaxed); }
  void set_lfu_log_factor(int f) { lfu_log_factor_.store(f, std::memory_order_relaxed); }
  void set_lfu_decay_time(int m) { lfu_decay_time_.store(m, std::memory_order_relaxed); }
  std::string_view queue_name() const;

  // Hooks (any worker). A key was created / removed / given a TTL.
  void on_insert(std::string_view key) {
    if (tracking()) insert_slow(key);
  }
  void on_erase(std::string_view key) {
    if (tracking()) erase_slow(key);
  }
  void on_expire_set(std::string_view key) {
    if (tracking() && sampled(policy())) volatile_.add(key);
  }
  void on_clear();
  // A read of o's key (read_live): updates the access word the policy keeps.
  void touch(const Object& o, std::int64_t now_ms) {
    switch (kind_.load(std::memory_order_relaxed)) {  // relaxed: a hint (see object.hpp)
      case Kind::kLru: {
        const auto t = static_cast<std::uint32_t>(now_ms);
        if (o.access() != t) o.set_access(t);
        const int n = shared_int(o);
        if (n >= 0 && shared_lru_[n].load(std::memory_order_relaxed) != t)
          shared_lru_[n].store(t, std::memory_order_relaxed);  // relaxed: as the access word
        return;
      }
      case Kind::kLfu:
        touch_lfu(o, now_ms);
        return;
      case Kind::kFreq: {
        const std::uint32_t a = o.access();
        if (a < 3) o.set_access(a + 1);
        return;
      }
    }
  }
  // A write found o under its key (Db::update; Redis's lookupKeyWrite): touches it at the clock
  // of the last tick() on this thread.
  void touch_write(const Object& o) { touch(o, clock_ms()); }
  std::int64_t clock() const { return clock_ms(); }  // this thread's clock (tick())
  // Before a batch of commands and at the end of each loop iteration, on a worker thread.
  void tick(std::int64_t now_ms) {
    t_now_ms = now_ms;
    const std::uint32_t init = initial_word(now_ms);
    // relaxed: new Objects read it as a hint (object.hpp); stored only when it changes, so that
    // workers do not write the shared line on every batch.
    if (g_initial_access.load(std::memory_order_relaxed) != init)
      g_initial_access.store(init, std::memory_order_relaxed);
  }
  // Whether the word is the LFU counter / the LRU clock (Redis's MAXMEMORY_FLAG_LFU / not).
  bool lfu() const { return kind_.load(std::memory_order_relaxed) == Kind::kLfu; }  // a hint
  bool lru() const { return kind_.load(std::memory_order_relaxed) == Kind::kLru; }
  // OBJECT IDLETIME's milliseconds (REQUIRES: lru()) and OBJECT FREQ's counter (REQUIRES: lfu()).
  // A value Redis would hold as one of its shared integers answers the shared object's clock.
  std::uint32_t idle_ms(const Object& o, std::int64_t now_ms) const {
    const int n = shared_int(o);
    const std::uint32_t last = n >= 0 ? shared_lru_[n].load(std::memory_order_relaxed) : o.access();
    return static_cast<std::uint32_t>(now_ms) - last;  // modulo 2^32, as the word wraps
  }
  std::uint32_t freq(const Object& o, std::int64_t now_ms) const {
    return lfu_decayed(o.access(), now_ms);
  }
  // RESTORE's IDLETIME seconds / FREQ (either may be absent: -1), as Redis's objectSetLRUOrLFU:
  // under LFU a FREQ sets the counter, under the LRU kind an IDLETIME sets the clock back.
  // REQUIRES: o is not yet published.
  void restore_access(const Object& o, std::int64_t idle_s, int freq, std::int64_t now_ms) const;

  // Worker w, before a top-level command or in CONFIG SET maxmemory (holding no lock of the gate):
  // evicts while used_memory is above maxmemory. False when used_memory is above maxmemory and
  // nothing could be evicted (a kDenyOom command answers OOM).
  bool make_room(Db& db, Atomicity& gate, unsigned w, std::int64_t now_ms) {
    if (maxmemory() == 0) return true;
    return make_room_slow(db, gate, w, now_ms);
  }
  // Worker w at the end of a loop iteration (after its quiescent point): forgets the bytes it
  // evicted kPendingIterations iterations ago (the epoch reclamation frees a value two epochs
  // after its deletion, so a few iterations later); refreshes the clock new Objects start with.
  void end_iteration(unsigned w, std::int64_t now_ms);

  std::uint64_t evicted_keys() const;
  std::size_t tracked_keys() const;

 private:
  enum class Kind : std::uint8_t { kLru, kLfu, kFreq };
  static inline thread_local std::int64_t t_now_ms = 0;  // this worker's clock (tick())
  static std::int64_t clock_ms();                        // t_now_ms, or the wall clock
  std::uint32_t initial_word(std::int64_t now_ms) const;
  struct PoolEntry {
    std::uint64_t idle = 0;
    std::string key;
    const Object* obj = nullptr;  // compared, never dereferenced (safety 3)
  };
  struct alignas(64) WorkerState {
    std::mt19937_64 rng{0x6b766c6162ull};
    std::vector<PoolEntry> pool;  // ascending idle; the best candidate is last
    // Bytes evicted (estimates) in each of the last kPendingIterations loop iterations, the
    // current one at pending_at: what reclamation may not have freed yet. Their sum is pending.
    static constexpr int kPendingIterations = 4;
    std::int64_t pending_ring[kPendingIterations] = {};
    int pending_at = 0;
    std::int64_t pending = 0;
    std::vector<std::string> sample;        // scratch
    std::atomic<std::uint64_t> evicted{0};  // written by this worker only; relaxed (statistic)
  };
  struct SieveNode {
    std::string key;
    SieveNode* prev = nullptr;  // toward the head (newer)
    SieveNode* next = nullptr;  // toward the tail (older)
  };
  struct QueueEntry {
    std::string key;
  };

  static bool sampled(EvictPolicy p) {
    return p != EvictPolicy::kNoEviction && p != EvictPolicy::kAllkeysSieve &&
           p != EvictPolicy::kAllkeysS3Fifo;
  }
  static bool is_volatile(EvictPolicy p) {
    return p == EvictPolicy::kVolatileLru || p == EvictPolicy::kVolatileLfu ||
           p == EvictPolicy::kVolatileRandom || p == EvictPolicy::kVolatileTtl;
  }
  bool tracking() const { return tracking_.load(std::memory_order_relaxed); }
  void reconfigure();
  void insert_slow(std::string_view key);
  void erase_slow(std::string_view key);
  void touch_lfu(const Object& o, std::int64_t now_ms) const;
  std::uint32_t lfu_decayed(std::uint32_t word, std::int64_t now_ms) const;
  bool make_room_slow(Db& db, Atomicity& gate, unsigned w, std::int64_t now_ms);
  void rebuild(Db& db);
  // Evicts one key; false when no candidate exists. *bytes: the estimate of what it frees.
  bool evict_one(Db& db, Atomicity& gate, unsigned w, std::int64_t now_ms, std::size_t* bytes);
  bool evict_sampled(Db& db, Atomicity& gate, WorkerState& ws, unsigned w, std::int64_t now_ms,
                     std::size_t* bytes);
  bool evict_sieve(Db& db, Atomicity& gate, unsigned w, std::size_t* bytes);
  bool evict_s3fifo(Db& db, Atomicity& gate, unsigned w, std::size_t* bytes);
  // Deletes key when its value is still obj (any value when obj is null) and, if need_ttl, has a
  // TTL. Returns whether it deleted; *bytes estimates what the value held.
  bool delete_key(Db& db, Atomicity& gate, unsigned w, const std::string& key, const Object* obj,
                  bool need_ttl, std::size_t* bytes);
  void sieve_unlink(SieveNode* n);  // REQUIRES: sieve_mu_ held
  void s3_clear();                  // REQUIRES: s3_mu_ held

  std::atomic<std::uint64_t> maxmemory_{0};
  std::atomic<EvictPolicy> policy_{EvictPolicy::kNoEviction};
  std::atomic<int> samples_{5}, lfu_log_factor_{10}, lfu_decay_time_{1};
  std::atomic<bool> tracking_{false};  // maxmemory > 0 and a policy that evicts
  std::atomic<Kind> kind_{Kind::kLru};  // what the access word holds (noeviction: the clock)
  // Redis's shared integers: a string value "0".."9999" is, in Redis, one shared object per
  // integer (unless maxmemory is set with an LRU or LFU policy), whose LRU clock every key holding
  // it reads and touches: OBJECT IDLETIME of such a key is the time since any key with that
  // integer was read, or since startup. kvlab's values are per key; this table keeps the shared
  // clocks (ms, as the access word) so that IDLETIME answers as Redis does. Relaxed throughout:
  // hints, like the access word. shared_ints_ is false while Redis would not share.
  static constexpr int kSharedIntegers = 10000;
  std::atomic<bool> shared_ints_{true};
  std::unique_ptr<std::atomic<std::uint32_t>[]> shared_lru_;
  // The shared integer o holds (-1: none, or sharing is off).
  int shared_int(const Object& o) const {
    if (o.type() != ObjectType::kString || !shared_ints_.load(std::memory_order_relaxed)) return -1;
    const std::string_view s = o.str();
    if (s.empty() || s.size() > 4 || (s[0] == '0' && s.size() > 1)) return -1;
    int n = 0;
    for (const char c : s) {
      if (c < '0' || c > '9') return -1;
      n = n * 10 + (c - '0');
    }
    return n;
  }
  std::atomic<bool> rebuild_{false};  // the indexes must be filled from the keyspace
  // Counting started at run time: the keyspace's estimated size is still to be added (memory.hpp).
  std::atomic<bool> baseline_{false};
  std::atomic<std::int64_t> baseline_left_{0};  // of the run-time baseline, what may be dropped

 public:
  // Server::start() sets this once the keyspace exists; a limit set before (the --maxmemory flag)
  // needs no baseline.
  void mark_started() { started_ = true; }

 private:
  bool started_ = false;
  std::mutex config_mu_;  // serializes reconfigure()

  std::unique_ptr<WorkerState[]> workers_;
  unsigned num_workers_;

  KeyIndex all_, volatile_;

  std::mutex sieve_mu_;
  SieveNode* sieve_head_ = nullptr;  // newest; guarded by sieve_mu_
  SieveNode* sieve_tail_ = nullptr;  // oldest
  SieveNode* sieve_hand_ = nullptr;
  std::unordered_map<std::string_view, SieveNode*> sieve_map_;  // guarded by sieve_mu_

  std::mutex s3_mu_;  // the consuming side of both queues
  std::unique_ptr<MessageQueue> small_, main_;
  std::atomic<std::int64_t> small_n_{0}, main_n_{0};  // relaxed: sizing hints

 public:
  static constexpr std::size_t kGhostMin = std::size_t{1} << 10, kGhostMax = std::size_t{1} << 22;
  // The ghost's slot count for `keys` tracked keys (a power of two in [kGhostMin, kGhostMax]).
  static std::size_t ghost_slots_for(std::int64_t keys);
  std::size_t ghost_slots() const;  // the current table's (0 when none); a statistic

 private:
  struct Ghost {
    explicit Ghost(std::size_t n);
    std::size_t mask;
    std::unique_ptr<std::atomic<std::uint64_t>[]> slots;  // relaxed: hints; 0 = empty
  };
  void resize_ghost();  // REQUIRES: s3_mu_ held
  // acquire loads / release store: a reader sees the table initialized (its mask and zeroed
  // slots) before it uses it. Written only under s3_mu_; replaced tables go to reclaim::retire.
  std::atomic<Ghost*> ghost_{nullptr};
};

}  // namespace kvlab::server

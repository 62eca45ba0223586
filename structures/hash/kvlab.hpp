// hash/kvlab — kvlab's own hash table: open addressing over cache-line buckets of tags and entry
// pointers, lock-free reads that write no shared memory, per-bucket locks for writers, epoch
// reclamation, and an online resize that every writer helps with one chunk at a time.
//
// Lineage: CLHT's cache-line buckets with lock-free readers and per-bucket-locked writers
// [david2015ascylib]; SwissTable/F14's one-byte tags filtered with SWAR compares; growt's
// cooperative migration, where writers move the old table chunk by chunk [maier2019growt].
//
// Layout (one bucket = one cache line):
//
//   struct Bucket {                     // 64 bytes, alignas(64)
//     atomic<uint64_t> meta;            // byte 0: flags (bit 0 lock, bit 1 moved)
//                                       // bytes 1..6: tag of slot 0..5 (0 = empty)
//     atomic<Entry*>   slot[6];         // immutable entries, see below
//     atomic<Bucket*>  next;            // overflow bucket of the same home, or null
//   };
//   struct Entry { uint64_t hash; V value; uint32_t key_size; char key[key_size]; };
//
// A key's home bucket is hash & mask; its entry is in the home bucket or in its overflow chain.
// The tag is the hash's top byte (0 mapped to 1): a lookup compares six tags in one 64-bit SWAR
// operation and opens an entry only on a tag match, a false positive rate of about 6/255 per
// bucket for a missing key.
//
// Thread safety: every operation may run concurrently with every other.
//  - find: loads meta (acquire), then the matching slots (acquire), then the entry. It never
//    writes shared memory: its only write is the calling thread's own epoch announcement (its
//    own cache line), and in QSBR-online threads (the server) not even that.
//  - insert / insert_or_assign / erase / update: lock the home bucket (the lock bit in meta) and
//    change its chain. Entries are never modified after publication: a new value is a new entry
//    swapped into the slot, the old one retired to the epoch reclaimer. update runs fn under the
//    home lock, so it is atomic against every other write of that key, and readers see either the
//    old or the new entry.
//  - resize: when an insert needs an overflow bucket and the table is more than half full, the
//    table gets a successor twice its size. Every writer that meets a table with a successor first
//    migrates one chunk of 64 home buckets (lock, copy the entry pointers into the successor, set
//    `moved`, unlock). No pause is longer than one chunk. Readers and writers that find `moved` on
//    a home bucket continue in the successor. The writer that finishes the last chunk makes the
//    successor the root and retires the old table.
// Progress: find is lock-free (bounded by the chain length, plus one hop per ongoing resize);
// writers take one bucket lock: blocking.
// Reclamation: epoch-based (structures/reclaim/epoch.hpp): entries on replace/erase, tables and
// overflow buckets after a resize.
// Invariants:
//  1. meta, slot[] and next of a home bucket and of its overflow chain change only under the home
//     bucket's lock, or during migration under the old home's lock before `moved` is published.
//  2. A slot's tag is non-zero iff the slot holds an entry whose hash has that tag; a writer
//     stores the slot before the tag (insert) and clears the tag before the slot (erase).
//  3. Once `moved` is set on a home bucket, that bucket and its chain never change again, and
//     every entry it held is in the successor.
//  4. A table gets a successor only while it is the root, and only one at a time; the successor
//     becomes the root only after every home bucket of the old table is moved.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "structures/common/hash.hpp"
#include "structures/common/pool.hpp"
#include "structures/common/spin_lock.hpp"
#include "structures/internal/xxh3.hpp"  // private: XXH3 inline on the find path
#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"

namespace kvlab::hash {

template <class V>
class Kvlab {
 public:
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "hash/kvlab",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::epoch,
      .reference = "CLHT (David et al., ASPLOS 2015) + SwissTable tags + growt migration",
      .summary =
          "own: cache-line buckets of tags, lock-free find, per-bucket writers, online resize",
      .atomic_update_native = true,
      .update_runs_once = true,
  };

  Kvlab() : Kvlab(MapOptions{}) {}
  explicit Kvlab(const MapOptions& options) {
    // Start at 4 expected keys per 6-slot bucket (67 % of the slots; before rounding up to a
    // power of two). At half the expected keys (the benchmarks' prefill) that is a table half the
    // size of 3 keys per bucket and 25 % less memory, at no measurable cost in speed
    // (papers/own-structures.md, "Table sizing"). Overflow stays rare (Poisson with mean 4:
    // 11 % of buckets hold more than 6), and an overflow past half-full slots starts the resize.
    const std::size_t buckets = std::bit_ceil(std::max<std::size_t>(options.expected_keys / 4, 16));
    root_.store(new Table(buckets), std::memory_order_relaxed);  // not yet shared
  }

  ~Kvlab() {
    reclaim::Guard g;
    finish_migration();
    Table* t = root_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i <= t->mask; ++i) {
      for (Bucket* b = &t->buckets[i]; b; b = b->next.load(std::memory_order_relaxed)) {
        for (int s = 0; s < kSlots; ++s) {
          if (Entry* e = b->slot[s].load(std::memory_order_relaxed)) destroy_entry(e);
        }
      }
    }
    delete_table(t);
  }

  Kvlab(const Kvlab&) = delete;
  Kvlab& operator=(const Kvlab&) = delete;

  template <class F>
  bool find(std::string_view key, F&& visitor) {
    reclaim::Guard g;
    const std::uint64_t h = internal::xxh3_64(key);
    // acquire: pairs with the release CAS that installs a new root, so its buckets are visible.
    Table* t = root_.load(std::memory_order_acquire);
    for (;;) {
      Bucket* home = &t->buckets[h & t->mask];
      // acquire: pairs with the writers' release stores of meta (tags published after slots).
      const std::uint64_t m = home->meta.load(std::memory_order_acquire);
      if (m & kMoved) {
        // acquire: the successor was published (release) before any bucket was marked moved.
        t = t->next.load(std::memory_order_acquire);
        continue;
      }
      if (Entry* e = search_chain(home, m, h, key)) {
        visitor(static_cast<const V&>(e->value));
        return true;
      }
      return false;
    }
  }

  // A hint for a batch of keys that the caller is about to look up or write (the keys of pipelined
  // commands): loads their home buckets, then the entries whose tags match, and calls on_value
  // with each matching entry's value so that the caller can prefetch what the value points to.
  // The three passes each issue up to kPrefetchBatch independent loads, so their cache misses
  // overlap instead of costing three dependent misses per key when the commands run. This is the
  // batch prefetching of Valkey 8 and Redis 8 [valkey2024prefetch], applied to our buckets.
  // Changes nothing: it reads like find(); a key it sees may change before the command runs,
  // which only costs the prefetch its effect. Keys beyond kPrefetchBatch are ignored.
  static constexpr std::size_t kPrefetchBatch = 32;
  template <class F>
  void prefetch(std::span<const std::string_view> keys, F&& on_value) {
    reclaim::Guard g;
    const std::size_t n = std::min(keys.size(), kPrefetchBatch);
    std::uint64_t hashes[kPrefetchBatch];
    Bucket* homes[kPrefetchBatch];
    Entry* entries[kPrefetchBatch];
    // acquire: as in find().
    Table* t = root_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      hashes[i] = internal::xxh3_64(keys[i]);
      homes[i] = &t->buckets[hashes[i] & t->mask];
      __builtin_prefetch(homes[i], 0, 3);
    }
    for (std::size_t i = 0; i < n; ++i) {
      entries[i] = nullptr;
      // acquire: as in find(); a moved bucket (resize under way) is simply not followed.
      const std::uint64_t m = homes[i]->meta.load(std::memory_order_acquire);
      if (m & kMoved) continue;
      if (const std::uint64_t bits = match(m, tag_of(hashes[i]))) {
        const int s = std::countr_zero(bits) / 8 - 1;
        // acquire: pairs with the release store of the slot, as in search_chain().
        entries[i] = homes[i]->slot[s].load(std::memory_order_acquire);
        if (entries[i]) {
          __builtin_prefetch(entries[i], 0, 3);
          // The key follows the header and may start on the next line.
          __builtin_prefetch(entries[i] + 1, 0, 3);
        }
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      // The guard keeps a retired entry readable; a stale one only prefetches the wrong value.
      if (entries[i] && entries[i]->hash == hashes[i]) {
        on_value(static_cast<const V&>(entries[i]->value));
      }
    }
  }

  bool insert(std::string_view key, const V& value) {
    return write(key, [&](Locked& l, Slot found) {
      if (found.entry) return false;
      l.place(make_entry(key, l.hash, value));
      return true;
    });
  }

  bool insert_or_assign(std::string_view key, const V& value) { return assign(key, value); }
  // Moves the value into the new entry (the write runs its operation exactly once).
  bool insert_or_assign(std::string_view key, V&& value) { return assign(key, std::move(value)); }

  bool erase(std::string_view key) {
    return write(key, [&](Locked& l, Slot found) {
      if (!found.entry) return false;
      l.remove(found);
      return true;
    });
  }

  template <class F>
  UpdateOutcome update(std::string_view key, F&& fn) {
    return write(key, [&](Locked& l, Slot found) {
      Update<V> u = fn(found.entry ? &std::as_const(found.entry->value) : nullptr);
      switch (u.kind()) {
        case Update<V>::Kind::keep:
          return UpdateOutcome::unchanged;
        case Update<V>::Kind::erase:
          if (!found.entry) return UpdateOutcome::unchanged;
          l.remove(found);
          return UpdateOutcome::erased;
        case Update<V>::Kind::assign:
          if (found.entry) {
            l.replace(found, make_entry(key, l.hash, std::move(u).value()));
            return UpdateOutcome::assigned;
          }
          l.place(make_entry(key, l.hash, std::move(u).value()));
          return UpdateOutcome::inserted;
      }
      return UpdateOutcome::unchanged;
    });
  }

  std::size_t size_approx() {
    std::int64_t n = 0;
    // relaxed: a statistic; exact when no writer runs.
    for (const auto& c : counts_) n += c.value.load(std::memory_order_relaxed);
    return n < 0 ? 0 : static_cast<std::size_t>(n);
  }

  // Weakly consistent: a key present for the whole call is visited exactly once (keys never move
  // within a table, and no resize starts while a for_each holds the gate).
  template <class F>
  void for_each(F&& fn) {
    reclaim::Guard g;
    std::shared_lock gate(resize_gate_);
    finish_migration();
    Table* t = root_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i <= t->mask; ++i) {
      for (Bucket* b = &t->buckets[i]; b; b = b->next.load(std::memory_order_acquire)) {
        const std::uint64_t m = b->meta.load(std::memory_order_acquire);
        for (int s = 0; s < kSlots; ++s) {
          if (tag_at(m, s) == 0) continue;
          if (Entry* e = b->slot[s].load(std::memory_order_acquire)) {
            fn(e->key(), static_cast<const V&>(e->value));
          }
        }
      }
    }
  }

  // Not atomic: empties one home bucket chain at a time, each under its lock, as erase would
  // (a key present for the whole call is gone at the end; one inserted meanwhile may stay). No
  // key is copied or hashed: the cost is one pass over the table plus a retire per entry.
  void clear() {
    reclaim::Guard g;
    std::shared_lock gate(resize_gate_);  // no resize starts meanwhile (as for_each)
    finish_migration();
    Table* t = root_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i <= t->mask; ++i) {
      Bucket& home = t->buckets[i];
      lock(home);
      Locked l{this, &home, 0};
      for (Bucket* b = &home; b; b = b->next.load(std::memory_order_relaxed)) {
        // relaxed: we hold the home lock, which ordered every earlier write to this chain.
        const std::uint64_t m = b->meta.load(std::memory_order_relaxed);
        for (int s = 0; s < kSlots; ++s) {
          if (tag_at(m, s) == 0) continue;
          l.remove({b, s, b->slot[s].load(std::memory_order_relaxed)});
        }
      }
      unlock(home);
    }
  }

  // Observability for INFO and benchmarks.
  std::size_t bucket_count() { return root_.load(std::memory_order_acquire)->mask + 1; }
  std::uint64_t resizes() const { return resizes_.load(std::memory_order_relaxed); }

 private:
  static constexpr int kSlots = 6;
  static constexpr std::uint64_t kLock = 1;
  static constexpr std::uint64_t kMoved = 2;
  static constexpr std::size_t kChunk = 64;  // home buckets migrated per helping step
  static constexpr std::size_t kStripes = 64;

  struct Entry {
    std::uint64_t hash;
    V value;
    std::uint32_t key_size;
    std::string_view key() const { return {reinterpret_cast<const char*>(this + 1), key_size}; }
  };

  struct alignas(64) Bucket {
    std::atomic<std::uint64_t> meta{0};
    std::atomic<Entry*> slot[kSlots] = {};
    std::atomic<Bucket*> next{nullptr};
  };
  static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");
  static_assert(alignof(Bucket) == 64, "buckets start on a cache line");
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "meta must be a plain word");
  static_assert(sizeof(std::atomic<Entry*>) == 8, "six slots + meta + next fill 64 bytes");

  struct Table {
    explicit Table(std::size_t n)
        : mask(n - 1), buckets(new Bucket[n]), chunks((n + kChunk - 1) / kChunk) {}
    std::size_t mask;
    Bucket* buckets;
    std::size_t chunks;
    std::atomic<Table*> next{nullptr};
    std::atomic<std::size_t> next_chunk{0};
    std::atomic<std::size_t> chunks_done{0};
  };

  struct alignas(64) Count {
    std::atomic<std::int64_t> value{0};
  };

  struct Slot {
    Bucket* bucket = nullptr;
    int index = -1;
    Entry* entry = nullptr;
  };

  static std::uint8_t tag_of(std::uint64_t h) {
    const auto t = static_cast<std::uint8_t>(h >> 56);
    return t == 0 ? 1 : t;
  }
  static std::uint8_t tag_at(std::uint64_t meta, int s) {
    return static_cast<std::uint8_t>(meta >> (8 * (s + 1)));
  }
  static std::uint64_t with_tag(std::uint64_t meta, int s, std::uint8_t tag) {
    const int shift = 8 * (s + 1);
    return (meta & ~(std::uint64_t{0xff} << shift)) | (std::uint64_t{tag} << shift);
  }
  // Bit 7 of byte s+1 is set for slots whose tag may equal `tag` (SWAR zero-byte test on
  // meta ^ broadcast(tag)); false positives only, which the hash/key compare rejects.
  static std::uint64_t match(std::uint64_t meta, std::uint8_t tag) {
    constexpr std::uint64_t kLow = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
    constexpr std::uint64_t kSlotBytes = 0x00ffffffffffff00ull;  // bytes 1..6
    const std::uint64_t x = meta ^ (kLow * tag);
    return (x - kLow) & ~x & kHigh & kSlotBytes;
  }

  static Entry* search_chain(Bucket* home, std::uint64_t home_meta, std::uint64_t h,
                             std::string_view key) {
    const std::uint8_t tag = tag_of(h);
    std::uint64_t m = home_meta;
    for (Bucket* b = home;;) {
      for (std::uint64_t bits = match(m, tag); bits; bits &= bits - 1) {
        const int s = std::countr_zero(bits) / 8 - 1;
        // acquire: pairs with the release store of the slot; the entry's contents are visible.
        Entry* e = b->slot[s].load(std::memory_order_acquire);
        if (e && e->hash == h && key_equal(e->key(), key)) return e;
      }
      // acquire: an overflow bucket is fully initialized before it is linked (release).
      b = b->next.load(std::memory_order_acquire);
      if (!b) return nullptr;
      m = b->meta.load(std::memory_order_acquire);
    }
  }

  template <class... Args>
  static Entry* make_entry(std::string_view key, std::uint64_t h, Args&&... value) {
    static_assert(alignof(Entry) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                  "pool blocks are new-aligned");
    // Entries come from the thread's pool: an overwrite's new entry usually reuses the block of
    // an entry this thread's reclaimer freed, whichever thread allocated it (see pool.hpp).
    const std::size_t bytes = sizeof(Entry) + key.size();
    void* mem = pool::allocate(bytes);
    Entry* e;
    try {
      e = new (mem)
          Entry{h, V(std::forward<Args>(value)...), static_cast<std::uint32_t>(key.size())};
    } catch (...) {
      pool::deallocate(mem, bytes);
      throw;
    }
    if (!key.empty()) std::memcpy(static_cast<char*>(mem) + sizeof(Entry), key.data(), key.size());
    return e;
  }
  static void destroy_entry(Entry* e) {
    const std::size_t bytes = sizeof(Entry) + e->key_size;
    e->~Entry();
    pool::deallocate(e, bytes);
  }
  static void retire_entry(Entry* e) {
    reclaim::retire(e, [](void* p) { destroy_entry(static_cast<Entry*>(p)); });
  }
  static void delete_table(Table* t) {
    for (std::size_t i = 0; i <= t->mask; ++i) {
      Bucket* b = t->buckets[i].next.load(std::memory_order_relaxed);
      while (b) {
        Bucket* n = b->next.load(std::memory_order_relaxed);
        delete b;
        b = n;
      }
    }
    delete[] t->buckets;
    delete t;
  }

  static void lock(Bucket& b) {
    for (unsigned spins = 0;;) {
      std::uint64_t m = b.meta.load(std::memory_order_relaxed);
      // acquire: pairs with unlock()'s release; the previous holder's writes are visible.
      if (!(m & kLock) && b.meta.compare_exchange_weak(m, m | kLock, std::memory_order_acquire,
                                                       std::memory_order_relaxed)) {
        return;
      }
      if (++spins < 64) {
        cpu_relax();
      } else {
        std::this_thread::yield();
      }
    }
  }
  // REQUIRES: b locked by this thread. Only the holder changes meta, so a plain store is enough.
  static void unlock(Bucket& b) {
    // release: publishes the critical section (slots, tags, overflow links) to the next locker
    // and to readers that acquire meta.
    b.meta.store(b.meta.load(std::memory_order_relaxed) & ~kLock, std::memory_order_release);
  }

  // The locked home bucket of one key and the operations a writer performs on its chain.
  struct Locked {
    Kvlab* map;
    Bucket* home;
    std::uint64_t hash;
    bool wants_resize = false;

    Slot find(std::string_view key) const {
      const std::uint8_t tag = tag_of(hash);
      for (Bucket* b = home; b; b = b->next.load(std::memory_order_relaxed)) {
        // relaxed: we hold the home lock, which ordered every earlier write to this chain.
        const std::uint64_t m = b->meta.load(std::memory_order_relaxed);
        for (std::uint64_t bits = match(m, tag); bits; bits &= bits - 1) {
          const int s = std::countr_zero(bits) / 8 - 1;
          Entry* e = b->slot[s].load(std::memory_order_relaxed);
          if (e && e->hash == hash && key_equal(e->key(), key)) return {b, s, e};
        }
      }
      return {};
    }
    void place(Entry* e) {
      Bucket* b = home;
      for (;;) {
        const std::uint64_t m = b->meta.load(std::memory_order_relaxed);
        for (int s = 0; s < kSlots; ++s) {
          if (tag_at(m, s) != 0) continue;
          // release: the entry's contents before the slot (invariant 2: slot before tag).
          b->slot[s].store(e, std::memory_order_release);
          // release: readers that acquire meta and see the tag also see the slot.
          b->meta.store(with_tag(m, s, tag_of(hash)), std::memory_order_release);
          map->count_add(1);
          return;
        }
        Bucket* next = b->next.load(std::memory_order_relaxed);
        if (!next) {
          next = new Bucket;
          // release: the new bucket is initialized (all empty) before readers can reach it.
          b->next.store(next, std::memory_order_release);
          wants_resize = true;
        }
        b = next;
      }
    }
    void replace(Slot at, Entry* e) {
      // release: the new entry's contents are visible to readers that load the slot.
      at.bucket->slot[at.index].store(e, std::memory_order_release);
      retire_entry(at.entry);
    }
    void remove(Slot at) {
      const std::uint64_t m = at.bucket->meta.load(std::memory_order_relaxed);
      // release: tag cleared before the slot (invariant 2).
      at.bucket->meta.store(with_tag(m, at.index, 0), std::memory_order_release);
      at.bucket->slot[at.index].store(nullptr, std::memory_order_release);
      retire_entry(at.entry);
      map->count_add(-1);
    }
  };

  template <class Arg>
  bool assign(std::string_view key, Arg&& value) {
    // The entry is built before the bucket is locked: the allocation stays out of the lock.
    const std::uint64_t h = internal::xxh3_64(key);
    Entry* e = make_entry(key, h, std::forward<Arg>(value));
    return write_hashed(key, h, [&](Locked& l, Slot found) {
      if (found.entry) {
        l.replace(found, e);
        return false;
      }
      l.place(e);
      return true;
    });
  }

  // Locks the key's home bucket in the newest table that holds it, runs op, unlocks, and grows
  // the table if the operation had to chain an overflow bucket.
  template <class Op>
  auto write(std::string_view key, Op&& op) {
    return write_hashed(key, internal::xxh3_64(key), std::forward<Op>(op));
  }
  template <class Op>
  auto write_hashed(std::string_view key, std::uint64_t h, Op&& op) {
    reclaim::Guard g;
    Table* t = root_.load(std::memory_order_acquire);
    help_migrate(t);
    Bucket* home;
    for (;;) {
      home = &t->buckets[h & t->mask];
      lock(*home);
      if (!(home->meta.load(std::memory_order_relaxed) & kMoved)) break;
      unlock(*home);
      t = t->next.load(std::memory_order_acquire);
    }
    Locked l{this, home, h};
    // An op that throws (update's fn, or an allocation: bad_alloc) has changed nothing in the
    // bucket: every op allocates before it links or unlinks. Unlock before the exception leaves,
    // or every later operation on this bucket would spin on its lock forever.
    auto result = [&] {
      try {
        return op(l, l.find(key));
      } catch (...) {
        unlock(*home);
        throw;
      }
    }();
    unlock(*home);
    if (l.wants_resize) maybe_grow(t);
    return result;
  }

  void count_add(std::int64_t d) {
    static std::atomic<unsigned> next_stripe{0};
    // relaxed: only spreads threads over stripes.
    thread_local const unsigned stripe =
        next_stripe.fetch_add(1, std::memory_order_relaxed) % kStripes;
    // relaxed: a statistic; no ordering with the table needed.
    counts_[stripe].value.fetch_add(d, std::memory_order_relaxed);
  }

  // Starts a resize when the table is more than half full (slots) and is still the root.
  void maybe_grow(Table* t) {
    const std::size_t slots = (t->mask + 1) * kSlots;
    if (size_approx() * 2 < slots) return;
    std::unique_lock gate(resize_gate_, std::try_to_lock);
    if (!gate.owns_lock()) return;  // a for_each is running or another thread is starting one
    if (root_.load(std::memory_order_acquire) != t ||
        t->next.load(std::memory_order_acquire) != nullptr) {
      return;
    }
    auto* n = new Table((t->mask + 1) * 2);
    // release: the successor is initialized before threads that see it (acquire) use it.
    t->next.store(n, std::memory_order_release);
    resizes_.fetch_add(1, std::memory_order_relaxed);
    gate.unlock();
    help_migrate(t);
  }

  // Migrates one chunk of t's home buckets into its successor, if a migration is running.
  void help_migrate(Table* t) {
    Table* n = t->next.load(std::memory_order_acquire);
    if (!n) return;
    // relaxed: only hands out distinct chunk numbers; the bucket locks order the copying.
    const std::size_t c = t->next_chunk.fetch_add(1, std::memory_order_relaxed);
    if (c >= t->chunks) return;
    const std::size_t end = std::min((c + 1) * kChunk, t->mask + 1);
    for (std::size_t i = c * kChunk; i < end; ++i) migrate_bucket(t, n, i);
    // acq_rel: the last finisher sees every other chunk's copying before it swings the root.
    if (t->chunks_done.fetch_add(1, std::memory_order_acq_rel) + 1 == t->chunks) {
      Table* expected = t;
      // release: the fully populated successor becomes visible as the root.
      root_.compare_exchange_strong(expected, n, std::memory_order_release,
                                    std::memory_order_relaxed);
      reclaim::retire(t, [](void* p) { delete_table(static_cast<Table*>(p)); });
    }
  }

  // Moves home bucket i of t (and its chain) into n. n's buckets for these keys (i and i + old
  // size) receive no other writes until `moved` is set, so they need no lock (invariant 3/4).
  static void migrate_bucket(Table* t, Table* n, std::size_t i) {
    Bucket& home = t->buckets[i];
    lock(home);
    for (Bucket* b = &home; b; b = b->next.load(std::memory_order_relaxed)) {
      const std::uint64_t m = b->meta.load(std::memory_order_relaxed);
      for (int s = 0; s < kSlots; ++s) {
        if (tag_at(m, s) == 0) continue;
        Entry* e = b->slot[s].load(std::memory_order_relaxed);
        place_unlocked(n->buckets[e->hash & n->mask], e);
      }
    }
    // release (in the store below, with the lock bit still set): every copy into n happens
    // before a thread that sees `moved` looks in n.
    home.meta.store(home.meta.load(std::memory_order_relaxed) | kMoved, std::memory_order_release);
    unlock(home);
  }

  static void place_unlocked(Bucket& home, Entry* e) {
    for (Bucket* b = &home;;) {
      const std::uint64_t m = b->meta.load(std::memory_order_relaxed);
      for (int s = 0; s < kSlots; ++s) {
        if (tag_at(m, s) != 0) continue;
        b->slot[s].store(e, std::memory_order_release);
        b->meta.store(with_tag(m, s, tag_of(e->hash)), std::memory_order_release);
        return;
      }
      Bucket* next = b->next.load(std::memory_order_relaxed);
      if (!next) {
        next = new Bucket;
        b->next.store(next, std::memory_order_release);
      }
      b = next;
    }
  }

  void finish_migration() {
    for (;;) {
      Table* t = root_.load(std::memory_order_acquire);
      Table* n = t->next.load(std::memory_order_acquire);
      if (!n) return;
      while (t->next_chunk.load(std::memory_order_relaxed) < t->chunks) help_migrate(t);
      // Chunks taken by other threads may still be in flight: wait for the root to move.
      while (root_.load(std::memory_order_acquire) == t) std::this_thread::yield();
    }
  }

  std::atomic<Table*> root_{nullptr};
  std::shared_mutex resize_gate_;  // for_each (shared) vs starting a resize (exclusive, try-only)
  std::atomic<std::uint64_t> resizes_{0};
  Count counts_[kStripes];
};

static_assert(KeyValueMap<Kvlab<std::string>>);

}  // namespace kvlab::hash

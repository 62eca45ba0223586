// Epoch-based reclamation: see epoch.hpp for the scheme and its invariants. The memory-order
// argument follows crossbeam-epoch's: pin = announce, then a SeqCst fence; advance = SeqCst fence,
// then read every announcement; an object retired at epoch e is freed at global epoch >= e + 2.
#include "structures/reclaim/epoch.hpp"

#include <cstdint>
#include <mutex>
#include <utility>

#include "structures/common/pool.hpp"

namespace kvlab::reclaim {
namespace detail {

std::atomic<std::uint64_t> g_epoch{0};

namespace {

constexpr std::size_t kBatch = 128;  // retire() tries to collect every kBatch objects
constexpr std::size_t kSealBatch = 32;  // retire() seals epochs every kSealBatch objects

// Records of every thread that ever used the reclaimer; a list only ever pushed to, so readers
// walk it without locks. Records are recycled, never freed before exit.
std::atomic<Record*> g_records{nullptr};

// Objects left behind by exiting threads, freed by whoever collects next.
std::mutex g_orphans_mutex;
std::vector<Retired> g_orphans;
std::atomic<std::uint64_t> g_orphans_size{0};
std::atomic<std::uint64_t> g_orphans_freed{0};

// The orphan list (unsorted: sealed by different threads): frees the objects whose epoch is at
// least two behind `global` and keeps the rest in order.
void free_expired(std::vector<Retired>& list, std::uint64_t global, std::uint64_t* freed) {
  std::size_t kept = 0;
  for (Retired& r : list) {
    // r.epoch + 2 <= global, written without a subtraction that could wrap: an entry can carry an
    // epoch newer than the `global` its collector read (an exiting thread sealed it later).
    if (r.epoch + 2 <= global) {
      r.deleter(r.object);
      ++*freed;
    } else {
      list[kept++] = r;
    }
  }
  list.resize(kept);
}

// Drops the freed prefix [0, head) of a thread's own list.
void compact(Record& r) {
  if (r.head == 0) return;
  r.retired.erase(r.retired.begin(), r.retired.begin() + static_cast<std::ptrdiff_t>(r.head));
  r.sealed -= r.head;
  r.head = 0;
}

// A thread's own list: seal() gives epochs in non-decreasing order, so [head, sealed) is sorted
// and its expired objects are a prefix. Frees at most `budget` of them; returns true when the
// budget stopped the pass with expired objects left.
bool free_expired_prefix(Record& r, std::uint64_t global, std::size_t budget,
                         std::uint64_t* freed) {
  std::size_t k = r.head;
  const std::size_t stop = budget < r.sealed - r.head ? r.head + budget : r.sealed;
  // r.epoch + 2 <= global: no subtraction that could wrap, as in free_expired.
  while (k < stop && r.retired[k].epoch + 2 <= global) {
    r.retired[k].deleter(r.retired[k].object);
    ++k;
  }
  *freed += k - r.head;
  r.head = k;
  const bool more = k < r.sealed && r.retired[k].epoch + 2 <= global;
  if (2 * r.head >= r.retired.size()) compact(r);
  return more;
}

// Gives every not-yet-sealed retired object of r the current epoch. The SeqCst fence orders the
// unlinks that preceded those retire() calls before the epoch read (as crossbeam-epoch seals a
// bag): a reader that could still see one of them announced an epoch no newer than the one read.
void seal(Record& r) {
  if (r.sealed == r.retired.size()) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // relaxed: ordered by the fence above.
  const std::uint64_t e = g_epoch.load(std::memory_order_relaxed);
  for (std::size_t i = r.sealed; i < r.retired.size(); ++i) r.retired[i].epoch = e;
  r.sealed = r.retired.size();
}

// Tries to move the global epoch forward by one; true if it is now past `seen`.
void try_advance() {
  // relaxed: the SeqCst fence below orders this read with the announcements we read next.
  const std::uint64_t global = g_epoch.load(std::memory_order_relaxed);
  // SeqCst fence: pairs with the fence in pin(); either we see a thread's announcement, or that
  // thread's later reads see every unlink that happened before our fence.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // acquire: the list's links were published with release by push_record().
  for (Record* r = g_records.load(std::memory_order_acquire); r; r = r->next) {
    // acquire: pairs with the release store that ended the thread's last critical section (or
    // passed its quiescent point), so what it read there happens before anything we free.
    // (An acquire load rather than a relaxed load plus fence: the same on x86, and visible to
    // ThreadSanitizer, which does not model fences.)
    const std::uint64_t a = r->announced.load(std::memory_order_acquire);
    if (a != kIdle && a != global) return;  // a thread is still in an older epoch
  }
  std::uint64_t expected = global;
  // release: publishes the advance; a failed CAS means another thread advanced it.
  g_epoch.compare_exchange_strong(expected, global + 1, std::memory_order_release,
                                  std::memory_order_relaxed);
}

void push_record(Record* r) {
  Record* head = g_records.load(std::memory_order_relaxed);
  do {
    r->next = head;
    // release: publishes r->next and r's initialization to list walkers (acquire above).
  } while (!g_records.compare_exchange_weak(head, r, std::memory_order_release,
                                            std::memory_order_relaxed));
}

// Returns the thread's record to the pool when the thread exits; what it still holds goes to the
// orphan list.
struct Holder {
  Record* record = nullptr;
  ~Holder() {
    if (!record) return;
    // release: as in Guard's destructor.
    record->announced.store(kIdle, std::memory_order_release);
    record->online = false;
    record->guard_depth = 0;
    compact(*record);
    if (!record->retired.empty()) {
      seal(*record);
      std::lock_guard lock(g_orphans_mutex);
      g_orphans_size.fetch_add(record->retired.size(), std::memory_order_relaxed);
      // The objects leave this record's books for the orphan list's (see stats()).
      record->retired_total.fetch_sub(record->retired.size(), std::memory_order_relaxed);
      g_orphans.insert(g_orphans.end(), record->retired.begin(), record->retired.end());
      record->retired.clear();
      record->sealed = 0;
    }
    // release: the record's thread-private state is reset before another thread claims it.
    record->in_use.store(false, std::memory_order_release);
  }
};
thread_local Holder t_holder;

// Frees, at process exit, everything still retired and the records themselves, so that leak
// checkers see a clean exit. Runs after the main thread's thread_locals (static storage dies
// after thread storage).
struct ExitSweep {
  ~ExitSweep() {
    for (auto& o : g_orphans) o.deleter(o.object);
    g_orphans.clear();
    Record* r = g_records.exchange(nullptr, std::memory_order_acquire);
    while (r) {
      Record* next = r->next;
      compact(*r);
      for (auto& o : r->retired) o.deleter(o.object);
      delete r;
      r = next;
    }
    // The deleters may have cached blocks on this (main) thread after its thread-exit drain ran.
    pool::close();
  }
};
ExitSweep g_exit_sweep;

}  // namespace

Record& self_slow() {
  if (t_holder.record) return *(t_record = t_holder.record);
  // Reuse a record an exited thread left behind, else add one.
  for (Record* r = g_records.load(std::memory_order_acquire); r; r = r->next) {
    bool free = false;
    // acquire: sees the previous owner's reset (release in ~Holder).
    if (!r->in_use.load(std::memory_order_relaxed) &&
        r->in_use.compare_exchange_strong(free, true, std::memory_order_acquire,
                                          std::memory_order_relaxed)) {
      t_holder.record = r;
      t_record = r;
      return *r;
    }
  }
  auto* r = new Record;
  r->in_use.store(true, std::memory_order_relaxed);  // not yet shared
  push_record(r);
  t_holder.record = r;
  t_record = r;
  return *r;
}

void enter_slow(Record& r) {
  // relaxed load + relaxed store: the SeqCst fence orders the announcement before every read
  // of shared pointers in the critical section (pairs with the fence in try_advance()).
  r.announced.store(g_epoch.load(std::memory_order_relaxed), std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void collect(Record& r, std::size_t budget) {
  seal(r);
  try_advance();
  // acquire: pairs with the release CAS in try_advance(), so the check of every announcement
  // happens before we free.
  const std::uint64_t global = g_epoch.load(std::memory_order_acquire);
  // Objects sealed since the last pass carry an epoch no older than that pass's global epoch, so
  // with the epoch unchanged there is nothing new to free. Skipping the walk matters when another
  // thread holds the epoch back (descheduled on an oversubscribed machine): the list then grows,
  // and walking all of it at every quiescent point made the work per operation grow with it.
  if (global != r.freed_at_epoch) {
    std::uint64_t freed = 0;
    // A pass cut short by the budget leaves freed_at_epoch alone: the next pass goes on.
    if (!free_expired_prefix(r, global, budget, &freed)) r.freed_at_epoch = global;
    r.freed_total.fetch_add(freed, std::memory_order_relaxed);
  }
  if (g_orphans_size.load(std::memory_order_relaxed) > 0) {
    std::unique_lock lock(g_orphans_mutex, std::try_to_lock);
    if (lock.owns_lock()) {
      std::uint64_t orphans_freed = 0;
      free_expired(g_orphans, global, &orphans_freed);
      g_orphans_size.store(g_orphans.size(), std::memory_order_relaxed);
      g_orphans_freed.fetch_add(orphans_freed, std::memory_order_relaxed);
    }
  }
}

}  // namespace detail

using detail::kIdle;

void online() {
  detail::Record& r = detail::self();
  if (r.online) return;
  r.online = true;
  if (r.guard_depth == 0) detail::enter_slow(r);
}

void offline() {
  detail::Record& r = detail::self();
  if (!r.online) return;
  r.online = false;
  // release: as in Guard's destructor. Inside a Guard the thread stays announced.
  if (r.guard_depth == 0) r.announced.store(kIdle, std::memory_order_release);
  detail::collect(r, kFreeBudget);
}

void quiescent() {
  detail::Record& r = detail::self();
  if (!r.online || r.guard_depth != 0) return;
  // release: every read of protected memory before this point happens before a reclaimer that
  // sees the newer epoch frees anything; then re-announce like a pin.
  r.announced.store(detail::g_epoch.load(std::memory_order_relaxed), std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!r.retired.empty()) detail::collect(r, kFreeBudget);
}

void retire(void* object, void (*deleter)(void*)) {
  detail::Record& r = detail::self();
  r.retired.push_back({object, deleter, 0});  // epoch set by seal()
  r.retired_total.fetch_add(1, std::memory_order_relaxed);
  if (r.retired.size() - r.sealed >= detail::kSealBatch) detail::seal(r);
  if (r.retired.size() % detail::kBatch == 0) detail::collect(r, kFreeBudget);
}

void flush() {
  detail::Record& r = detail::self();
  // Each pass can advance the epoch by one; two advances make this thread's retirements safe
  // unless another thread is announced in an old epoch.
  for (int i = 0; i < 4 && !r.retired.empty(); ++i) detail::collect(r, SIZE_MAX);
}

bool backlog() {
  detail::Record& r = detail::self();
  // acquire: as in collect(); a stale (older) epoch only makes the answer more conservative.
  return r.head < r.sealed &&
         r.retired[r.head].epoch + 2 <= detail::g_epoch.load(std::memory_order_acquire);
}

Stats stats() {
  Stats s{};
  s.global_epoch = detail::g_epoch.load(std::memory_order_relaxed);
  std::uint64_t oldest = s.global_epoch;
  std::uint64_t retired = 0, freed = 0;
  for (detail::Record* r = detail::g_records.load(std::memory_order_acquire); r; r = r->next) {
    // relaxed: statistics, read racily by design.
    const std::uint64_t a = r->announced.load(std::memory_order_relaxed);
    if (a != kIdle && a < oldest) oldest = a;
    retired += r->retired_total.load(std::memory_order_relaxed);
    freed += r->freed_total.load(std::memory_order_relaxed);
    s.threads += r->in_use.load(std::memory_order_relaxed) ? 1 : 0;
  }
  const std::uint64_t orphans = detail::g_orphans_size.load(std::memory_order_relaxed);
  s.epoch_lag = s.global_epoch - oldest;
  s.retired_unfreed = retired - freed + orphans;
  s.freed = freed + detail::g_orphans_freed.load(std::memory_order_relaxed);
  return s;
}

}  // namespace kvlab::reclaim

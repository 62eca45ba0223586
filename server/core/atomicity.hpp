// Whole-command atomicity across keys (MSET, EXEC, FLUSHALL…), as Redis gives it, on a keyspace
// that several workers change at once. The scheme is a server flag (--atomicity NAME), so that its
// cost can be measured like a backend's.
//
// Design: escalation with acknowledgement at command boundaries.
// Most commands touch one key, and the backend's own operations (find, update) already make those
// atomic; they need no lock as long as no multi-key operation runs. A multi-key operation
// *escalates*: it announces itself (active_ += 1, seq_ += 1), waits until every worker has
// acknowledged the announcement at a command boundary or is offline (runs no command: it sleeps or
// does socket I/O; see Worker::process_input), and only then takes its locks and
// runs. A worker that acknowledged while an escalation is active runs its single-key commands in
// slow mode until none is: it takes the key's stripe shared (key-locks) or waits for the gate to
// open (global). Single-key commands with no escalation anywhere pay two loads of a line that is
// written only by escalations.
//
// Schemes (Atomicity::schemes()):
//   global     escalated operations run one at a time and exclude every other command: slow-mode
//              single-key commands wait until no escalation is active. The reference.
//   key-locks  escalated operations lock the stripes of their keys exclusively, in stripe order
//              (deadlock-free); keyspace-wide ones (FLUSHALL, KEYS, scripts that may touch any
//              key) lock the world stripe exclusively; slow-mode single-key commands take their
//              key's stripe shared. Operations on disjoint keys run in parallel.
//   stripes    no escalation and no acknowledgement: a multi-key operation locks its stripes
//              exclusively, in order (every stripe when keyspace-wide), and every single-key
//              command holds its key's stripe shared, always. Nothing waits for another worker
//              to reach a command boundary, so a worker that lost its CPU holds up only the
//              operations on its own stripe. The shared hold is a per-worker reader indicator
//              (as in BRAVO, Dice and Kogan 2019): the worker writes the stripe's number into its
//              own slot, fences, and checks that neither the stripe nor the world stripe is
//              locked — a store to a line no other worker writes, a fence and two loads, where a
//              shared counter would cost two read-modify-writes of a line the other workers write
//              too. An exclusive locker locks the stripe word, fences, and waits until no
//              worker's indicator names a stripe it locked (invariant 5). A reader that finds its
//              stripe locked withdraws its indicator and waits on the stripe's shared counter
//              instead.
//
// The world stripe (key-locks and stripes): one more stripe word that stands for every key. A
// keyspace-wide operation locks it exclusively and no key stripe (one word, where locking the
// 4096 stripes cost about 8,000 read-modify-writes per operation), then waits until no other
// worker holds key stripes. A worker announces that it holds key stripes in its own slot's
// `holding` flag (a multi-key operation, a single-key command in slow mode or on the stripes
// scheme's contended path), set before it takes them and only while the world stripe is free
// (invariant 7): a store to a line no other worker writes, where holding the world stripe shared
// cost every multi-key operation two read-modify-writes of a line all workers write. A single-key
// command on the stripes scheme's indicator path holds no counter: its indicator covers the world
// stripe as it covers its own (invariant 5), and a keyspace-wide locker drains every indicator.
//
// Lock-free backends: a single-key command never sees half of a multi-key write because the
// multi-key write runs only after every worker either acknowledged it (and so runs every later
// command in slow mode, behind the stripes or the gate) or finished the command it was running;
// under `stripes`, because the single-key command holds its stripe shared and the multi-key
// write holds it exclusively.
//
// Thread safety: every public function is called by the worker it names (w), except the stats.
// Invariants:
// 1. slots_[w].seen is written only by worker w: kOffline while it runs no command, otherwise
//    the latest sequence it acknowledged at a command boundary.
// 2. An escalation with sequence s enters its critical section only after every other slot read
//    kOffline or >= s; a command that started in fast mode before the announcement has then
//    finished, because its worker acknowledges only between commands.
// 3. A worker that acknowledged s read seq_ >= s with acquire, so it also sees active_ > 0 until
//    the escalation ends (active_ is raised before seq_), and runs in slow mode.
// 4. Every wait (for acknowledgements, a stripe, the gate) acknowledges as it spins: a waiting
//    worker is between commands, so two escalations never wait for each other.
// 5. (stripes) A single-key command runs with its stripe either named in its worker's
//    slots_[w].reading or counted in the stripe's shared holders, never while another worker
//    holds the stripe or the world stripe exclusively: the reader stores its indicator, fences
//    (seq_cst) and loads the stripe word and the world word; the exclusive locker modifies its
//    word, fences (seq_cst) and loads every indicator. Of two seq_cst fences one precedes the other, so either the reader sees the lock
//    (and withdraws) or the locker sees the indicator (and waits for it to clear). A worker with
//    an indicator set waits for nothing until it clears it, so the locker's wait ends.
// 6. (key-locks) A worker's announcement may outlive the operation that made it (end_multi with
//    keep_announced): its active_ count stays until the worker's next single-key command, its
//    next end_multi without keep_announced, or offline(), whichever comes first. While it stays,
//    every other worker has acknowledged it (invariant 2) or will see active_ > 0 at its next
//    boundary (invariant 3), so all their commands run behind the stripes, and the worker's next
//    multi-key operation locks its stripes without announcing again.
// 7. (key-locks, stripes) A worker holds key stripes only while slots_[w].holding is set, and
//    sets it (then fences, seq_cst) before it looks at the world stripe; it goes on only when the
//    world stripe is neither held nor awaited, and otherwise clears the flag before it waits. A
//    keyspace-wide operation locks the world stripe, fences (seq_cst) and waits until no other
//    worker's flag is set. Of the two fences one precedes the other: either the worker sees the
//    world stripe taken (and backs off) or the keyspace-wide operation sees the flag (and waits
//    for the worker's operation to end). A worker with the flag set never waits for the world
//    stripe, so that wait ends. A run of pipelined MSETs
//    then pays one announcement and one round of acknowledgements per batch, not per command.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace kvlab::server {

class Atomicity {
 public:
  enum class Scheme : std::uint8_t { kGlobal, kKeyLocks, kStripes };
  struct SchemeInfo {
    std::string_view name;
    Scheme scheme;
    std::string_view summary;
  };
  static std::span<const SchemeInfo> schemes();
  static const SchemeInfo* find(std::string_view name);  // nullptr when unknown

  Atomicity(Scheme scheme, unsigned workers);
  Atomicity(const Atomicity&) = delete;
  Atomicity& operator=(const Atomicity&) = delete;

  Scheme scheme() const { return scheme_; }
  std::string_view name() const;

  // Worker w stops running commands (sleeps, or does socket I/O) / runs commands again.
  void offline(unsigned w);
  void online(unsigned w);

  // A single-key command of worker w on key: returns the stripe it holds shared, kIndicator
  // (stripes: held through the worker's indicator) or -1 (none). Pass the result to end_single().
  static constexpr int kIndicator = -2;
  int begin_single(unsigned w, std::string_view key) {
    Slot& me = slots_[w];
    if (scheme_ == Scheme::kStripes) return enter_stripe(me, stripe_of(key));
    if (me.announced) withdraw(me);  // invariant 6: single-key commands keep the fast path
    if (!boundary(me)) return -1;  // fast mode: no escalation anywhere
    return begin_single_slow(me, key);
  }
  void end_single(unsigned w, int stripe) {
    if (stripe == kIndicator) {
      // release: pairs with the exclusive locker's acquire load of the indicator (invariant 5);
      // this command's reads and writes happen before the locked operation.
      slots_[w].reading.store(kNoStripe, std::memory_order_release);
    } else if (stripe >= 0) {
      // release: this command's writes happen before the escalation that next locks the stripe
      // (or, through the holding flag, a keyspace-wide one).
      stripes_[stripe].state.fetch_sub(1, std::memory_order_release);
      leave_keys(slots_[w]);
    }
  }

  // An escalated operation of worker w over keys (or every key when all_keys). Fills *held with
  // the stripes it locked; pass it to end_multi(). keep_announced (key-locks; the worker's own
  // commands, never a thread that does not go offline between batches): the announcement stays
  // for the worker's next multi-key operation (invariant 6).
  void begin_multi(unsigned w, std::span<const std::string_view> keys, bool all_keys,
                   std::vector<std::uint32_t>* held);
  void end_multi(unsigned w, std::vector<std::uint32_t>* held, bool keep_announced = false);

  // Called by worker w's waits (for acknowledgements, a stripe, the world stripe, the gate) about
  // once a millisecond once they yield: the worker serves its other connections there while a
  // script runs past busy-reply-threshold (Worker::gate_wait_hook), as the script's own worker
  // does from the script. The hook must not run keyed commands (it would wait for the gate
  // inside a wait). Set before the worker runs commands; nullptr (the default) calls nothing.
  using WaitHook = void (*)(void* arg);
  void set_wait_hook(unsigned w, WaitHook hook, void* arg) {
    slots_[w].hook = hook;
    slots_[w].hook_arg = arg;
  }

  // Statistics (any thread; relaxed counters).
  std::uint64_t escalations() const;
  std::uint64_t slow_commands() const;

  static constexpr std::uint32_t kStripes = 4096;
  // The world stripe: last in the lock order. Every command under `stripes` loads it; it sits
  // 16 entries (64 bytes) past the last key stripe with 15 unused entries after it, so that no
  // key stripe's writes share its cache line, whatever the array's alignment.
  static constexpr std::uint32_t kWorld = kStripes + 16;
  static constexpr std::uint32_t kStripeSlots = kWorld + 16;  // entries allocated
  static std::uint32_t stripe_of(std::string_view key);

 private:
  static constexpr std::uint64_t kOffline = ~std::uint64_t{0};
  static constexpr std::uint32_t kNoStripe = ~std::uint32_t{0};
  // Stripe state: bit 31 = held exclusively, bits 16..30 = waiting exclusive lockers, bits 0..15 =
  // shared holders. New shared holders wait while an exclusive locker waits (no writer starvation).
  static constexpr std::uint32_t kHeld = 1u << 31;
  static constexpr std::uint32_t kWaitOne = 1u << 16;
  static constexpr std::uint32_t kReaders = 0xffffu;

  struct alignas(64) Slot {
    std::atomic<std::uint64_t> seen{kOffline};  // invariant 1
    std::uint64_t acked = 0;                    // worker-private copy of the last acknowledgement
    unsigned index = 0;
    bool announced = false;  // key-locks: an announcement kept past its operation (invariant 6)
    // stripes: the stripe this worker's running single-key command holds, or kNoStripe. Written
    // only by this worker, read by exclusive lockers (invariant 5).
    std::atomic<std::uint32_t> reading{kNoStripe};
    // key-locks, stripes: this worker holds (or is taking) key stripes. Written only by this
    // worker, read by keyspace-wide operations (invariant 7).
    std::atomic<bool> holding{false};
    WaitHook hook = nullptr;  // set_wait_hook(); worker-private
    void* hook_arg = nullptr;
    // Relaxed statistics, written only by the owning worker.
    std::atomic<std::uint64_t> escalations{0}, slow{0};
  };
  struct Stripe {
    std::atomic<std::uint32_t> state{0};
  };
  static_assert(sizeof(Stripe) == sizeof(std::uint32_t), "kWorld's padding counts 4-byte entries");

  // At a command boundary: acknowledges every announced escalation; true when one is active.
  bool boundary(Slot& me) {
    // acquire: pairs with the release part of the escalation's seq_ increment, so the active_
    // increment made before it is visible below (invariant 3).
    const std::uint64_t s = seq_.load(std::memory_order_acquire);
    if (s != me.acked) {
      me.acked = s;
      // release: every command this worker ran before happens before the escalation that reads
      // this acknowledgement (invariant 2).
      me.seen.store(s, std::memory_order_release);
    }
    return active_.load(std::memory_order_acquire) != 0;
  }
  int begin_single_slow(Slot& me, std::string_view key);
  // Ends an announcement kept by end_multi (invariant 6).
  void withdraw(Slot& me) {
    me.announced = false;
    // release: as in end_multi; the stripes already ordered the operations' writes.
    active_.fetch_sub(1, std::memory_order_release);
  }
  // stripes: the single-key fast path of invariant 5.
  int enter_stripe(Slot& me, std::uint32_t i) {
    // relaxed store, then the seq_cst fence: the store is ordered before the load below by the
    // fence, which pairs with the fence in lock_stripes() (invariant 5).
    me.reading.store(i, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // acquire: pairs with end_multi()'s release of the stripe, so the last exclusive holder's
    // writes are visible. Waiting exclusive lockers count as a lock (no writer starvation).
    if ((stripes_[i].state.load(std::memory_order_acquire) & ~kReaders) == 0 &&
        (stripes_[kWorld].state.load(std::memory_order_acquire) & ~kReaders) == 0)
      return kIndicator;
    // relaxed: withdrawing an indicator that let the command run nothing needs no ordering.
    me.reading.store(kNoStripe, std::memory_order_relaxed);
    me.slow.store(me.slow.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    enter_keys(me);
    return lock_shared(me, i);
  }
  // Sets me.holding once the world stripe is free (invariant 7); leave_keys() clears it.
  void enter_keys(Slot& me);
  void leave_keys(Slot& me) {
    // release: this worker's operation happens before a keyspace-wide operation that reads the
    // cleared flag (acquire, in lock_world()).
    me.holding.store(false, std::memory_order_release);
  }
  // A keyspace-wide operation: the world stripe exclusively, then no key stripe held elsewhere.
  void lock_world(Slot& me);
  // stripes: waits until no other worker's indicator names a stripe in held (sorted; the world
  // stripe stands for every stripe).
  void drain_indicators(Slot& me, const std::vector<std::uint32_t>& held);
  int lock_shared(Slot& me, std::uint32_t i);
  void lock_stripe(Slot& me, std::uint32_t i);
  void lock_stripes(Slot& me, std::span<const std::string_view> keys, bool all_keys,
                    std::vector<std::uint32_t>* held);
  // Spins (pause, then yield) until done() holds, acknowledging as it goes (invariant 4).
  template <class Done>
  void wait(Slot& me, Done&& done);
  // One round of a wait that has run `spins` times: pause, then yield and now and then run the
  // worker's wait hook.
  static void back_off(Slot& me, unsigned spins);

  Scheme scheme_;
  unsigned workers_;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<Stripe[]> stripes_;
  // Written only by escalations, read by every command: each on its own line.
  alignas(64) std::atomic<std::uint64_t> seq_{0};
  alignas(64) std::atomic<std::uint32_t> active_{0};
  alignas(64) std::atomic<bool> exclusive_{false};  // global: the one running escalation
};

}  // namespace kvlab::server

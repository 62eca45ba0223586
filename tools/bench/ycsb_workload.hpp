// YCSB's core workloads in process (`kvlab bench --workload ycsb-a` … `ycsb-f`): the load phase
// and the run phase of tools/bench/ycsb.hpp over one map backend, called directly (no virtual
// call), as templates instantiated in each backend's translation unit.
//
// A record is one value: a std::string of 10 fields × 100 bytes, the record number in its first
// 8 bytes (so a value can be checked against its key). Keys are YCSB's ("user" + |FNV(n)|).
//   read     find(key), touching the record
//   update   update(key, fn): the record with one field rewritten (an atomic read-modify-write
//            of the value, which is what writing one field of a record stored as one value is)
//   insert   insert(key of the next record number, record)
//   scan     range(start key, end of keyspace) stopped after 1..100 records (ordered backends
//            only: the CLI refuses ycsb-e for the others)
//   rmw      find(key) copying the record, then update(key, fn) writing one field
//
// Validation after the run: every loaded record is present with its own value, and the map
// holds the loaded records plus exactly the inserts that succeeded; an insert never meets an
// existing key; a read of a loaded record always finds it. Reads of records inserted during
// the run may race their insert (the choice lags the insert sequence by the thread count, not
// by acknowledged inserts): such misses are counted, not errors.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "structures/keyspace.hpp"
#include "tools/bench/harness.hpp"
#include "tools/bench/ycsb.hpp"

namespace kvlab::bench::detail {

struct alignas(128) YcsbThreadSlot {
  std::unique_ptr<ycsb::RequestStream> stream;
  std::uint64_t ops = 0, inserted = 0, failed_inserts = 0, lost_reads = 0, late_misses = 0;
  std::uint64_t bad_values = 0, scanned = 0, sink = 0;
  std::string pin_error;
};

inline std::string ycsb_record(std::uint64_t n) {
  std::string v(ycsb::kFieldCount * ycsb::kFieldLength, 'f');
  std::memcpy(v.data(), &n, sizeof n);
  return v;
}
inline bool ycsb_record_ok(const std::string& v, std::uint64_t n) {
  return v.size() == ycsb::kFieldCount * ycsb::kFieldLength && std::memcmp(v.data(), &n, 8) == 0;
}

template <class Map>
Measurement measure_ycsb(const BackendTraits& traits, unsigned threads, RunEnv& env) {
  const BenchConfig& c = env.config();
  const ycsb::Workload w = *ycsb::workload_by_name(c.ycsb);
  Measurement m;
  m.backend = std::string(traits.name);
  m.family = std::string(traits.family);
  m.threads = threads;
  const ThreadPlan& plan = env.plan(threads);
  if (!plan.ok) {
    m.invalid_reason = "placement: " + plan.error;
    return m;
  }
  release_free_memory();
  const std::size_t heap0 = heap_in_use(), rss0 = rss_bytes();
  MapOptions options;
  options.expected_keys = static_cast<std::size_t>(c.keys);
  auto map = std::make_unique<Map>(options);
  // The load phase: records 0 .. keys-1.
  {
    PrefillProgress progress(m.backend, c.keys, c.quiet);
    for (std::uint64_t n = 0; n < c.keys; ++n) {
      map->insert(ycsb::key_name(n), ycsb_record(n));
      progress.tick(n + 1);
    }
  }
  const std::size_t footprint = std::max(heap_in_use() > heap0 ? heap_in_use() - heap0 : 0,
                                         rss_bytes() > rss0 ? rss_bytes() - rss0 : 0);
  std::atomic<std::uint64_t> next_insert{c.keys};
  std::vector<YcsbThreadSlot> slots(threads);
  for (unsigned t = 0; t < threads; ++t)
    slots[t].stream = std::make_unique<ycsb::RequestStream>(
        w, c.keys, static_cast<std::uint64_t>(static_cast<double>(c.keys) * w.insert),
        0x5EED0000ull + t * 0x1000193ull);

  GbSpec spec;
  spec.name = m.backend + "@" + c.ycsb;
  spec.threads = threads;
  spec.reps = c.reps;
  spec.min_time_s = c.duration_s;
  spec.counters = c.counters;
  const GbStats s = run_gb(spec, [&](benchmark::State& state) {
    const unsigned ti = static_cast<unsigned>(state.thread_index());
    YcsbThreadSlot& slot = slots[ti];
    if (std::string err; !RunEnv::pin(plan, ti, &err)) {
      slot.pin_error = err;
      state.SkipWithError("placement failed");
      return;
    }
    Map& mp = *map;
    QuiescentTicker ticker(!c.epoch_guards);
    if (!c.epoch_guards) reclaim::online();
    std::uint64_t sink = 0;
    std::uint64_t until_check = 1024;
    for (auto _ : state) {
      ticker.tick();
      if (--until_check == 0) {
        until_check = 1024;
        if (stop_requested()) {
          state.SkipWithError("interrupted");
          break;
        }
      }
      // Relaxed: the counter only hands out distinct record numbers; reads lag it (see above).
      const std::uint64_t next = next_insert.load(std::memory_order_relaxed);
      const std::uint64_t visible = next > c.keys + threads ? next - threads : c.keys;
      const ycsb::Request q = slot.stream->next(
          visible, [&] { return next_insert.fetch_add(1, std::memory_order_relaxed); });
      const std::string key = ycsb::key_name(q.record);
      switch (q.op) {
        case ycsb::Op::kRead: {
          const bool found = mp.find(key, [&](const std::string& v) {
            slot.bad_values += !ycsb_record_ok(v, q.record);
            sink += static_cast<unsigned char>(v[v.size() - 1]);
          });
          if (!found) ++(q.record < c.keys ? slot.lost_reads : slot.late_misses);
          break;
        }
        case ycsb::Op::kUpdate:
        case ycsb::Op::kReadModifyWrite: {
          if (q.op == ycsb::Op::kReadModifyWrite) {
            std::string copy;
            mp.find(key, [&](const std::string& v) { copy = v; });
            sink += copy.size();
          }
          const unsigned at = q.field * ycsb::kFieldLength;
          mp.update(key, [&](const std::string* cur) {
            if (cur == nullptr) return Update<std::string>::keep();
            std::string v = *cur;
            std::memset(v.data() + (at == 0 ? 8 : at), 'u', ycsb::kFieldLength - (at == 0 ? 8 : 0));
            return Update<std::string>::assign(std::move(v));
          });
          break;
        }
        case ycsb::Op::kInsert:
          if (mp.insert(key, ycsb_record(q.record))) {
            ++slot.inserted;
          } else {
            ++slot.failed_inserts;
          }
          break;
        case ycsb::Op::kScan:
          if constexpr (OrderedMap<Map>) {
            unsigned left = q.scan_length;
            mp.range(key, std::string_view("\xff\xff\xff\xff", 4),
                     [&](std::string_view, const std::string& v) {
                       sink += static_cast<unsigned char>(v[8]);
                       ++slot.scanned;
                       return --left > 0;
                     });
          }
          break;
      }
    }
    if (!c.epoch_guards) reclaim::offline();
    benchmark::DoNotOptimize(sink);
    slot.sink += sink;
    slot.ops += state.iterations();
    state.counters["ops"] =
        benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  });

  std::uint64_t inserted = 0, failed = 0, lost = 0, bad = 0, late = 0;
  std::string why;
  for (const auto& sl : slots) {
    if (!sl.pin_error.empty()) why = "placement failed: " + sl.pin_error;
    m.ops += sl.ops;
    inserted += sl.inserted;
    failed += sl.failed_inserts;
    lost += sl.lost_reads;
    bad += sl.bad_values;
    late += sl.late_misses;
  }
  if (why.empty() && failed) why = std::to_string(failed) + " inserts met an existing key";
  if (why.empty() && lost) why = std::to_string(lost) + " reads missed a loaded record";
  if (why.empty() && bad) why = std::to_string(bad) + " reads saw another record's value";
  if (why.empty()) {
    std::uint64_t present = 0, wrong = 0;
    map->for_each([&](std::string_view, const std::string& v) {
      ++present;
      std::uint64_t n;
      std::memcpy(&n, v.data(), 8);
      wrong += v.size() != ycsb::kFieldCount * ycsb::kFieldLength || n >= next_insert.load();
    });
    if (present != c.keys + inserted)
      why = "holds " + std::to_string(present) + " records, expected " +
            std::to_string(c.keys + inserted) + " (loaded + inserted)";
    else if (wrong)
      why = std::to_string(wrong) + " records hold a value no insert wrote";
  }
  if (why.empty() && !s.ok) why = s.error;
  m.footprint_bytes = footprint;
  env.note_footprint(footprint);
  m.cpu_share = s.cpu_share;
  m.reps = s.reps;
  m.rep_values = s.values;
  m.counters = s.counters;
  if (late) m.note = std::to_string(late) + " reads raced their record's insert";
  map.reset();
  release_free_memory();
  if (why.empty()) {
    m.valid = true;
    m.mops = s.median;
    m.mops_min = s.min;
    m.mops_max = s.max;
  } else {
    m.invalid_reason = why;
  }
  return m;
}

// Every YCSB measurement for map backend template B over the configured thread counts.
template <template <class> class B>
std::vector<Measurement> run_ycsb_backend(RunEnv& env) {
  using M = B<std::string>;
  std::vector<Measurement> out;
  for (unsigned t : env.config().threads) {
    if (stop_requested()) break;
    Measurement d = measure_ycsb<M>(M::kTraits, t, env);
    if (stop_requested()) break;  // interrupted during the run: dropped
    env.report(d);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace kvlab::bench::detail

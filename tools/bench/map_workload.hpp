// The map workload: prefill, the timed mix of finds/inserts/erases, and the validation, as
// templates over the map type so that the timed loop calls the backend directly (no virtual
// call). With M = AnyKeyspace<V> the same code measures the virtual boundary (--via-adapter).
//
// Validation invariant (checked after every benchmark instance, estimation runs included):
//   keys present   == prefilled + Σ successful inserts − Σ successful erases
//   Σ key indexes  == prefill sum + Σ indexes inserted − Σ indexes erased   (mod 2^64)
//   every present key decodes to an index < keys and holds value_tag(index)
//   size_approx()  == keys present (the map is quiescent)
//   no find ever saw a value other than value_tag(its key)
// A backend that loses, duplicates or corrupts a key, or lies about an insert or erase, breaks
// one of these; the measurement is then reported invalid and carries no number.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "structures/any_keyspace.hpp"
#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"
#include "tools/bench/bench.hpp"
#include "tools/bench/harness.hpp"
#include "tools/bench/ycsb_workload.hpp"
#include "tools/bench/zipf.hpp"

namespace kvlab::bench::detail {

// One cache line pair per thread so that counters of neighbours never share a line (adjacent-line
// prefetch included).
struct alignas(128) MapThreadSlot {
  Rng rng{0};
  bool seeded = false;
  std::uint64_t ops = 0;
  std::uint64_t inserts = 0, insert_sum = 0;
  std::uint64_t erases = 0, erase_sum = 0;
  std::uint64_t bad_values = 0;
  std::uint64_t sink = 0;
  std::string pin_error;
};

// The operation mix as thresholds on a 32-bit roll.
struct OpMix {
  std::uint32_t insert_below = 0;  // roll < insert_below: insert
  std::uint32_t erase_below = 0;   // insert_below <= roll < erase_below: erase (or assign)
  static OpMix from_update_pct(double pct) {
    const double scale = 4294967296.0 / 100.0;
    OpMix m;
    m.insert_below = static_cast<std::uint32_t>(std::min(4294967295.0, pct / 2 * scale));
    m.erase_below = static_cast<std::uint32_t>(std::min(4294967295.0, pct * scale));
    return m;
  }
};

// Picks key indexes: uniform, or Zipf ranks scrambled over the key space.
class KeyPicker {
 public:
  explicit KeyPicker(const BenchConfig& c)
      : keys_(c.keys),
        zipf_(c.dist.zipf ? std::optional<ZipfSampler>(std::in_place, c.keys, c.dist.theta)
                          : std::nullopt),
        prime_(c.dist.zipf ? scramble_prime(c.keys) : 1) {}
  std::uint64_t next(Rng& rng) const {
    if (!zipf_) return rng.below(keys_);
    const std::uint64_t rank = zipf_->sample([&] { return rng.unit(); });
    return static_cast<std::uint64_t>((static_cast<U128>(rank - 1) * prime_) % keys_);
  }

 private:
  std::uint64_t keys_;
  std::optional<ZipfSampler> zipf_;
  std::uint64_t prime_;
};

// Is key i in the initial prefill? A fixed hash of i against the prefill fraction, so every run
// of every backend starts from the same key set.
inline bool in_prefill(std::uint64_t i, double prefill) {
  std::uint64_t x = i ^ 0xA0761D6478BD642Full;
  return static_cast<double>(Rng::splitmix(x) >> 11) * 0x1.0p-53 < prefill;
}

template <class Map>
struct MapRun {
  std::unique_ptr<Map> map;
  std::vector<MapThreadSlot> slots;
  std::uint64_t prefilled = 0, prefill_sum = 0;
  std::size_t footprint = 0;
};

// The timed loop of one benchmark thread. REQUIRES: slot belongs to this thread alone.
template <class V, class Map>
void map_thread_body(benchmark::State& state, Map& map, MapThreadSlot& slot, const BenchConfig& c,
                     const KeyPicker& picker, bool erase_as_assign, const ThreadPlan& plan) {
  const unsigned ti = static_cast<unsigned>(state.thread_index());
  if (std::string err; !RunEnv::pin(plan, ti, &err)) {
    slot.pin_error = err;
    state.SkipWithError("placement failed");
    return;
  }
  if (!slot.seeded) {
    slot.rng = Rng(0x5EED0000ull + ti * 0x1000193ull);
    slot.seeded = true;
  }
  const KeyCodec codec(c.key_size);
  char key_buf[256];
  codec.prepare(key_buf);
  const std::string_view key(key_buf, c.key_size);
  V value = ValueOps<V>::make(c.value_size);
  const OpMix mix = OpMix::from_update_pct(c.update_pct);
  const unsigned vs = c.value_size;

  Rng rng = slot.rng;
  std::uint64_t inserts = 0, insert_sum = 0, erases = 0, erase_sum = 0, bad = 0, sink = 0;
  // Epoch reclamation in QSBR mode (QuiescentTicker): the own structures' guards then cost a
  // thread-local branch instead of a fence per operation. Backends that do not use
  // structures/reclaim are unaffected. --epoch-guards measures the per-operation guard instead.
  const bool qsbr = !c.epoch_guards;
  QuiescentTicker ticker(qsbr);
  if (qsbr) reclaim::online();
  // --batch: the window's operations are drawn ahead (the same random sequence as without it),
  // their keys encoded side by side, and handed to the backend's prefetch hint when it has one.
  const unsigned batch = c.batch;
  constexpr unsigned kMaxBatch = 32;
  std::uint32_t rolls[kMaxBatch];
  std::uint64_t indexes[kMaxBatch];
  std::vector<char> window_keys(batch > 1 ? std::size_t{kMaxBatch} * c.key_size : 0);
  std::string_view views[kMaxBatch];
  unsigned at = batch;  // next operation of the window; == batch: draw a new window
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
    std::uint32_t roll;
    std::uint64_t i;
    if (batch == 1) {
      roll = static_cast<std::uint32_t>(rng.next() >> 32);
      i = picker.next(rng);
    } else {
      if (at == batch) {
        for (unsigned j = 0; j < batch; ++j) {
          rolls[j] = static_cast<std::uint32_t>(rng.next() >> 32);
          indexes[j] = picker.next(rng);
          char* kb = window_keys.data() + std::size_t{j} * c.key_size;
          codec.prepare(kb);
          codec.encode(indexes[j], kb);
          views[j] = std::string_view(kb, c.key_size);
        }
        if constexpr (requires {
                        map.prefetch(std::span<const std::string_view>(views, batch),
                                     [](const V&) {});
                      }) {
          map.prefetch(std::span<const std::string_view>(views, batch), [](const V&) {});
        }
        at = 0;
      }
      roll = rolls[at];
      i = indexes[at];
      ++at;
    }
    codec.encode(i, key_buf);
    if (roll < mix.insert_below) {
      ValueOps<V>::stamp(value, value_tag(i));
      if (map.insert(key, value)) {
        ++inserts;
        insert_sum += i;
      }
    } else if (roll < mix.erase_below) {
      if (erase_as_assign) {
        ValueOps<V>::stamp(value, value_tag(i));
        if (map.insert_or_assign(key, value)) {
          ++inserts;
          insert_sum += i;
        }
      } else if (map.erase(key)) {
        ++erases;
        erase_sum += i;
      }
    } else {
      const std::uint64_t tag = value_tag(i);
      map.find(key, [&](const V& v) {
        bad += !ValueOps<V>::check(v, tag, vs);
        ++sink;
      });
    }
  }
  if (qsbr) reclaim::offline();
  benchmark::DoNotOptimize(sink);
  state.counters["ops"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  slot.rng = rng;
  slot.ops += state.iterations();
  slot.inserts += inserts;
  slot.insert_sum += insert_sum;
  slot.erases += erases;
  slot.erase_sum += erase_sum;
  slot.bad_values += bad;
  slot.sink += sink;
}

// Checks the invariant above; returns "" when it holds, else the first violation.
template <class V, class Map>
std::string validate_map(Map& map, const MapRun<Map>& run, const BenchConfig& c) {
  std::uint64_t expect_n = run.prefilled, expect_sum = run.prefill_sum, bad_finds = 0;
  for (const auto& s : run.slots) {
    if (!s.pin_error.empty()) return "placement failed: " + s.pin_error;
    expect_n += s.inserts - s.erases;
    expect_sum += s.insert_sum - s.erase_sum;
    bad_finds += s.bad_values;
  }
  if (bad_finds) return std::to_string(bad_finds) + " finds saw a value not stored for their key";
  const KeyCodec codec(c.key_size);
  std::uint64_t n = 0, sum = 0, foreign = 0, wrong_value = 0;
  map.for_each([&](std::string_view k, const V& v) {
    std::uint64_t i = 0;
    if (!codec.decode(k, &i) || i >= c.keys) {
      ++foreign;
      return;
    }
    ++n;
    sum += i;
    wrong_value += !ValueOps<V>::check(v, value_tag(i), c.value_size);
  });
  if (foreign) return std::to_string(foreign) + " keys that the workload never wrote";
  if (wrong_value) return std::to_string(wrong_value) + " keys hold a value not stored for them";
  if (n != expect_n)
    return "size " + std::to_string(n) + " != expected " + std::to_string(expect_n) +
           " (prefill + successful inserts - successful erases)";
  if (sum != expect_sum) return "key-sum mismatch (a key was lost, duplicated or replaced)";
  const std::size_t approx = map.size_approx();
  if (approx != n)
    return "size_approx() " + std::to_string(approx) + " != " + std::to_string(n) + " keys present";
  return {};
}

// Runs one (backend, threads) measurement: fresh map, prefill, Google Benchmark repetitions,
// validation. `make` returns std::unique_ptr<Map>; traits are the backend's.
template <class V, class Map, class Make>
Measurement measure_map(const BackendTraits& traits, Make&& make, unsigned threads,
                        bool via_adapter, RunEnv& env) {
  const BenchConfig& c = env.config();
  Measurement m;
  m.backend = std::string(traits.name);
  m.family = std::string(traits.family);
  m.threads = threads;
  m.via_adapter = via_adapter;
  const bool erase_as_assign = !traits.concurrent_erase && c.update_pct > 0;
  if (erase_as_assign) m.note = "erase->assign: no concurrent erase";

  const ThreadPlan& plan = env.plan(threads);
  if (!plan.ok) {
    m.invalid_reason = "placement: " + plan.error;
    return m;
  }

  // Footprint: heap bytes in use and RSS, before construction and after the prefill.
  release_free_memory();
  const std::size_t heap0 = heap_in_use(), rss0 = rss_bytes();
  MapRun<Map> run;
  MapOptions options;
  options.expected_keys = static_cast<std::size_t>(c.keys);
  run.map = make(options);
  {
    const KeyCodec codec(c.key_size);
    char key_buf[256];
    codec.prepare(key_buf);
    V value = ValueOps<V>::make(c.value_size);
    PrefillProgress progress(m.backend, c.keys, c.quiet);
    for (std::uint64_t i = 0; i < c.keys; ++i) {
      progress.tick(i + 1);
      if (!in_prefill(i, c.prefill)) continue;
      codec.encode(i, key_buf);
      ValueOps<V>::stamp(value, value_tag(i));
      if (run.map->insert(std::string_view(key_buf, c.key_size), value)) {
        ++run.prefilled;
        run.prefill_sum += i;
      }
    }
  }
  auto footprint_now = [&] {
    const std::size_t heap = heap_in_use(), rss = rss_bytes();
    return std::max(heap > heap0 ? heap - heap0 : 0, rss > rss0 ? rss - rss0 : 0);
  };
  run.footprint = footprint_now();
  run.slots.resize(threads);

  const KeyPicker picker(c);
  Map& map = *run.map;
  GbSpec spec;
  spec.name = m.backend + (via_adapter ? "@adapter" : "");
  spec.threads = threads;
  spec.reps = c.reps;
  spec.min_time_s = c.duration_s;
  spec.counters = c.counters;
  const GbStats s = run_gb(spec, [&](benchmark::State& state) {
    map_thread_body<V>(state, map, run.slots[static_cast<unsigned>(state.thread_index())], c,
                       picker, erase_as_assign, plan);
  });

  for (const auto& sl : run.slots) m.ops += sl.ops;
  m.cpu_share = s.cpu_share;
  std::string why = validate_map<V>(map, run, c);
  if (why.empty() && !s.ok) why = s.error;
  run.footprint = std::max(run.footprint, footprint_now());
  m.footprint_bytes = run.footprint;
  env.note_footprint(run.footprint);
  run.map.reset();
  release_free_memory();
  if (why.empty()) {
    m.valid = true;
    m.mops = s.median;
    m.mops_min = s.min;
    m.mops_max = s.max;
    m.reps = s.reps;
  } else {
    m.invalid_reason = why;
    m.reps = s.reps;
  }
  m.rep_values = s.values;
  m.counters = s.counters;
  return m;
}

// Every measurement for map backend template B over the configured thread counts.
template <template <class> class B>
std::vector<Measurement> run_map_backend(RunEnv& env) {
  const BenchConfig& c = env.config();
  if (!c.ycsb.empty()) return run_ycsb_backend<B>(env);
  std::vector<Measurement> out;
  auto one = [&]<class V>() {
    using M = B<V>;
    for (unsigned t : c.threads) {
      if (stop_requested()) break;
      Measurement d = measure_map<V, M>(
          M::kTraits, [](const MapOptions& o) { return std::make_unique<M>(o); }, t, false, env);
      if (stop_requested()) break;  // interrupted during the run: dropped
      env.report(d);
      out.push_back(std::move(d));
      if (c.via_adapter && !stop_requested()) {
        Measurement a = measure_map<V, AnyKeyspace<V>>(
            M::kTraits,
            [](const MapOptions& o) -> std::unique_ptr<AnyKeyspace<V>> {
              return std::make_unique<KeyspaceAdapter<M>>(o);
            },
            t, true, env);
        if (stop_requested()) break;
        env.report(a);
        out.push_back(std::move(a));
      }
    }
  };
  if (c.value_size <= 8) {
    one.template operator()<std::uint64_t>();
  } else {
    one.template operator()<std::string>();
  }
  return out;
}

}  // namespace kvlab::bench::detail

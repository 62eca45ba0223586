// Core-to-core latency: two threads pinned to two PUs bounce one cache line; half the round trip
// is the one-way latency of moving that line between the two cores' caches.
//
// Reported per relationship class (SMT sibling, same L3, same die, same NUMA node, same package,
// other package) with one representative pair each, or as a full matrix over the allowed PUs.
// The run is bounded by ProfileOptions::max_seconds: batches not finished in time are dropped and
// reported. Classes with no pair of allowed PUs are reported as not measurable, with the reason.
//
// Thread safety: profile() starts and joins its own two threads; call it from one thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace kvlab::topo {

struct ProfileOptions {
  bool matrix = false;       // all pairs instead of one pair per class
  unsigned iters = 20000;    // round trips per pair, split into `batches`
  unsigned batches = 100;    // short batches: a preempted one is an outlier the median ignores
  double max_seconds = 5.0;  // wall-clock bound for the whole profile
};

struct PairLatency {
  unsigned a = 0;
  unsigned b = 0;
  bool measured = false;
  double median_ns = 0;  // one-way, median over batches
  double p10_ns = 0;     // spread over batches: 10th and 90th percentile
  double p90_ns = 0;
  double min_ns = 0;
  double max_ns = 0;
  unsigned batches = 0;  // batches completed
};

struct ClassLatency {
  std::string
      name;  // "smt_sibling", "same_l3", "same_die", "same_numa", "same_package", "other_package"
  bool available = false;  // a pair of allowed PUs exists in this class
  PairLatency pair;
  std::string note;  // why it is not measured, when it is not
};

struct ProfileResult {
  bool ok = false;
  std::string error;
  std::vector<ClassLatency> classes;  // classes mode
  std::vector<unsigned> cpus;         // matrix mode: the PUs, matrix order
  std::vector<std::vector<std::optional<double>>>
      matrix_ns;  // median one-way ns, nullopt = not measured
  std::vector<std::string> notes;
  double elapsed_s = 0;
};

// The relationship class of two distinct PUs of the model.
std::string pair_class(const Model& model, unsigned a, unsigned b);

// Runs the measurement on the live machine (refuses for a model that is not this machine).
ProfileResult profile(const Model& model, const ProfileOptions& options);

std::string profile_text(const Model& model, const ProfileResult& result);
std::string profile_json(const Model& model, const ProfileResult& result,
                         const ProfileOptions& options);

// Writes the live topology as XML with the measured latencies added as a PU distance matrix
// ("CoreToCoreLatencyNs", user-provided latency). Classes mode gives every pair its class median.
// Returns false and fills *error when some pair has no value or hwloc refuses.
bool export_profile_xml(const Model& model, const ProfileResult& result, const std::string& path,
                        std::string* error);

}  // namespace kvlab::topo

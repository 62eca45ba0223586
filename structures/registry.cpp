// The registry table, taken from the compile-time lists in backends.hpp so that the two cannot
// drift apart. This is the one translation unit of the library that instantiates every backend.
#include "structures/registry.hpp"

#include <array>
#include <cstdio>
#include <string>

#include "structures/backends.hpp"
#include "structures/common/json.hpp"

namespace kvlab {
namespace {

template <class... Ts>
constexpr auto traits_of(TypeList<Ts...>) {
  return std::array<BackendTraits, sizeof...(Ts)>{Ts::kTraits...};
}

constexpr auto kMaps = traits_of(MapBackends<int>{});
constexpr auto kQueues = traits_of(QueueBackends<int>{});

constexpr auto make_table() {
  std::array<BackendTraits, kMaps.size() + kQueues.size()> t{};
  std::size_t i = 0;
  for (const auto& m : kMaps) t[i++] = m;
  for (const auto& q : kQueues) t[i++] = q;
  return t;
}
constexpr auto kTable = make_table();

std::string capabilities(const BackendTraits& t) {
  std::string out;
  auto add = [&](bool on, const char* word) {
    if (!on) return;
    if (!out.empty()) out += ",";
    out += word;
  };
  if (t.family == "queue") {
    add(t.fifo, "fifo");
    add(!t.fifo, "quasi-fifo");
    add(t.bounded, "bounded");
    add(!t.bounded, "unbounded");
    add(t.single_consumer, "single-consumer");
  } else {
    add(t.concurrent_erase, "concurrent_erase");
    add(!t.concurrent_erase, "NO-concurrent-erase");
    add(t.ordered, "ordered");
    add(t.resizable, "resizable");
    add(!t.concurrent_for_each, "quiescent-for_each");
  }
  return out;
}

std::string pad(std::string_view s, std::size_t width) {
  std::string out(s);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

}  // namespace

std::span<const BackendTraits> registered_backends() { return kTable; }

const BackendTraits* find_backend(std::string_view name) {
  for (const auto& t : kTable) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<const BackendTraits*> select_backends(std::string_view spec, std::string* error) {
  std::vector<const BackendTraits*> out;
  auto add = [&](const BackendTraits* t) {
    for (auto* seen : out) {
      if (seen == t) return;
    }
    out.push_back(t);
  };
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view word = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (word.empty()) continue;
    bool matched = false;
    for (const auto& t : kTable) {
      const bool hit = word == "all" || t.name == word || t.family == word ||
                       (word == "map" && t.family != "queue");
      if (hit) {
        add(&t);
        matched = true;
      }
    }
    if (!matched) {
      if (error) {
        *error = "unknown backend or family '" + std::string(word) +
                 "' (try `kvlab backends`; families: hash, skiplist, map, queue, all)";
      }
      return {};
    }
  }
  if (out.empty() && error) *error = "no backend selected";
  return out;
}

std::string format_backend_table(TableFormat format) {
  std::string out;
  switch (format) {
    case TableFormat::json: {
      out = "[\n";
      for (std::size_t i = 0; i < kTable.size(); ++i) {
        const auto& t = kTable[i];
        auto b = [](bool v) { return v ? "true" : "false"; };
        out += "  {\"name\": " + json_string(t.name) + ", \"family\": " +
               json_string(t.family) + ", \"progress\": " + json_string(to_string(t.progress)) +
               ", \"reclamation\": " + json_string(to_string(t.reclamation)) +
               ", \"reference\": " + json_string(t.reference) +
               ", \"summary\": " + json_string(t.summary) + ", \"capabilities\": {\"concurrent_erase\": " + b(t.concurrent_erase) +
               ", \"ordered\": " + b(t.ordered) + ", \"resizable\": " + b(t.resizable) +
               ", \"fifo\": " + b(t.fifo) + ", \"bounded\": " + b(t.bounded) +
               ", \"single_consumer\": " + b(t.single_consumer) +
               ", \"concurrent_for_each\": " + b(t.concurrent_for_each) +
               ", \"atomic_update_native\": " + b(t.atomic_update_native) + "}}";
        out += i + 1 < kTable.size() ? ",\n" : "\n";
      }
      out += "]\n";
      break;
    }
    case TableFormat::markdown: {
      out = "| backend | progress | reclamation | capabilities | reference | notes |\n";
      out += "|---|---|---|---|---|---|\n";
      for (const auto& t : kTable) {
        out += "| `" + std::string(t.name) + "` | " + std::string(to_string(t.progress)) + " | " +
               std::string(to_string(t.reclamation)) + " | " + capabilities(t) + " | " +
               std::string(t.reference) + " | " + std::string(t.summary) + " |\n";
      }
      break;
    }
    case TableFormat::text: {
      out = pad("BACKEND", 22) + pad("PROGRESS", 11) + pad("RECLAMATION", 19) + "CAPABILITIES\n";
      for (const auto& t : kTable) {
        out += pad(t.name, 22) + pad(to_string(t.progress), 11) + pad(to_string(t.reclamation), 19) +
               capabilities(t) + "\n";
        out += pad("", 22) + std::string(t.summary) + "; " + std::string(t.reference) + "\n";
      }
      break;
    }
  }
  return out;
}

std::string_view default_map_backend() { return "hash/kvlab"; }

std::unique_ptr<AnyKeyspace<std::string>> make_string_keyspace(std::string_view name,
                                                               const MapOptions& options) {
  return make_keyspace<std::string>(name, options);
}

}  // namespace kvlab

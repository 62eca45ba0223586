// The backend registry: an explicit table (no static self-registration) of every map and queue
// backend, its declared traits, and a factory. `kvlab backends` prints it, the README's backend
// table is generated from it, and the server picks its keyspace from it by name.
//
// Compile-time dispatch (for benchmarks and typed tests, no virtual calls) lives in
// structures/backends.hpp, which includes every backend header; include it only where needed.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "structures/any_keyspace.hpp"
#include "structures/keyspace.hpp"

namespace kvlab {

// Every registered backend, maps first (hash, skiplist), then queues, in table order.
std::span<const BackendTraits> registered_backends();

// nullptr when no backend has that name.
const BackendTraits* find_backend(std::string_view name);

// Resolves a selection: "all", a family ("hash", "skiplist", "queue", "map" = hash+skiplist), or
// a comma-separated list of names and families. Unknown words fill *error and return {}.
std::vector<const BackendTraits*> select_backends(std::string_view spec, std::string* error);

enum class TableFormat { text, json, markdown };
std::string format_backend_table(TableFormat format);

// The map backend the server uses when none is named: hash/kvlab, the fastest map that passes the
// conformance suite, lincheck and both sanitizers (papers/own-structures.md has the numbers).
std::string_view default_map_backend();

// A keyspace with std::string values behind the virtual boundary; nullptr for an unknown name or
// a queue name. Other value types: make_keyspace<V>() in structures/backends.hpp.
std::unique_ptr<AnyKeyspace<std::string>> make_string_keyspace(std::string_view name,
                                                               const MapOptions& options = {});

}  // namespace kvlab

// The only server translation unit that instantiates the backends (see keyspace_factory.hpp).
#include "server/keyspace_factory.hpp"

#include "structures/backends.hpp"

namespace kvlab::server {

std::unique_ptr<AnyKeyspace<Value>> make_value_keyspace(std::string_view backend,
                                                        std::size_t expected_keys) {
  MapOptions options;
  options.expected_keys = expected_keys;
  return make_keyspace<Value>(backend, options);
}

}  // namespace kvlab::server

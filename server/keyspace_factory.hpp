// Creates the server's keyspace (values of type server::Value) by backend name. The one
// translation unit that includes structures/backends.hpp (libcds + TBB, slow to compile) is
// keyspace_factory.cpp; everything else sees only the virtual AnyKeyspace<Value>.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "server/object.hpp"
#include "structures/any_keyspace.hpp"

namespace kvlab::server {

// nullptr for an unknown name or a queue backend.
std::unique_ptr<AnyKeyspace<Value>> make_value_keyspace(std::string_view backend,
                                                        std::size_t expected_keys);

}  // namespace kvlab::server

// Creates the server's keyspace (values of type server::Value) and its pub/sub inboxes by backend
// name. The one translation unit that includes structures/backends.hpp (libcds + TBB, slow to
// compile) is keyspace_factory.cpp; everything else sees only the virtual AnyKeyspace<Value> and
// MessageQueue.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "server/util/message_queue.hpp"
#include "server/data/object.hpp"
#include "structures/any_keyspace.hpp"

namespace kvlab::server {

// nullptr for an unknown name or a queue backend.
std::unique_ptr<AnyKeyspace<Value>> make_value_keyspace(std::string_view backend,
                                                        std::size_t expected_keys);

// A queue of pointers on the queue backend `name`; nullptr for an unknown name or a map backend.
// `capacity` applies to bounded backends only (rounded up to a power of two by them).
std::unique_ptr<MessageQueue> make_message_queue(std::string_view name, std::size_t capacity);

}  // namespace kvlab::server

// A type-erased multi-producer queue of pointers: the per-worker inbox through which pub/sub
// messages travel to the worker that owns the subscriber's connection.
//
// Any registered queue backend (`--queue NAME`, structures/backends.hpp) can sit behind this
// interface; make_message_queue() in keyspace_factory.cpp is the one place that instantiates them,
// so this header stays light (no libcds, no TBB).
//
// Thread safety: push() from any thread. try_pop() from one thread at a time: the server gives
// every inbox exactly one consumer (its worker; at shutdown the worker's destructor, after the
// thread has joined), which is what single-consumer backends (queue/kvlab-mpsc) require.
// Capacity: a bounded backend (traits().bounded, e.g. queue/cds-vyukov) may refuse a push when
// full; the caller keeps the item elsewhere (Worker keeps an overflow list) and never drops it.
#pragma once

#include <cstddef>

#include "structures/keyspace.hpp"

namespace kvlab::server {

class MessageQueue {
 public:
  virtual ~MessageQueue() = default;
  // REQUIRES: item != nullptr. False only when a bounded queue is full.
  virtual bool push(void* item) = 0;
  // nullptr when empty. REQUIRES: one consumer thread at a time.
  virtual void* try_pop() = 0;
  virtual std::size_t size_approx() = 0;
  virtual const BackendTraits& traits() const = 0;
};

}  // namespace kvlab::server

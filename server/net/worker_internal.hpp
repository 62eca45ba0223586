// What worker.cpp, worker_lifecycle.cpp and worker_messages.cpp share besides the Worker class:
// the epoll tags, the batch limits and socket-address helpers. Not for use outside these files.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "server/core/command_util.hpp"
#include "server/net/worker.hpp"

namespace kvlab::server {

inline constexpr int kMaxEvents = 256;

// Inbox batches delivered per loop iteration before the worker serves sockets again.
inline constexpr int kMaxDrainBatches = 4096;

// epoll user data for the two non-connection descriptors (connections use their Connection*).
extern char g_listen_tag;

extern char g_wake_tag;

}  // namespace kvlab::server

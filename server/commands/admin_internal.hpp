// What admin.cpp (connection and server commands), client.cpp (CLIENT) and info.cpp (INFO)
// share: the handlers admin.cpp's command table names and the helpers more than one of them uses.
// Not for use outside these three files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/commands/common.hpp"

namespace kvlab::server {

inline constexpr std::string_view kRedisCompatVersion = "7.0.0";

// Client names and library attributes: printable ASCII without blanks, as Redis requires.
bool valid_client_word(std::string_view s);

void set_client_name(CommandContext& ctx, std::string_view name);

void client_id_cmd(CommandContext& ctx);

void client_setname_cmd(CommandContext& ctx);

void client_getname_cmd(CommandContext& ctx);

void client_setinfo_cmd(CommandContext& ctx);

void client_list_cmd(CommandContext& ctx);

void client_info_cmd(CommandContext& ctx);

// CLIENT NO-EVICT ON|OFF: whether maxmemory-clients may choose this connection
// (Worker::evict_clients); its memory counts towards the limit either way, as in Redis.
void client_no_evict_cmd(CommandContext& ctx);

void client_noop_ok_cmd(CommandContext& ctx);

// CLIENT KILL addr:port (the old form: OK, or "No such client")
// CLIENT KILL [ID id] [TYPE normal|master|replica|slave|pubsub] [USER name] [ADDR addr:port]
//             [LADDR addr:port] [SKIPME yes|no]  (every filter must match; answers the count)
// As Redis 7.0, with its error texts. The caller closes after this reply when it kills itself;
// any other client is closed by its own worker (Worker::post_kill), its pending output dropped.
// kvlab has no replicas and one user, "default", which every client is.
void client_kill_cmd(CommandContext& ctx);

// CLIENT REPLY ON|OFF|SKIP: OFF and SKIP answer nothing; SKIP while OFF changes nothing (Redis).
void client_reply_cmd(CommandContext& ctx);

// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
void client_unblock_cmd(CommandContext& ctx);

// CLIENT PAUSE timeout [WRITE|ALL] (Redis 7.0): the mode is checked before the timeout; the end
// is now + timeout, wrapping as Redis's does (a wrapped end is in the past and pauses nothing);
// timeout 0 pauses nothing either. It runs keyspace-wide (see postpone_if_paused in
// net/dispatch.cpp): once it answers, no command of the paused class runs until the end.
void client_pause_cmd(CommandContext& ctx);

void client_unpause_cmd(CommandContext& ctx);

void client_help_cmd(CommandContext& ctx);

void info_cmd(CommandContext& ctx);

}  // namespace kvlab::server

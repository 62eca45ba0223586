// What zsets.cpp and zsets_algebra.cpp share: the skiplist's node type, storing a result, and the
// algebra's handlers that the family's table in zsets.cpp names. Not for use outside these files.
#pragma once

#include <cstdint>
#include <string_view>

#include "server/commands/common.hpp"
#include "server/commands/containers.hpp"
#include "server/data/zset.hpp"

namespace kvlab::server {

using Node = ZSkipList::Node;

// Publishes a fresh sorted set at dst (overwriting any value and its TTL), or deletes dst when
// the result is empty, as Redis's STORE forms do. Replies the result's cardinality. event: the
// keyspace notification of a store ("del" when it deletes a key that existed).
void store_zset(CommandContext& ctx, std::string_view dst, ObjectRef result,
                std::string_view event);

void zunion_cmd(CommandContext& ctx);

void zinter_cmd(CommandContext& ctx);

void zdiff_cmd(CommandContext& ctx);

void zunionstore_cmd(CommandContext& ctx);

void zinterstore_cmd(CommandContext& ctx);

void zdiffstore_cmd(CommandContext& ctx);

void zintercard_cmd(CommandContext& ctx);

}  // namespace kvlab::server

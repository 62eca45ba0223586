// Redis Cluster client side of kvlab load (--cluster): key slots, the slot map read from any node
// and the MOVED/ASK redirections, as the Redis Cluster specification defines them.
//
//  - A key's slot is CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the key modulo 16384;
//    when the key holds a "{...}" with at least one byte between the first "{" and the next "}",
//    only those bytes are hashed (hash tags).
//  - The map comes from CLUSTER SLOTS (Redis 7.0 and kvlab-server both answer it; CLUSTER SHARDS
//    is not read): for each slot range the first node listed is the primary that serves it.
//  - "-MOVED <slot> <host>:<port>": the slot lives there now; the client updates its map and
//    sends the request there. "-ASK <slot> <host>:<port>": this one request is to be sent there,
//    preceded by ASKING; the map does not change (the slot is being migrated).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvlab::load {

inline constexpr unsigned kClusterSlots = 16384;
inline constexpr std::uint16_t kNoNode = 0xffff;

unsigned crc16_xmodem(std::string_view bytes);
unsigned key_slot(std::string_view key);

struct NodeAddr {
  std::string host;
  std::uint16_t port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
  bool operator==(const NodeAddr&) const = default;
};

// Slot -> index into nodes. Every slot is owned once; kNoNode when no node serves it.
struct SlotMap {
  std::vector<NodeAddr> nodes;
  std::vector<std::uint16_t> owner = std::vector<std::uint16_t>(kClusterSlots, kNoNode);
  // The index of addr in nodes, appended when new.
  std::uint16_t node_index(const NodeAddr& addr);
  unsigned unserved() const;
};

// Reads the map from the node at host:port. False with *error when the node cannot be reached
// or is not a cluster node (the error says which).
bool fetch_slot_map(const std::string& host, std::uint16_t port, const std::string& password,
                    double timeout_s, SlotMap* out, std::string* error);

struct Redirect {
  bool ask = false;  // ASK (one request) rather than MOVED (the slot moved)
  unsigned slot = 0;
  NodeAddr to;
};
// Parses "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381" (with or without the leading
// '-'). False for any other error text.
bool parse_redirect(std::string_view error, Redirect* out);

}  // namespace kvlab::load

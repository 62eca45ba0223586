// Keyspace notifications (Redis 7.0's notify-keyspace-events): a command that changes a key, the
// expiry of a key, its eviction, the creation of a key (class n) and a read that misses (class m)
// publish pub/sub messages when the configured classes allow:
//   K  channel `__keyspace@0__:<key>`, message `<event>`
//   E  channel `__keyevent@0__:<event>`, message `<key>`
// kvlab has one database, so the database number is always 0. Event names and the places they
// fire follow Redis 7.0 command by command (tests/server/notify_test.cpp compares the stream of
// every class with a live redis-server).
//
// Delivery: notify_keyspace_event() only notes the event in the calling thread's list; the
// worker publishes the list, in order, through the ordinary pub/sub fan-out (pubsub.hpp: local
// subscribers at once, subscribers on other workers through their inboxes) after the command has
// run (Worker::execute), after each event-loop iteration (the active expiry sweep, blocked
// clients served), and before any PUBLISH (so that a script's or a transaction's PUBLISH is seen
// after the notifications of the writes it ran before). So no pub/sub lock is taken while a
// command holds its key locks, and a RESP3 client subscribed on its own connection gets the
// pushes after the command's reply instead of inside it (EXEC's array stays whole).
//
// Cost when off (the default): one relaxed load of the flags word and a test per event.
//
// Thread safety: the flags word is written by CONFIG SET and read by every worker; the pending
// list is thread-local and belongs to the thread that fills it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvlab::server {

class FeatureHost;
struct CommandContext;

// Event classes, one bit each; K and E say which channels are published.
enum NotifyClass : std::uint32_t {
  kNotifyKeyspace = 1u << 0,  // K
  kNotifyKeyevent = 1u << 1,  // E
  kNotifyGeneric = 1u << 2,   // g
  kNotifyString = 1u << 3,    // $
  kNotifyList = 1u << 4,      // l
  kNotifySet = 1u << 5,       // s
  kNotifyHash = 1u << 6,      // h
  kNotifyZset = 1u << 7,      // z
  kNotifyExpired = 1u << 8,   // x
  kNotifyEvicted = 1u << 9,   // e
  kNotifyStream = 1u << 10,   // t
  kNotifyKeyMiss = 1u << 11,  // m (not part of A)
  kNotifyModule = 1u << 12,   // d (no modules in kvlab: accepted, never fired)
  kNotifyNew = 1u << 13,      // n (not part of A)
};

// The effective flags: 0 unless at least one of K and E and one class are set, so that the test
// in notify_keyspace_event() is the whole cost when nothing would be published. On a cache line
// of its own: every worker reads it on every write, and only CONFIG SET writes it, so no
// frequently written neighbour may share its line.
struct alignas(64) NotifyFlags {
  std::atomic<std::uint32_t> word{0};
};
static_assert(sizeof(NotifyFlags) == 64);
inline NotifyFlags g_notify_flags;

// Parses notify-keyspace-events' value (validated by CONFIG SET: "A", the class letters, K, E)
// into NotifyClass bits.
std::uint32_t parse_notify_flags(std::string_view s);
// CONFIG SET notify-keyspace-events.
void set_notify_flags(std::string_view s);

// Whether an event of class cls would be published.
inline bool notify_enabled(std::uint32_t cls) {
  // relaxed: an independent setting; no other data is published through it. A command that a
  // client sends after reading CONFIG SET's reply reads the new value (the store precedes the
  // reply, the reply precedes the request); a command running concurrently with CONFIG SET may
  // notify under either setting, as it could have run just before or just after it.
  return (g_notify_flags.word.load(std::memory_order_relaxed) & cls) != 0;
}

// Slow path: notes the event for the calling thread's next notify_flush().
void notify_note(std::uint32_t cls, std::string_view event, std::string_view key);

// The central hook: the command handlers call it where Redis calls notifyKeyspaceEvent; expiry
// and eviction call it too. event must be a string literal (it is kept by reference).
inline void notify_keyspace_event(std::uint32_t cls, std::string_view event, std::string_view key) {
  if (notify_enabled(cls)) notify_note(cls, event, key);
}
inline void notify_keyspace_event(CommandContext& /*ctx*/, std::uint32_t cls,
                                  std::string_view event, std::string_view key) {
  notify_keyspace_event(cls, event, key);
}

// Whether the calling thread has noted events not yet published: a plain thread-local read,
// inline, because Worker::execute asks after every command.
inline thread_local bool t_notify_pending = false;
inline bool notify_pending() {
  return t_notify_pending;
}
// Publishes what the calling thread noted, in order, from worker `self`.
void notify_flush(FeatureHost& server, unsigned self);

}  // namespace kvlab::server

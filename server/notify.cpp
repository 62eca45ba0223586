// Keyspace notifications: the flags word, the per-thread list of noted events and their
// publication; see notify.hpp.
#include "server/notify.hpp"

#include <utility>
#include <vector>

#include "server/pubsub.hpp"

namespace kvlab::server {

namespace {

struct Noted {
  std::uint32_t flags;     // K and E as they were when the event was noted
  std::string_view event;  // a string literal
  std::string key;
};
thread_local std::vector<Noted> t_noted;

constexpr std::uint32_t kAllClasses = kNotifyGeneric | kNotifyString | kNotifyList | kNotifySet |
                                      kNotifyHash | kNotifyZset | kNotifyExpired |
                                      kNotifyEvicted | kNotifyStream | kNotifyModule;

}  // namespace

std::uint32_t parse_notify_flags(std::string_view s) {
  std::uint32_t f = 0;
  for (char c : s) {
    switch (c) {
      case 'A': f |= kAllClasses; break;
      case 'K': f |= kNotifyKeyspace; break;
      case 'E': f |= kNotifyKeyevent; break;
      case 'g': f |= kNotifyGeneric; break;
      case '$': f |= kNotifyString; break;
      case 'l': f |= kNotifyList; break;
      case 's': f |= kNotifySet; break;
      case 'h': f |= kNotifyHash; break;
      case 'z': f |= kNotifyZset; break;
      case 'x': f |= kNotifyExpired; break;
      case 'e': f |= kNotifyEvicted; break;
      case 't': f |= kNotifyStream; break;
      case 'm': f |= kNotifyKeyMiss; break;
      case 'd': f |= kNotifyModule; break;
      case 'n': f |= kNotifyNew; break;
      default: break;  // CONFIG SET has refused it already
    }
  }
  return f;
}

void set_notify_flags(std::string_view s) {
  std::uint32_t f = parse_notify_flags(s);
  // Nothing is published without a channel kind or without a class: store 0 then, so that every
  // event costs only the test in notify_enabled().
  if ((f & (kNotifyKeyspace | kNotifyKeyevent)) == 0 ||
      (f & ~(kNotifyKeyspace | kNotifyKeyevent)) == 0)
    f = 0;
  g_notify_flags.store(f, std::memory_order_relaxed);  // relaxed: see notify_enabled()
}

void notify_note(std::uint32_t cls, std::string_view event, std::string_view key) {
  const std::uint32_t f = g_notify_flags.load(std::memory_order_relaxed);  // see notify_enabled()
  if ((f & cls) == 0) return;
  t_noted.push_back({f & (kNotifyKeyspace | kNotifyKeyevent), event, std::string(key)});
  t_notify_pending = true;
}

void notify_flush(Server& server, Worker& self) {
  // Taken first: publish() flushes pending notifications itself, so the list must be empty (and
  // the flag clear) before it runs.
  std::vector<Noted> noted;
  noted.swap(t_noted);
  t_notify_pending = false;
  std::string channel;
  for (const Noted& n : noted) {
    if (n.flags & kNotifyKeyspace) {
      channel.assign("__keyspace@0__:");
      channel.append(n.key);
      publish(server, self, channel, n.event);
    }
    if (n.flags & kNotifyKeyevent) {
      channel.assign("__keyevent@0__:");
      channel.append(n.event);
      publish(server, self, channel, n.key);
    }
  }
  // Give the capacity back for the next command (the common case is a handful of events).
  noted.clear();
  if (t_noted.empty()) t_noted.swap(noted);
}

}  // namespace kvlab::server

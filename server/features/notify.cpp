// Keyspace notifications: the flags word, the per-thread list of noted events and their
// publication; see notify.hpp.
#include "server/features/notify.hpp"

#include <utility>
#include <vector>

#include "server/features/host.hpp"
#include "server/features/pubsub.hpp"

namespace kvlab::server {

namespace {

struct Noted {
  std::uint32_t flags;     // K and E as they were when the event was noted
  std::string_view event;  // a string literal
  std::string key;
};
thread_local std::vector<Noted> t_noted;

constexpr std::uint32_t kAllClasses = kNotifyGeneric | kNotifyString | kNotifyList | kNotifySet |
                                      kNotifyHash | kNotifyZset | kNotifyExpired | kNotifyEvicted |
                                      kNotifyStream | kNotifyModule;

}  // namespace

std::uint32_t parse_notify_flags(std::string_view s) {
  // Each letter of Redis's notify-keyspace-events with its bit; "A" is every class but m and n.
  static constexpr std::pair<char, std::uint32_t> kLetters[] = {
      {'A', kAllClasses},    {'K', kNotifyKeyspace}, {'E', kNotifyKeyevent}, {'g', kNotifyGeneric},
      {'$', kNotifyString},  {'l', kNotifyList},     {'s', kNotifySet},      {'h', kNotifyHash},
      {'z', kNotifyZset},    {'x', kNotifyExpired},  {'e', kNotifyEvicted},  {'t', kNotifyStream},
      {'m', kNotifyKeyMiss}, {'d', kNotifyModule},   {'n', kNotifyNew}};
  std::uint32_t f = 0;
  for (char c : s)  // CONFIG SET has refused any other character already
    for (const auto& [letter, bit] : kLetters)
      if (c == letter) f |= bit;
  return f;
}

void set_notify_flags(std::string_view s) {
  std::uint32_t f = parse_notify_flags(s);
  // Nothing is published without a channel kind or without a class: store 0 then, so that every
  // event costs only the test in notify_enabled().
  if ((f & (kNotifyKeyspace | kNotifyKeyevent)) == 0 ||
      (f & ~(kNotifyKeyspace | kNotifyKeyevent)) == 0)
    f = 0;
  g_notify_flags.word.store(f, std::memory_order_relaxed);  // relaxed: see notify_enabled()
}

void notify_note(std::uint32_t cls, std::string_view event, std::string_view key) {
  const std::uint32_t f =
      g_notify_flags.word.load(std::memory_order_relaxed);  // see notify_enabled()
  if ((f & cls) == 0) return;
  t_noted.push_back({f & (kNotifyKeyspace | kNotifyKeyevent), event, std::string(key)});
  t_notify_pending = true;
}

void notify_flush(FeatureHost& server, unsigned self) {
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

// The merged command table: every family's rows in one lookup table, with the subcommands' full
// names and statistics ids. dispatch(), which checks and runs what a client sends against it, is
// in net/dispatch.cpp.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/core/command.hpp"
#include "server/core/command_util.hpp"

namespace kvlab::server {

// Command lookup is on every request's path: an open-addressing table of 1024 slots keyed by an
// FNV-1a hash of the lower-cased name, computed in the same pass that lower-cases it; at most
// half full (512 commands), so probe sequences stay short.
struct CommandTable::Impl {
  static constexpr std::size_t kSlots = 1024;
  struct Slot {
    std::string_view name;
    const CommandSpec* spec = nullptr;
  };
  Slot slots[kSlots];
  void put(const CommandSpec* c) {
    std::uint32_t h = 2166136261u;
    for (char ch : c->name) h = (h ^ static_cast<unsigned char>(ch)) * 16777619u;
    for (std::size_t i = h % kSlots;; i = (i + 1) % kSlots) {
      if (slots[i].spec == nullptr) {
        slots[i] = {c->name, c};
        return;
      }
    }
  }
  std::unordered_map<const CommandSpec*, std::string> full_names;  // "client|list"
};

CommandTable::CommandTable() : impl_(new Impl) {
  // One list of the command families; each returns its rows.
  for (auto family : {admin_commands(),    key_commands(),       string_commands(),
                      list_commands(),     hash_commands(),      set_commands(),
                      zset_commands(),     pubsub_commands(),    transaction_commands(),
                      blocking_commands(), sort_commands(),      hyperloglog_commands(),
                      bitmap_commands(),   scripting_commands(), cluster_commands(),
                      dump_commands(),     debug_commands(),     introspection_commands(),
                      migrate_commands(),  stream_commands(),    geo_commands()}) {
    for (const CommandSpec& c : family) {
      all_.push_back(&c);
      impl_->put(&c);
      impl_->full_names.emplace(&c, std::string(c.name));
      c.stat_id = static_cast<std::uint16_t>(by_stat_id_.size());
      by_stat_id_.push_back(&c);
      for (const CommandSpec& sub : c.subcommands) {
        impl_->full_names.emplace(&sub, std::string(c.name) + "|" + std::string(sub.name));
        sub.stat_id = static_cast<std::uint16_t>(by_stat_id_.size());
        by_stat_id_.push_back(&sub);
      }
    }
  }
  if (all_.size() > Impl::kSlots / 2) std::abort();  // keep the lookup table sparse
  std::sort(all_.begin(), all_.end(),
            [](const CommandSpec* a, const CommandSpec* b) { return a->name < b->name; });
}

const CommandTable& CommandTable::instance() {
  static const CommandTable table;
  return table;
}

namespace {
// Lower-cases a command name into a small stack buffer; names longer than the buffer are unknown.
bool lower_name(std::string_view name, char (&buf)[32], std::string_view* out) {
  if (name.size() > sizeof buf) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    buf[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
  }
  *out = std::string_view(buf, name.size());
  return true;
}

}  // namespace

const char* CommandTable::full_name(const CommandSpec* c) const {
  auto it = impl_->full_names.find(c);
  return it == impl_->full_names.end() ? "?" : it->second.c_str();
}

const CommandSpec* CommandTable::find(std::string_view name) const {
  if (name.size() > 32) return nullptr;
  char buf[32];
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    buf[i] = c;
    h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  }
  const std::string_view lower(buf, name.size());
  for (std::size_t i = h % Impl::kSlots;; i = (i + 1) % Impl::kSlots) {
    const Impl::Slot& s = impl_->slots[i];
    if (s.spec == nullptr) return nullptr;
    if (s.name == lower) return s.spec;
  }
}

const CommandSpec* CommandTable::find_sub(const CommandSpec& parent, std::string_view name) {
  char buf[32];
  std::string_view lower;
  if (!lower_name(name, buf, &lower)) return nullptr;
  for (const CommandSpec& s : parent.subcommands)
    if (s.name == lower) return &s;
  return nullptr;
}

bool command_keys(const CommandSpec& c, std::span<const std::string_view> argv,
                  std::vector<std::size_t>* out) {
  if (c.first_key > 0 && static_cast<std::size_t>(c.first_key) < argv.size()) {
    // A negative last key counts from the end (-1: the last argument).
    const std::ptrdiff_t last =
        c.last_key >= 0 ? c.last_key : static_cast<std::ptrdiff_t>(argv.size()) + c.last_key;
    const std::ptrdiff_t step = c.key_step > 0 ? c.key_step : 1;
    for (std::ptrdiff_t i = c.first_key; i <= last && i < static_cast<std::ptrdiff_t>(argv.size());
         i += step)
      out->push_back(static_cast<std::size_t>(i));
  }
  return c.extra_keys == nullptr || c.extra_keys(argv, out);
}

}  // namespace kvlab::server

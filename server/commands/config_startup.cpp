// The start-up configuration (commands/config.hpp): the command line and config files, read
// through the parameter table (config_params.cpp), so that a value given at start-up is
// validated as CONFIG SET validates it and is what CONFIG GET answers.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "server/commands/config.hpp"
#include "server/commands/config_table.hpp"
#include "server/protocol/resp_parser.hpp"
#include "server/net/server.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server {

using config::kFixed;
using config::kHidden;
using config::kImmutable;
using config::kProtected;
using config::Param;
using config::Type;

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Types whose value is one word on the command line; the others (save, bind, ...) take several.
bool one_word(const Param& p) {
  return p.type != Type::kSpecial && p.type != Type::kFlags;
}

constexpr std::string_view kActions[] = {
    "help",          "version",     "list-backends",    "list-atomicity",
    "list-commands", "list-config", "placement-dry-run"};

}  // namespace

std::string closest_config_name(std::string_view name) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, name.size() / 3) + 1;
  auto consider = [&](std::string_view cand) {
    if (cand.empty()) return;
    const std::size_t d = edit_distance(name, cand);
    if (d < best_d) {
      best_d = d;
      best = std::string(cand);
    }
  };
  for (const Param& p : config::params()) {
    consider(p.cli.empty() ? p.name : p.cli);
    consider(p.alias);
  }
  return best;
}

bool StartupConfig::set(std::string_view name, const std::vector<std::string>& words,
                        const std::string& origin, std::string* error) {
  const Param* row = config::find_param(name, /*cli_names=*/true);
  if (row == nullptr) {
    const std::string near = closest_config_name(name);
    *error = origin + ": unknown parameter '" + std::string(name) + "'" +
             (near.empty() ? std::string() : " (did you mean '" + near + "'?)");
    return false;
  }
  const Param& p = *row;
  const std::size_t i = static_cast<std::size_t>(row - config::params().data());
  if (words.empty()) {
    *error = origin + ": '" + std::string(name) + "' needs a value";
    return false;
  }
  if (one_word(p) && words.size() > 1) {
    *error = origin + ": '" + std::string(name) + "' takes one value, not " +
             std::to_string(words.size());
    return false;
  }
  std::string value;
  for (const auto& w : words) {
    if (!value.empty() || &w != &words.front()) value += ' ';
    value += w;
  }
  std::string canon, why;
  if (!config::canonical(p, value, &canon, &why)) {
    *error = origin + ": '" + std::string(name) + " " + value + "': " + why;
    return false;
  }
  settings_.push_back({i, std::move(canon), origin});
  return true;
}

bool StartupConfig::read_file(const std::string& path, int depth, std::string* error) {
  if (depth > 16) {
    *error = path + ": include nested more than 16 deep";
    return false;
  }
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot be read: " + std::strerror(errno);
    return false;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string origin = path + ":" + std::to_string(n);
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (line[first] == '[') continue;  // an INI/TOML section header: the names are flat
    std::vector<std::string> words;
    if (!split_inline_args(line, &words)) {
      *error = origin + ": unbalanced quotes";
      return false;
    }
    if (words.empty()) continue;
    // `name = value` and `name=value` (TOML/INI) as well as Redis's `name value`.
    if (const std::size_t eq = words[0].find('='); eq != std::string::npos) {
      std::string rest = words[0].substr(eq + 1);
      words[0].resize(eq);
      if (!rest.empty()) words.insert(words.begin() + 1, std::move(rest));
    } else if (words.size() > 1 && words[1] == "=") {
      words.erase(words.begin() + 1);
    }
    const std::string name = words[0];
    words.erase(words.begin());
    if (iequals(name, "include")) {
      if (words.size() != 1) {
        *error = origin + ": include takes one file";
        return false;
      }
      if (!read_file(words[0], depth + 1, error)) return false;
      continue;
    }
    if (!set(name, words, origin, error)) return false;
  }
  return true;
}

bool StartupConfig::parse_args(int argc, char** argv, std::vector<std::string>* actions,
                               std::string* error) {
  std::string file;
  std::vector<std::pair<std::string, std::vector<std::string>>> flags;
  int i = 1;
  if (i < argc && argv[i][0] != '-') file = argv[i++];  // `kvlab-server redis.conf ...`
  while (i < argc) {
    std::string_view tok = argv[i++];
    if (tok == "-h") tok = "--help";
    if (tok.substr(0, 2) != "--" || tok.size() == 2) {
      *error = "unexpected argument '" + std::string(tok) +
               "' (a config file comes first; parameters are --NAME VALUE)";
      return false;
    }
    std::string name(tok.substr(2));
    std::vector<std::string> words;
    if (const std::size_t eq = name.find('='); eq != std::string::npos) {
      words.push_back(name.substr(eq + 1));
      name.resize(eq);
    } else {
      // A value runs up to the next --flag, as in Redis (`--save 900 1`).
      while (i < argc && std::string_view(argv[i]).substr(0, 2) != "--")
        words.emplace_back(argv[i++]);
    }
    if (std::find(std::begin(kActions), std::end(kActions), name) != std::end(kActions)) {
      if (!words.empty()) {
        *error = "--" + name + " takes no value";
        return false;
      }
      actions->push_back(name);
      continue;
    }
    if (name == "config") {
      if (words.size() != 1) {
        *error = "--config takes one file";
        return false;
      }
      file = words[0];
      continue;
    }
    flags.emplace_back(std::move(name), std::move(words));
  }
  if (!file.empty() && !read_file(file, 0, error)) return false;
  for (const auto& [name, words] : flags)
    if (!set(name, words, "--" + name, error)) return false;
  return true;
}

bool StartupConfig::to_config(Config* config, std::string* error) const {
  for (const Setting& s : settings_) {
    const Param& p = config::params()[s.param];
    std::string why;
    if (p.start != nullptr && !p.start(*config, s.value, &why)) {
      *error = s.origin + ": '" + std::string(p.cli.empty() ? p.name : p.cli) + " " + s.value +
               "': " + why;
      return false;
    }
  }
  return true;
}

void StartupConfig::apply(Server& server) const {
  std::lock_guard<std::mutex> lock(config::mutex());
  for (const Setting& s : settings_) {
    const Param& p = config::params()[s.param];
    if (p.start != nullptr) {
      config::values()[s.param] = s.value;  // in effect through Config already
    } else if (!(p.flags & kFixed)) {
      config::apply_value(server, s.param, s.value);
    }
  }
}

std::vector<std::string> StartupConfig::without_effect() const {
  std::vector<std::string> out;
  for (const Setting& s : settings_) {
    const Param& p = config::params()[s.param];
    if (p.start != nullptr || p.set != nullptr) continue;
    if (!(p.flags & kFixed) && s.value == p.def) continue;  // Redis's default: nothing to say
    std::string item = std::string(p.name) + " " + (s.value.empty() ? "\"\"" : s.value);
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(std::move(item));
  }
  return out;
}

std::string config_usage() {
  std::string out =
      "Usage: kvlab-server [CONFIG-FILE] [--NAME VALUE ...]\n"
      "A multi-threaded Redis-protocol server on kvlab's pluggable keyspace.\n\n"
      "kvlab's own parameters (fixed at start-up; CONFIG GET kvlab-NAME shows them):\n";
  for (const Param& p : config::params()) {
    if (p.cli.empty()) continue;
    out += "  --" + std::string(p.cli);
    if (!p.def.empty() && p.def != "0") out += " (default " + std::string(p.def) + ")";
    // The help, wrapped at 96 columns under the flag.
    std::string line = "     ";
    std::string_view rest = p.help;
    while (!rest.empty()) {
      const std::size_t sp = rest.find(' ');
      const std::string_view word = rest.substr(0, sp);
      if (line.size() + 1 + word.size() > 96) {
        out += "\n" + line;
        line = "     ";
      }
      line += " " + std::string(word);
      rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    }
    out += "\n" + line + "\n";
  }
  out +=
      "\nRedis 7.0's parameters: every name CONFIG GET * lists is also --NAME VALUE and a\n"
      "config-file line (redis.conf syntax, `include FILE`, or `name = value`). kvlab acts on:\n ";
  std::size_t col = 1;
  for (const Param& p : config::params()) {
    if (!p.cli.empty() || (p.set == nullptr && p.start == nullptr)) continue;
    if (col + p.name.size() + 1 > 99) {
      out += "\n ";
      col = 1;
    }
    out += " " + std::string(p.name);
    col += p.name.size() + 1;
  }
  out +=
      "\nthe others are validated and shown as Redis does, with no effect (a warning lists them).\n"
      "\nActions: --help, --version, --list-backends, --list-atomicity, --list-commands,\n"
      "  --list-config (every parameter: name, flag, type, default, effect), --placement-dry-run\n";
  return out;
}

std::string config_table_text() {
  static constexpr std::string_view kTypeNames[] = {
      "bool", "enum", "flags", "int", "memory", "memory-percent", "octal", "string", "special"};
  std::string out = "name\tflag\ttype\tdefault\tmin\tmax\tchoices\teffect\n";
  for (const Param& p : config::params()) {
    const char* effect = (p.flags & kFixed) && p.start == nullptr ? "fixed"
                         : p.start != nullptr                     ? "startup"
                         : p.set != nullptr                       ? "runtime"
                                                                  : "none";
    out += std::string(p.name) + "\t" + std::string(p.cli.empty() ? p.name : p.cli) + "\t" +
           std::string(kTypeNames[static_cast<int>(p.type)]) + "\t" + std::string(p.def) + "\t" +
           std::to_string(p.min) + "\t" + std::to_string(p.max) + "\t" + std::string(p.choices) +
           "\t" + effect + (p.flags & kImmutable ? ",immutable" : "") +
           (p.flags & kHidden ? ",hidden" : "") + (p.flags & kProtected ? ",protected" : "") + "\n";
  }
  return out;
}

}  // namespace kvlab::server

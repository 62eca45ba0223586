// The parameter table behind CONFIG GET/SET and the start-up configuration: the row type and
// what the files that read the table share. Internal to server/commands/config*.cpp:
//   config_formats.cpp  how a value is validated and written (Redis's formats and texts);
//   config_params.cpp   the table: every parameter once, with what reading and applying it does;
//   config.cpp          CONFIG GET/SET/RESETSTAT/REWRITE/HELP;
//   config_startup.cpp  the command line and config files (commands/config.hpp).
#pragma once

#include <cstdint>
#include <limits>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvlab::server {

struct Config;
class Server;

namespace config {

enum class Type : std::uint8_t {
  kBool,           // yes/no (case-insensitive); GET "yes"/"no"
  kEnum,           // one of `choices`; GET the canonical (first listed) name for its value
  kFlags,          // several of `choices`, space-separated (shutdown-on-sig*)
  kInt,            // strict integer in [min, max]
  kMemory,         // digits with an optional b/k/kb/m/mb/g/gb unit; GET in bytes
  kMemoryPercent,  // a memory value or "N%" (0..100); GET "N%" for a percentage
  kOctal,          // unixsocketperm (immutable)
  kString,         // any text (some with a validator)
  kSpecial,        // multi-word formats: save, client-output-buffer-limit, ...
};

enum ParamFlag : std::uint8_t {
  kImmutable = 1,  // Redis refuses CONFIG SET: "can't set immutable config"
  kProtected = 2,  // Redis refuses while enable-protected-configs is no (its default)
  kActs = 4,       // kvlab applies it
  kFixed = 8,      // kvlab's own value, not changeable at run time
  kHidden = 16,    // Redis's HIDDEN_CONFIG: CONFIG GET lists it for its exact name, no pattern
};

// Validates `in` and writes its canonical form; false with *why (Redis's text) when invalid.
using Validator = bool (*)(std::string_view in, std::string* out, std::string* why);
// What CONFIG GET shows, for a parameter whose value lives in the server rather than in the
// table's own store (called with g_mu held).
using Getter = std::string (*)(Server& s);
// What applying a validated value does, at run time (CONFIG SET) and at start-up once the server
// exists (called with g_mu held, after the value was stored).
using Setter = void (*)(Server& s, const std::string& v);
// Start-up only, before the server exists: writes a validated value into Config; false with *why
// when kvlab cannot start with it.
using Starter = bool (*)(Config& c, const std::string& v, std::string* why);

struct Param {
  std::string_view name;
  std::string_view alias;  // empty: none
  Type type;
  std::uint8_t flags;
  std::string_view def;  // Redis's default in its GET format
  std::int64_t min = 0;
  std::uint64_t max = 0;
  std::string_view choices = {};  // kEnum/kFlags: comma-separated; "a=b" makes a an alias of b
  Validator special = nullptr;    // kString validator or kSpecial parser
  Getter get = nullptr;           // none: the stored value
  Setter set = nullptr;           // none: only stored
  Starter start = nullptr;        // none: applied after the server exists, as CONFIG SET would
  std::string_view cli = {};      // kvlab's own: the flag and config-file name (--threads)
  std::string_view help = {};     // kvlab's own: the --help line
};

inline constexpr std::int64_t kIntMin = std::numeric_limits<std::int32_t>::min();
inline constexpr std::uint64_t kIntMax = std::numeric_limits<std::int32_t>::max();
inline constexpr std::uint64_t kUIntMax = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::uint64_t kLongMax = std::numeric_limits<std::int64_t>::max();
inline constexpr std::uint64_t kULLMax = std::numeric_limits<std::uint64_t>::max();

// ---- formats (config_formats.cpp) ----

// Redis splits a multi-word value on single blanks, so "a  b" holds an empty word.
std::vector<std::string_view> split_blanks(std::string_view v);
// Redis's memtoull: leading digits, then an optional unit (b k kb m mb g gb); "" is 0.
bool parse_memory(std::string_view s, std::uint64_t* out);

struct ObufClass {
  std::uint64_t hard, soft, secs;
};
// Parses client-output-buffer-limit into the classes it names (0 normal, 1 replica, 2 pubsub).
bool parse_obuf(std::string_view in, std::vector<std::pair<int, ObufClass>>* todo,
                std::string* why);

// Validators of the special formats (Validator signature).
bool valid_save(std::string_view in, std::string* out, std::string* why);
bool valid_obuf(std::string_view in, std::string* out, std::string* why);
bool valid_oom_values(std::string_view in, std::string* out, std::string* why);
bool valid_notify(std::string_view in, std::string* out, std::string* why);
bool valid_percentiles(std::string_view in, std::string* out, std::string* why);
bool valid_any(std::string_view in, std::string* out, std::string* why);
bool valid_hostname(std::string_view in, std::string* out, std::string* why);
bool valid_proc_title(std::string_view in, std::string* out, std::string* why);
bool valid_bind(std::string_view in, std::string* out, std::string* why);

// Validates a value as Redis does for the parameter's type; *out gets the GET form, *why Redis's
// error text.
bool canonical(const Param& p, std::string_view in, std::string* out, std::string* why);

// ---- the table (config_params.cpp) ----

std::span<const Param> params();
// Guards the stored values and every apply; CONFIG SET of several parameters holds it across all.
std::mutex& mutex();
std::vector<std::string>& values();  // index as params(); REQUIRES: mutex() held
// The value CONFIG GET shows. REQUIRES: mutex() held.
std::string get_value(Server& s, std::size_t i);
// Stores a validated value and runs the row's setter. REQUIRES: mutex() held.
void apply_value(Server& s, std::size_t i, const std::string& v);
// By name or alias, case-insensitive, and with cli_names also by kvlab's flag name (the start-up
// configuration accepts both; CONFIG GET/SET only Redis's names); nullptr when none.
const Param* find_param(std::string_view name, bool cli_names = false);

}  // namespace config
}  // namespace kvlab::server

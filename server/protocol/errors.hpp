// Every error text kvlab-server writes, in one place, spelled exactly as Redis 7 spells them so
// that client libraries and test suites written against Redis see the same replies.
//
// Each constant is the full RESP error line without the leading '-' and trailing CRLF; the reply
// writer adds both. Messages with arguments have a small formatting function next to them.
#pragma once

#include <string>
#include <string_view>

namespace kvlab::server::err {

// Protocol errors: the connection is closed after the reply (see resp_parser.hpp).
inline constexpr std::string_view kProtoTooBigInline = "ERR Protocol error: too big inline request";
inline constexpr std::string_view kProtoUnbalancedQuotes =
    "ERR Protocol error: unbalanced quotes in request";
inline constexpr std::string_view kProtoTooBigMbulk =
    "ERR Protocol error: too big mbulk count string";
inline constexpr std::string_view kProtoInvalidMbulk =
    "ERR Protocol error: invalid multibulk length";
inline constexpr std::string_view kProtoTooBigBulk =
    "ERR Protocol error: too big bulk count string";
inline constexpr std::string_view kProtoInvalidBulk = "ERR Protocol error: invalid bulk length";
inline constexpr std::string_view kProtoUnauthMbulk =
    "ERR Protocol error: unauthenticated multibulk length";
inline constexpr std::string_view kProtoUnauthBulk =
    "ERR Protocol error: unauthenticated bulk length";
inline std::string proto_expected_dollar(char got) {
  return std::string("ERR Protocol error: expected '$', got '") + got + "'";
}

// Command dispatch.
std::string unknown_command(std::string_view name, const std::string_view* args, std::size_t argc);
std::string wrong_arity(std::string_view full_name);  // full_name is "get" or "client|setname"
std::string unknown_subcommand(std::string_view sub, std::string_view command_upper);
// Redis's addReplySubcommandSyntaxError: the subcommand as typed, the command upper-cased.
std::string subcommand_syntax(std::string_view command, std::string_view sub);
inline constexpr std::string_view kNoAuth = "NOAUTH Authentication required.";
inline constexpr std::string_view kNoAuthHello =
    "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
    "AUTH <user> <pass> option can be used to authenticate the client and select the RESP "
    "protocol version at the same time";
inline constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";
inline constexpr std::string_view kAuthNoPassword =
    "ERR AUTH <password> called without any password configured for the default user. Are you "
    "sure your configuration is correct?";
inline constexpr std::string_view kMaxClients = "ERR max number of clients reached";
inline constexpr std::string_view kDenied =
    "DENIED kvlab-server is running in protected mode because no password is set and the client "
    "is not on the loopback interface. Either set a password with --requirepass, or restart with "
    "--protected-mode no if you want to accept clients from other hosts.";

// Generic argument errors.
inline constexpr std::string_view kSyntax = "ERR syntax error";
inline constexpr std::string_view kNotInteger = "ERR value is not an integer or out of range";
inline constexpr std::string_view kNotFloat = "ERR value is not a valid float";
inline constexpr std::string_view kOverflow = "ERR increment or decrement would overflow";
inline constexpr std::string_view kNanOrInf = "ERR increment would produce NaN or Infinity";
// HINCRBYFLOAT's check of the increment itself (INCRBYFLOAT only checks the result).
inline constexpr std::string_view kIncrementNanOrInf = "ERR value is NaN or Infinity";
inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
// A value a client sized (SETRANGE, SETBIT, BITFIELD up to proto-max-bulk-len) could not be
// allocated. Redis aborts the process there; dispatch() answers the same text for any other
// allocation failure.
inline constexpr std::string_view kNoMemory = "ERR out of memory";
inline constexpr std::string_view kStringTooLong =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
inline constexpr std::string_view kOffsetOutOfRange = "ERR offset is out of range";
inline constexpr std::string_view kInvalidCursor = "ERR invalid cursor";
inline constexpr std::string_view kDbIndexOutOfRange = "ERR DB index is out of range";
inline constexpr std::string_view kNoProto = "NOPROTO unsupported protocol version";
inline constexpr std::string_view kHelloProtoNotInteger =
    "ERR Protocol version is not an integer or out of range";
inline constexpr std::string_view kExpireNxXxGtLt =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
inline constexpr std::string_view kExpireGtLt =
    "ERR GT and LT options at the same time are not compatible";
inline constexpr std::string_view kClientNameSpaces =
    "ERR Client names cannot contain spaces, newlines or special characters.";
inline constexpr std::string_view kClientSetinfoBadAttr = "ERR Unrecognized option";
inline constexpr std::string_view kNoSuchClient = "ERR No such client";
inline std::string invalid_expire(std::string_view command_lower) {
  return "ERR invalid expire time in '" + std::string(command_lower) + "' command";
}
inline std::string config_set_unknown(std::string_view name) {
  return "ERR Unknown option or number of arguments for CONFIG SET - '" + std::string(name) + "'";
}
inline std::string config_set_invalid(std::string_view name, std::string_view why) {
  return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) + "') - " +
         std::string(why);
}

// maxmemory reached and nothing to evict (server/features/eviction.hpp), for commands flagged kDenyOom.
inline constexpr std::string_view kOom = "OOM command not allowed when used memory > 'maxmemory'.";
// min-replicas-to-write with fewer good replicas (kvlab has none), for write commands.
inline constexpr std::string_view kNoReplicas = "NOREPLICAS Not enough good replicas to write.";
}  // namespace kvlab::server::err

namespace kvlab::server::err {
inline constexpr std::string_view kDecrOverflow = "ERR decrement would overflow";
// Redis formats the option with %s: the text stops at its first NUL byte.
inline std::string unsupported_option(std::string_view opt) {
  return "ERR Unsupported option " + std::string(opt.substr(0, opt.find('\0')));
}
}  // namespace kvlab::server::err

// Sets and sorted sets (server/commands/sets.cpp, zsets.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kOutOfRangePositive =
    "ERR value is out of range, must be positive";
inline constexpr std::string_view kOutOfRangeLong =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
inline constexpr std::string_view kOutOfRange = "ERR value is out of range";
inline constexpr std::string_view kRandomCountTooLarge =
    "ERR value is out of range (kvlab limits a random reply to 10000000 elements)";
inline constexpr std::string_view kNumkeysPositive = "ERR numkeys should be greater than 0";
inline constexpr std::string_view kNumkeysTooMany =
    "ERR Number of keys can't be greater than number of args";
inline constexpr std::string_view kLimitNegative = "ERR LIMIT can't be negative";
inline constexpr std::string_view kWeightNotFloat = "ERR weight value is not a float";
inline constexpr std::string_view kCountPositive = "ERR count should be greater than 0";
// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD with numkeys < 1.
inline std::string at_least_one_key(std::string_view command_lower) {
  return "ERR at least 1 input key is needed for '" + std::string(command_lower) + "' command";
}
inline constexpr std::string_view kZAddXxNx =
    "ERR XX and NX options at the same time are not compatible";
inline constexpr std::string_view kZAddGtLtNx =
    "ERR GT, LT, and/or NX options at the same time are not compatible";
inline constexpr std::string_view kZAddIncrPair =
    "ERR INCR option supports a single increment-element pair";
inline constexpr std::string_view kScoreNaN = "ERR resulting score is not a number (NaN)";
inline constexpr std::string_view kMinMaxNotFloat = "ERR min or max is not a float";
inline constexpr std::string_view kMinMaxNotLex = "ERR min or max not valid string range item";
inline constexpr std::string_view kLimitNeedsByScoreOrLex =
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
inline constexpr std::string_view kWithScoresByLex =
    "ERR syntax error, WITHSCORES not supported in combination with BYLEX";
}  // namespace kvlab::server::err

// Generic key commands (server/commands/keys.cpp, sort.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kNoSuchKey = "ERR no such key";
inline constexpr std::string_view kSameObject = "ERR source and destination objects are the same";
inline constexpr std::string_view kOutOfRangeInt =
    "ERR value is out of range, value must between -2147483648 and 2147483647";
inline constexpr std::string_view kInvalidFirstDb = "ERR invalid first DB index";
inline constexpr std::string_view kInvalidSecondDb = "ERR invalid second DB index";
inline constexpr std::string_view kTimeoutNotInteger =
    "ERR timeout is not an integer or out of range";
inline constexpr std::string_view kTimeoutNegative = "ERR timeout is negative";
inline constexpr std::string_view kFreqNotLfu =
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that "
    "when switching between policies at runtime LRU and LFU data will take some time to adjust.";
inline constexpr std::string_view kIdletimeLfu =
    "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
    "switching between policies at runtime LRU and LFU data will take some time to adjust.";
inline constexpr std::string_view kSortNotDouble =
    "ERR One or more scores can't be converted into double";
}  // namespace kvlab::server::err

// Bitmaps and LCS (server/commands/bitmaps.cpp, strings.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kBitOffset = "ERR bit offset is not an integer or out of range";
inline constexpr std::string_view kBitValue = "ERR bit is not an integer or out of range";
inline constexpr std::string_view kBitposBit = "ERR The bit argument must be 1 or 0.";
inline constexpr std::string_view kBitopNot =
    "ERR BITOP NOT must be called with a single source key.";
inline constexpr std::string_view kBitfieldType =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 "
    "is.";
inline constexpr std::string_view kBitfieldOverflow = "ERR Invalid OVERFLOW type specified";
inline constexpr std::string_view kBitfieldRo = "ERR BITFIELD_RO only supports the GET subcommand";
inline constexpr std::string_view kLcsWrongType =
    "ERR The specified keys must contain string values";
inline constexpr std::string_view kLcsIdxAndLen =
    "ERR If you want both the length and indexes, please just use IDX.";
inline constexpr std::string_view kLcsTooMuchMemory =
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
// Past busy-reply-threshold: what every other command gets while a script (EVAL) or a function
// (FCALL) runs.
inline constexpr std::string_view kBusyScript =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
inline constexpr std::string_view kBusyFunction =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
inline constexpr std::string_view kLcsAllocFailed =
    "ERR Insufficient memory, failed allocating transient memory for LCS";
}  // namespace kvlab::server::err

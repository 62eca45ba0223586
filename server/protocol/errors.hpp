// Every error text kvlab-server writes, in one place, spelled exactly as Redis 7 spells them so
// that client libraries and test suites written against Redis see the same replies.
//
// Each constant is the full RESP error line without the leading '-' and trailing CRLF; the reply
// writer adds both. Messages with arguments have a small formatting function next to them.
#pragma once

#include <cstdint>
#include <cstdio>
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
// Defined in errors.cpp: kept out of line, away from dispatch()'s hot path.
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

// maxmemory reached and nothing to evict (server/features/eviction.hpp), for commands flagged
// kDenyOom.
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

// Lists (server/commands/lists.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kIndexOutOfRange = "ERR index out of range";
inline constexpr std::string_view kLposRankZero =
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use "
    "negative to start from the end of the list";
inline constexpr std::string_view kLposCountNegative = "ERR COUNT can't be negative";
inline constexpr std::string_view kLposMaxlenNegative = "ERR MAXLEN can't be negative";
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

// Hashes (server/commands/hashes.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kHashNotInteger = "ERR hash value is not an integer";
inline constexpr std::string_view kHashNotFloat = "ERR hash value is not a float";
}  // namespace kvlab::server::err

// DUMP and RESTORE (server/commands/dump.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kBusyKey = "BUSYKEY Target key name already exists.";
inline constexpr std::string_view kRestoreBadTtl = "ERR Invalid TTL value, must be >= 0";
inline constexpr std::string_view kRestoreBadIdletime = "ERR Invalid IDLETIME value, must be >= 0";
inline constexpr std::string_view kRestoreBadFreq =
    "ERR Invalid FREQ value, must be >= 0 and <= 255";
inline constexpr std::string_view kDumpPayload = "ERR DUMP payload version or checksum are wrong";
inline constexpr std::string_view kBadDataFormat = "ERR Bad data format";
}  // namespace kvlab::server::err

// MULTI, EXEC, DISCARD, WATCH (server/commands/transactions.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kMultiNested = "ERR MULTI calls can not be nested";
inline constexpr std::string_view kDiscardWithoutMulti = "ERR DISCARD without MULTI";
inline constexpr std::string_view kWatchInsideMulti = "ERR WATCH inside MULTI is not allowed";
inline constexpr std::string_view kExecWithoutMulti = "ERR EXEC without MULTI";
inline constexpr std::string_view kExecAbort =
    "EXECABORT Transaction discarded because of previous errors.";
}  // namespace kvlab::server::err

// Blocking commands (server/commands/blocking.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kTimeoutNotFloat = "ERR timeout is not a float or out of range";
inline constexpr std::string_view kUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK";
}  // namespace kvlab::server::err

// Cluster mode (server/features/cluster.cpp, server/commands/cluster.cpp, and the redirects of
// blocked clients in server/commands/blocking.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kCrossSlot =
    "CROSSSLOT Keys in request don't hash to the same slot";
inline constexpr std::string_view kSlotNotServed = "CLUSTERDOWN Hash slot not served";
inline constexpr std::string_view kClusterDown = "CLUSTERDOWN The cluster is down";
inline constexpr std::string_view kClusterDisabled =
    "ERR This instance has cluster support disabled";
inline constexpr std::string_view kInvalidSlot = "ERR Invalid slot";
inline constexpr std::string_view kInvalidSlotOrCount = "ERR Invalid slot or number of keys";
inline constexpr std::string_view kKvlabClusterNeedsMode =
    "ERR KVLAB CLUSTER CONFIG needs --cluster-mode yes";
inline constexpr std::string_view kKvlabUnknownSubcommand =
    "ERR unknown KVLAB subcommand; try KVLAB CLUSTER CONFIG <json> or KVLAB CLUSTER GETCONFIG";
inline std::string moved(unsigned slot, std::string_view ip, int port) {
  return "MOVED " + std::to_string(slot) + " " + std::string(ip) + ":" + std::to_string(port);
}
inline std::string ask(unsigned slot, std::string_view ip, int port) {
  return "ASK " + std::to_string(slot) + " " + std::string(ip) + ":" + std::to_string(port);
}
inline std::string invalid_cluster_config(std::string_view why) {
  return "ERR invalid cluster configuration: " + std::string(why);
}
// sub_upper: the gossip-era subcommand (MEET, ADDSLOTS...) upper-cased.
inline std::string cluster_unsupported(std::string_view sub_upper) {
  return "ERR CLUSTER " + std::string(sub_upper) +
         " is not supported by kvlab: nodes take their configuration from KVLAB CLUSTER CONFIG "
         "(kvlab cluster create)";
}
}  // namespace kvlab::server::err

// Client-side caching (server/commands/tracking.cpp, server/features/tracking.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kTrackingRedirectOne =
    "ERR A client can only redirect to a single other client";
inline constexpr std::string_view kTrackingRedirectMissing =
    "ERR The client ID you want redirect to does not exist";
inline constexpr std::string_view kTrackingPrefixNeedsBcast =
    "ERR PREFIX option requires BCAST mode to be enabled";
inline constexpr std::string_view kTrackingBcastSwitch =
    "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then "
    "re-enabling it with a different mode.";
inline constexpr std::string_view kTrackingOptBcast =
    "ERR OPTIN and OPTOUT are not compatible with BCAST";
inline constexpr std::string_view kTrackingOptInAndOut =
    "ERR You can't specify both OPTIN mode and OPTOUT mode";
inline constexpr std::string_view kTrackingOptSwitch =
    "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then "
    "re-enabling it with a different mode.";
inline constexpr std::string_view kCachingNeedsOpt =
    "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
    "OPTOUT mode enabled";
inline constexpr std::string_view kCachingYesNeedsOptIn =
    "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.";
inline constexpr std::string_view kCachingNoNeedsOptOut =
    "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.";
// Redis formats the prefixes with %s: callers pass them cut at their first NUL byte.
inline std::string prefix_overlaps_existing(std::string_view prefix, std::string_view existing) {
  return "ERR Prefix '" + std::string(prefix) + "' overlaps with an existing prefix '" +
         std::string(existing) + "'. Prefixes for a single client must not overlap.";
}
inline std::string prefix_overlaps_provided(std::string_view prefix, std::string_view other) {
  return "ERR Prefix '" + std::string(prefix) + "' overlaps with another provided prefix '" +
         std::string(other) + "'. Prefixes for a single client must not overlap.";
}
}  // namespace kvlab::server::err

// Pub/sub, CONFIG, LATENCY, keyspace walks (server/commands/pubsub.cpp, config.cpp,
// introspection.cpp, keys.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kSsubscribeDenyBlocking =
    "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client";
inline constexpr std::string_view kNoConfigFile = "ERR The server is running without a config file";
inline constexpr std::string_view kCountAtLeastMinusOne =
    "ERR count should be greater than or equal to -1";
inline std::string latency_no_samples(std::string_view event) {
  return "ERR No samples available for event '" + std::string(event) + "'";
}
// OBJECT IDLETIME under a policy whose access word is a read count, not a clock.
inline constexpr std::string_view kIdletimeNotTracked =
    "ERR A SIEVE or S3-FIFO maxmemory policy is selected, idle time not tracked.";
// KEYS, SCAN, RANDOMKEY... on a backend that cannot iterate under concurrent writers.
inline std::string cannot_walk(std::string_view backend) {
  return "ERR backend " + std::string(backend) +
         " cannot iterate keys while other workers write (no concurrent_for_each); restart with "
         "--threads 1 or another backend";
}
}  // namespace kvlab::server::err

// HyperLogLog (server/commands/hyperloglog.cpp); TESTFAILED is PFSELFTEST's code.
namespace kvlab::server::err {
inline constexpr std::string_view kNotHll =
    "WRONGTYPE Key is not a valid HyperLogLog string value.";
inline constexpr std::string_view kHllCorrupt = "INVALIDOBJ Corrupted HLL object detected";
inline constexpr std::string_view kKeyDoesNotExist = "ERR The specified key does not exist";
inline constexpr std::string_view kHllNotSparse = "ERR HLL encoding is not sparse";
inline std::string pfdebug_unknown(std::string_view sub) {
  return "ERR Unknown PFDEBUG subcommand '" + std::string(sub) + "'";
}
inline constexpr std::string_view kSelftestNotSparse = "TESTFAILED sparse encoding not used";
inline constexpr std::string_view kSelftestDisagree = "TESTFAILED dense/sparse disagree";
inline std::string selftest_register(long index, int expected, int got) {
  return "TESTFAILED Register " + std::to_string(index) + " should be " + std::to_string(expected) +
         " but is " + std::to_string(got);
}
inline std::string selftest_too_big_error(std::uint64_t card, std::uint64_t abserr) {
  return "TESTFAILED Too big error. card:" + std::to_string(card) +
         " abserr:" + std::to_string(abserr);
}
}  // namespace kvlab::server::err

// MIGRATE (server/commands/migrate.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kMigrateKeysNeedsEmpty =
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";
inline constexpr std::string_view kMigrateNoHiredis =
    "ERR MIGRATE needs kvlab-server built with hiredis";
inline constexpr std::string_view kIoErrWrite = "IOERR error or timeout writing to target instance";
inline constexpr std::string_view kIoErrRead = "IOERR error or timeout reading to target instance";
inline std::string migrate_target_error(std::string_view text) {
  return "ERR Target instance replied with error: " + std::string(text);
}
}  // namespace kvlab::server::err

// DEBUG (server/commands/debug.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kDebugNotAllowed =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you "
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";
inline constexpr std::string_view kResp2NotSupported = "ERR RESP2 is not supported by this command";
inline constexpr std::string_view kDebugProtocolType =
    "ERR Wrong protocol type name. Please use one of the following: "
    "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false";
inline constexpr std::string_view kDebugReloadOptions =
    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.";
inline constexpr std::string_view kDebugMemoryValue =
    "ERR argument must be a memory value bigger than 1 and smaller than 4gb";
}  // namespace kvlab::server::err

// Geo commands (server/commands/geo.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kGeoUnit =
    "ERR unsupported unit provided. please use M, KM, FT, MI";
inline constexpr std::string_view kGeoRadiusNotNumeric = "ERR need numeric radius";
inline constexpr std::string_view kGeoWidthNotNumeric = "ERR need numeric width";
inline constexpr std::string_view kGeoHeightNotNumeric = "ERR need numeric height";
inline constexpr std::string_view kGeoRadiusNegative = "ERR radius cannot be negative";
inline constexpr std::string_view kGeoBoxNegative = "ERR height or width cannot be negative";
inline constexpr std::string_view kGeoDecode = "ERR could not decode requested zset member";
inline constexpr std::string_view kGeoCountPositive = "ERR COUNT must be > 0";  // also XAUTOCLAIM's
inline constexpr std::string_view kGeoAnyNeedsCount =
    "ERR the ANY argument requires COUNT argument";
inline constexpr std::string_view kGeoSearchStoreWith =
    "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options";
inline constexpr std::string_view kGeoRadiusStoreWith =
    "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options";
// Redis's "%f,%f": six decimals, so 1e308 takes 309 digits (the buffer holds two of them).
inline std::string invalid_lonlat(double lon, double lat) {
  char buf[800];
  std::snprintf(buf, sizeof buf, "ERR invalid longitude,latitude pair %f,%f", lon, lat);
  return buf;
}
// command: argv[0] as typed.
inline std::string geo_from_one(std::string_view command) {
  return "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + std::string(command);
}
inline std::string geo_by_one(std::string_view command) {
  return "ERR exactly one of BYRADIUS and BYBOX can be specified for " + std::string(command);
}
}  // namespace kvlab::server::err

// The generic code: Redis's addReplyErrorFormat prefixes "ERR " to a message that has no code of
// its own (a Lua error, a reason passed through).
namespace kvlab::server::err {
inline constexpr std::string_view kErrCode = "ERR ";
inline std::string with_err_code(std::string_view message) {
  return std::string(kErrCode) + std::string(message);
}
}  // namespace kvlab::server::err

// Dispatch, continued (server/net/dispatch.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kTryAgainRehashing =
    "TRYAGAIN Multiple keys request during rehashing of slot";
inline constexpr std::string_view kNotAllowedInMulti =
    "ERR Command not allowed inside a transaction";
// The texts dispatch() builds itself are constants, not functions: a call there changes what
// GCC inlines into dispatch(), a constant keeps the expression as it was.
// + the what() of an exception a handler let escape.
inline constexpr std::string_view kInternalError = "ERR internal error: ";
// + a rejected EXEC's reason without its "ERR " (Redis 7.0's execCommandAbort).
inline constexpr std::string_view kExecAbortBecause =
    "EXECABORT Transaction discarded because of: ";
// A RESP2 subscriber ran another command: kCantExecute + full name ("client|list") + the tail.
inline constexpr std::string_view kCantExecute = "ERR Can't execute '";
inline constexpr std::string_view kCantExecuteTail =
    "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context";
}  // namespace kvlab::server::err

// EVAL, EVALSHA, SCRIPT (server/commands/scripting_registry.cpp, scripting_eval.cpp).
namespace kvlab::server::err {
// command: "SCRIPT" or "FUNCTION" (sic: Redis spells SCRIPT's "support" and FUNCTION's "supports").
inline std::string flush_option(std::string_view command) {
  return "ERR " + std::string(command) + " FLUSH only " +
         (command == "SCRIPT" ? "support" : "supports") + " SYNC|ASYNC option";
}
inline constexpr std::string_view kScriptFlushOption =
    "ERR SCRIPT FLUSH only support SYNC|ASYNC option";
inline constexpr std::string_view kUnkillable =
    "UNKILLABLE Sorry the script already executed write commands against the dataset. You can "
    "either wait the script termination or kill the server in a hard way using the SHUTDOWN "
    "NOSAVE command.";
inline constexpr std::string_view kNotBusy = "NOTBUSY No scripts in execution right now.";
inline std::string script_compile(std::string_view lua_error) {
  return "ERR Error compiling script (new function): " + std::string(lua_error);
}
inline constexpr std::string_view kScriptDebugPipeline =
    "ERR SCRIPT DEBUG must be called outside a pipeline";
inline constexpr std::string_view kScriptDebugNoLdb =
    "ERR kvlab has no Lua debugger (LDB): EVAL and EVALSHA are refused on this connection until "
    "SCRIPT DEBUG NO";
inline constexpr std::string_view kScriptDebugUsage = "ERR Use SCRIPT DEBUG YES/SYNC/NO";
inline constexpr std::string_view kScriptDebugRefused =
    "ERR this connection asked for SCRIPT DEBUG YES/SYNC, and kvlab has no Lua debugger: the "
    "script was not run (SCRIPT DEBUG NO runs scripts again)";
inline std::string shebang_engine(std::string_view engine) {
  return "ERR Unexpected engine in script shebang: " + std::string(engine);
}
inline std::string shebang_option(std::string_view option) {
  return "ERR Unknown lua shebang option: " + std::string(option);
}
inline std::string shebang_flag(std::string_view flag) {
  return "ERR Unexpected flag in script shebang: " + std::string(flag);
}
inline constexpr std::string_view kNumkeysNegative = "ERR Number of keys can't be negative";
inline constexpr std::string_view kScriptWriteInRo =
    "ERR Can not execute a script with write flag using *_ro command.";
inline constexpr std::string_view kNoScript = "NOSCRIPT No matching script. Please use EVAL.";
// An error table without a string in its err field.
inline constexpr std::string_view kLuaUnknownError = "ERR unknown error";
inline constexpr std::string_view kLuaReplyDepth = "ERR reached lua stack limit";
}  // namespace kvlab::server::err

// FUNCTION and FCALL (server/commands/scripting_functions.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kLibraryNoMetadata = "ERR Missing library metadata";
inline constexpr std::string_view kLibraryBadMetadata = "ERR Invalid library metadata";
inline std::string engine_not_found(std::string_view engine) {
  return "ERR Engine '" + std::string(engine) + "' not found";
}
inline constexpr std::string_view kLibraryNameTwice =
    "ERR Invalid metadata value, name argument was given multiple times";
inline std::string library_bad_metadata_value(std::string_view value) {
  return "ERR Invalid metadata value given: " + std::string(value);
}
inline constexpr std::string_view kLibraryNoName = "ERR Library name was not given";
inline constexpr std::string_view kLibraryBadName =
    "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least "
    "one character long";
inline std::string function_compile(std::string_view lua_error) {
  return "ERR Error compiling function: " + std::string(lua_error);
}
inline std::string function_register(std::string_view lua_error) {
  return "ERR Error registering functions: " + std::string(lua_error);
}
inline constexpr std::string_view kNoFunctions = "ERR No functions registered";
inline constexpr std::string_view kFunctionNotFound = "ERR Function not found";
inline constexpr std::string_view kBadNumkeys = "ERR Bad number of keys provided";
// Redis 7.0 words the two differently: FUNCTION LOAD quotes the name, FUNCTION RESTORE does not.
inline std::string library_exists(std::string_view library) {
  return "ERR Library '" + std::string(library) + "' already exists";
}
inline std::string library_exists_restore(std::string_view library) {
  return "ERR Library " + std::string(library) + " already exists";
}
inline std::string function_exists(std::string_view function) {
  return "ERR Function " + std::string(function) + " already exists";
}
// Redis formats the option with %s: callers pass it cut at its first NUL byte.
inline std::string unknown_option_given(std::string_view option) {
  return "ERR Unknown option given: " + std::string(option);
}
inline constexpr std::string_view kLibraryNameMissing = "ERR library name argument was not given";
// Redis formats the argument with %s: callers pass it cut at its first NUL byte.
inline std::string unknown_argument(std::string_view argument) {
  return "ERR Unknown argument " + std::string(argument);
}
inline constexpr std::string_view kLibraryNotFound = "ERR Library not found";
inline constexpr std::string_view kRestorePolicy =
    "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.";
}  // namespace kvlab::server::err

// redis.* inside a script (server/commands/lua_api.cpp): raised as Lua error tables, then
// replied as they are.
namespace kvlab::server::err {
inline constexpr std::string_view kLuaCallNoArgs =
    "ERR Please specify at least one argument for this redis lib call";
inline constexpr std::string_view kLuaCallArgType =
    "ERR Lua redis lib command arguments must be strings or integers";
inline constexpr std::string_view kLuaCallWhileLoading =
    "ERR redis.call is not available while loading a library";
inline constexpr std::string_view kLuaCommandDenied =
    "ERR This Redis command is not allowed from script";
// command: argv[0] as the script wrote it.
inline std::string lua_block_denied(std::string_view command) {
  return "ERR " + std::string(command) + " command is not allowed with BLOCK option from scripts";
}
inline constexpr std::string_view kLuaUnknownCommand =
    "ERR Unknown Redis command called from script";
inline constexpr std::string_view kLuaWrongArity =
    "ERR Wrong number of args calling Redis command from script";
inline constexpr std::string_view kLuaWriteInRo =
    "ERR Write commands are not allowed from read-only scripts.";
inline constexpr std::string_view kLuaKeyspaceWide =
    "ERR Script attempted to access the whole keyspace, but it holds only its declared keys "
    "(start kvlab-server with --lua-undeclared-keys yes)";
// key: the first 128 bytes of the key.
inline std::string lua_undeclared_key(std::string_view key) {
  return "ERR Script attempted to access a non-declared key: " + std::string(key) +
         " (declare it in KEYS, or start kvlab-server with --lua-undeclared-keys yes)";
}
inline constexpr std::string_view kLuaMalformedReply = "ERR kvlab: malformed reply inside a script";
inline constexpr std::string_view kLuaWrongArgs = "ERR wrong number or type of arguments";
}  // namespace kvlab::server::err

// Streams (server/commands/streams*.cpp).
namespace kvlab::server::err {
inline constexpr std::string_view kStreamInvalidId =
    "ERR Invalid stream ID specified as stream command argument";
inline constexpr std::string_view kMaxlenMinid =
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
inline constexpr std::string_view kMaxlenNegative = "ERR The MAXLEN argument must be >= 0.";
inline constexpr std::string_view kStreamLimitNegative = "ERR The LIMIT argument must be >= 0.";
inline constexpr std::string_view kLimitNoStrategy =
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy";
inline constexpr std::string_view kXtrimNoStrategy =
    "ERR syntax error, XTRIM must be called with a trimming strategy";
inline constexpr std::string_view kLimitNoTilde =
    "ERR syntax error, LIMIT cannot be used without the special ~ option";
inline constexpr std::string_view kXaddZero =
    "ERR The ID specified in XADD must be greater than 0-0";
inline constexpr std::string_view kStreamExhausted =
    "ERR The stream has exhausted the last possible ID, unable to add more items";
inline constexpr std::string_view kXaddSmaller =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";
inline constexpr std::string_view kStreamTooLarge = "ERR Elements are too large to be stored";
inline constexpr std::string_view kInvalidStartId = "ERR invalid start ID for the interval";
inline constexpr std::string_view kInvalidEndId = "ERR invalid end ID for the interval";
inline constexpr std::string_view kEntriesAddedNegative = "ERR entries_added must be positive";
inline constexpr std::string_view kXsetidBelowMaxDeleted =
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id";
inline constexpr std::string_view kXsetidSmaller =
    "ERR The ID specified in XSETID is smaller than the target stream top item";
inline constexpr std::string_view kXsetidEntriesAdded =
    "ERR The entries_added specified in XSETID is smaller than the target stream length";
inline constexpr std::string_view kXgroupNeedsKey =
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
    "the MKSTREAM option to create an empty stream automatically.";
inline constexpr std::string_view kEntriesReadNegative =
    "ERR value for ENTRIESREAD must be positive or -1";
inline constexpr std::string_view kBusyGroup = "BUSYGROUP Consumer Group name already exists";
// Redis formats key and group with %s: callers pass them cut at their first NUL byte.
inline std::string no_group(std::string_view key, std::string_view group) {
  return "NOGROUP No such consumer group '" + std::string(group) + "' for key name '" +
         std::string(key) + "'";
}
inline std::string no_key_or_group(std::string_view key, std::string_view group) {
  return "NOGROUP No such key '" + std::string(key) + "' or consumer group '" + std::string(group) +
         "'";
}
inline std::string no_key_or_group_xreadgroup(std::string_view key, std::string_view group) {
  return no_key_or_group(key, group) + " in XREADGROUP with GROUP option";
}
inline constexpr std::string_view kXclaimMinIdle = "ERR Invalid min-idle-time argument for XCLAIM";
// option: "IDLE", "TIME" or "RETRYCOUNT".
inline std::string xclaim_bad_option_value(std::string_view option) {
  return "ERR Invalid " + std::string(option) + " option argument for XCLAIM";
}
inline std::string xclaim_unknown_option(std::string_view option) {
  return "ERR Unrecognized XCLAIM option '" + std::string(option) + "'";
}
inline constexpr std::string_view kXautoclaimMinIdle =
    "ERR Invalid min-idle-time argument for XAUTOCLAIM";
inline constexpr std::string_view kXreadUnbalanced =
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.";
inline constexpr std::string_view kXreadGroupOption =
    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.";
inline constexpr std::string_view kXreadNoackOption =
    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.";
inline constexpr std::string_view kXreadgroupNoGroup = "ERR Missing GROUP option for XREADGROUP";
inline constexpr std::string_view kXreadGreaterId =
    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
    "<consumer> option.";
inline constexpr std::string_view kXreadgroupDollarId =
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would "
    "just return an empty result set.";
// To a client blocked in XREADGROUP or XREAD when what it waits on goes away.
inline constexpr std::string_view kBlockedGroupGone =
    "NOGROUP the consumer group this client was blocked on no longer exists";
inline constexpr std::string_view kBlockedStreamGone = "UNBLOCKED the stream key no longer exists";
}  // namespace kvlab::server::err

// HELLO, COMMAND GETKEYS, SHUTDOWN (server/commands/admin.cpp) and CLIENT (client.cpp).
namespace kvlab::server::err {
inline std::string hello_syntax(std::string_view option) {
  return "ERR Syntax error in HELLO option '" + std::string(option) + "'";
}
inline constexpr std::string_view kGetkeysInvalidCommand = "ERR Invalid command specified";
inline constexpr std::string_view kGetkeysNoKeys = "ERR The command has no key arguments";
inline constexpr std::string_view kGetkeysArity =
    "ERR Invalid number of arguments specified for command";
inline constexpr std::string_view kGetkeysInvalidArgs =
    "ERR Invalid arguments specified for command";
inline constexpr std::string_view kNoShutdown = "ERR No shutdown in progress.";
inline std::string unrecognized_option(std::string_view option) {
  return "ERR Unrecognized option '" + std::string(option) + "'";
}
// attribute_lower: "lib-name" or "lib-ver".
inline std::string client_setinfo_spaces(std::string_view attribute_lower) {
  return "ERR " + std::string(attribute_lower) +
         " cannot contain spaces, newlines or special characters.";
}
inline std::string unknown_client_type(std::string_view type) {
  return "ERR Unknown client type '" + std::string(type) + "'";
}
inline constexpr std::string_view kInvalidClientId = "ERR Invalid client ID";
inline constexpr std::string_view kClientIdPositive = "ERR client-id should be greater than 0";
inline std::string no_such_user(std::string_view user) {
  return "ERR No such user '" + std::string(user) + "'";
}
inline constexpr std::string_view kUnblockReason =
    "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR";
inline constexpr std::string_view kPauseMode = "ERR CLIENT PAUSE mode must be WRITE or ALL";
}  // namespace kvlab::server::err

// Lists and hashes against a real kvlab-server (4 workers) on a free loopback port, through
// hiredis: every command's happy path, Redis 7's error replies, edge cases (negative indexes,
// counts, emptied keys disappearing, expiry), the generic commands on the new types, and
// concurrent clients on one key (no lost pushes, increments or pops).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/checks.hpp"
#include "tests/server/harness.hpp"

using kvtest::check_error;
using kvtest::Client;
using kvtest::kWrongType;
using kvtest::Reply;

namespace {

kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "4"});
  return s;
}

Client& client() {
  static Client c(server().port());
  return c;
}

constexpr std::string_view kNotInteger = "ERR value is not an integer or out of range";
constexpr std::string_view kSyntax = "ERR syntax error";

std::vector<std::string> strs(const Reply& r) {
  std::vector<std::string> out;
  for (const auto& e : r.elements) out.push_back(e.is_nil() ? "(nil)" : e.str);
  return out;
}
std::vector<long long> ints(const Reply& r) {
  std::vector<long long> out;
  for (const auto& e : r.elements) out.push_back(e.integer);
  return out;
}
using V = std::vector<std::string>;
using I = std::vector<long long>;

bool is_empty_array(const Reply& r) {
  return r.type == REDIS_REPLY_ARRAY && r.elements.empty();
}

// Field -> value from a flat HGETALL/HSCAN reply.
std::map<std::string, std::string> pairs(const Reply& r) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
    out[r.elements[i].str] = r.elements[i + 1].str;
  return out;
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("the server starts with 4 workers") {
    REQUIRE(server().running());
    REQUIRE(client().ok());
    CHECK(client()("FLUSHALL").is_status("OK"));
  }

  // ---------------------------------------------------------------------------------- lists

  TEST_CASE("LPUSH and RPUSH add elements at either end and return the length") {
    auto& c = client();
    c("DEL l");
    CHECK(c("RPUSH l a b c").integer == 3);
    CHECK(c("LPUSH l x y").integer == 5);
    CHECK(strs(c("LRANGE l 0 -1")) == V{"y", "x", "a", "b", "c"});
    CHECK(c("TYPE l").is_status("list"));
    check_error(c("LPUSH l"), "ERR wrong number of arguments for 'lpush' command");
    check_error(c("RPUSH"), "ERR wrong number of arguments for 'rpush' command");
  }

  TEST_CASE("LPUSHX and RPUSHX push only onto an existing list") {
    auto& c = client();
    c("DEL lx");
    CHECK(c("LPUSHX lx a").integer == 0);
    CHECK(c("RPUSHX lx a b").integer == 0);
    CHECK(c("EXISTS lx").integer == 0);
    c("RPUSH lx m");
    CHECK(c("LPUSHX lx a b").integer == 3);
    CHECK(c("RPUSHX lx z").integer == 4);
    CHECK(strs(c("LRANGE lx 0 -1")) == V{"b", "a", "m", "z"});
    check_error(c("LPUSHX lx"), "ERR wrong number of arguments for 'lpushx' command");
  }

  TEST_CASE("LPOP and RPOP without count reply a bulk or nil, and the emptied key disappears") {
    auto& c = client();
    c("DEL lp");
    CHECK(c("LPOP lp").is_nil());
    CHECK(c("RPOP lp").is_nil());
    c("RPUSH lp a b c");
    CHECK(c("LPOP lp").str == "a");
    CHECK(c("RPOP lp").str == "c");
    CHECK(c("LPOP lp").str == "b");
    CHECK(c("EXISTS lp").integer == 0);
    CHECK(c("TYPE lp").is_status("none"));
    CHECK(c("LLEN lp").integer == 0);
  }

  TEST_CASE("LPOP and RPOP with count follow Redis 7") {
    auto& c = client();
    c("DEL lc");
    Reply missing = c("LPOP lc 2");
    CHECK(missing.type == REDIS_REPLY_NIL);  // nil array (*-1) when the key is missing
    CHECK(c("RPOP lc 0").type == REDIS_REPLY_NIL);
    c("RPUSH lc a b c d e");
    CHECK(is_empty_array(c("LPOP lc 0")));
    CHECK(strs(c("LPOP lc 2")) == V{"a", "b"});
    CHECK(strs(c("RPOP lc 2")) == V{"e", "d"});
    CHECK(strs(c("RPOP lc 10")) == V{"c"});
    CHECK(c("EXISTS lc").integer == 0);
    c("RPUSH lc a");
    check_error(c("LPOP lc -1"), "ERR value is out of range, must be positive");
    check_error(c("LPOP lc abc"), "ERR value is out of range, must be positive");
    check_error(c("LPOP lc 1 2"), "ERR wrong number of arguments for 'lpop' command");
    check_error(c("RPOP"), "ERR wrong number of arguments for 'rpop' command");
    CHECK(c("LLEN lc").integer == 1);
  }

  TEST_CASE("LLEN counts elements") {
    auto& c = client();
    c("DEL ll");
    CHECK(c("LLEN ll").integer == 0);
    c("RPUSH ll a b c");
    CHECK(c("LLEN ll").integer == 3);
    check_error(c("LLEN ll x"), "ERR wrong number of arguments for 'llen' command");
  }

  TEST_CASE("LRANGE handles negative and out-of-range indexes") {
    auto& c = client();
    c("DEL lr");
    CHECK(is_empty_array(c("LRANGE lr 0 -1")));
    c("RPUSH lr a b c d e");
    CHECK(strs(c("LRANGE lr 0 1")) == V{"a", "b"});
    CHECK(strs(c("LRANGE lr -2 -1")) == V{"d", "e"});
    CHECK(strs(c("LRANGE lr -100 1")) == V{"a", "b"});
    CHECK(strs(c("LRANGE lr 3 100")) == V{"d", "e"});
    CHECK(is_empty_array(c("LRANGE lr 5 10")));
    CHECK(is_empty_array(c("LRANGE lr 3 1")));
    CHECK(is_empty_array(c("LRANGE lr -1 -2")));
    CHECK(strs(c("LRANGE lr 0 0")) == V{"a"});
    check_error(c("LRANGE lr a 1"), kNotInteger);
    check_error(c("LRANGE lr 0"), "ERR wrong number of arguments for 'lrange' command");
  }

  TEST_CASE("LINDEX reads by index; a missing key wins over a bad index") {
    auto& c = client();
    c("DEL li");
    CHECK(c("LINDEX li 0").is_nil());
    CHECK(c("LINDEX li abc").is_nil());
    c("RPUSH li a b c");
    CHECK(c("LINDEX li 0").str == "a");
    CHECK(c("LINDEX li -1").str == "c");
    CHECK(c("LINDEX li -3").str == "a");
    CHECK(c("LINDEX li 3").is_nil());
    CHECK(c("LINDEX li -4").is_nil());
    check_error(c("LINDEX li abc"), kNotInteger);
  }

  TEST_CASE("LSET replaces by index with Redis's errors") {
    auto& c = client();
    c("DEL ls");
    check_error(c("LSET ls 0 x"), "ERR no such key");
    c("RPUSH ls a b c");
    CHECK(c("LSET ls 1 B").is_status("OK"));
    CHECK(c("LSET ls -1 C").is_status("OK"));
    CHECK(strs(c("LRANGE ls 0 -1")) == V{"a", "B", "C"});
    check_error(c("LSET ls 3 x"), "ERR index out of range");
    check_error(c("LSET ls -4 x"), "ERR index out of range");
    check_error(c("LSET ls x x"), kNotInteger);
  }

  TEST_CASE("LREM removes from the head, the tail or everywhere") {
    auto& c = client();
    c("DEL lm");
    CHECK(c("LREM lm 0 a").integer == 0);
    c("RPUSH lm a b a c a d a");
    CHECK(c("LREM lm 2 a").integer == 2);
    CHECK(strs(c("LRANGE lm 0 -1")) == V{"b", "c", "a", "d", "a"});
    CHECK(c("LREM lm -1 a").integer == 1);
    CHECK(strs(c("LRANGE lm 0 -1")) == V{"b", "c", "a", "d"});
    CHECK(c("LREM lm 0 zz").integer == 0);
    c("RPUSH lm a a");
    CHECK(c("LREM lm 0 a").integer == 3);
    CHECK(strs(c("LRANGE lm 0 -1")) == V{"b", "c", "d"});
    CHECK(c("LREM lm -9223372036854775808 b").integer == 1);
    CHECK(c("LREM lm 0 c").integer == 1);
    CHECK(c("LREM lm 0 d").integer == 1);
    CHECK(c("EXISTS lm").integer == 0);
    check_error(c("LREM lm x a"), kNotInteger);
  }

  TEST_CASE("LTRIM keeps a range and removes the key when nothing is left") {
    auto& c = client();
    c("DEL lt");
    CHECK(c("LTRIM lt 0 1").is_status("OK"));
    CHECK(c("EXISTS lt").integer == 0);
    c("RPUSH lt a b c d e");
    CHECK(c("LTRIM lt 1 -2").is_status("OK"));
    CHECK(strs(c("LRANGE lt 0 -1")) == V{"b", "c", "d"});
    CHECK(c("LTRIM lt -100 100").is_status("OK"));
    CHECK(c("LLEN lt").integer == 3);
    CHECK(c("LTRIM lt 2 1").is_status("OK"));
    CHECK(c("EXISTS lt").integer == 0);
    check_error(c("LTRIM lt a 1"), kNotInteger);
  }

  TEST_CASE("LPOS finds matches with RANK, COUNT and MAXLEN") {
    auto& c = client();
    c("DEL lq");
    CHECK(c("LPOS lq a").is_nil());
    CHECK(is_empty_array(c("LPOS lq a COUNT 1")));
    c("RPUSH lq a b c 1 2 3 c c");
    CHECK(c("LPOS lq c").integer == 2);
    CHECK(c("LPOS lq zz").is_nil());
    CHECK(c("LPOS lq c RANK 2").integer == 6);
    CHECK(c("LPOS lq c RANK -1").integer == 7);
    CHECK(c("LPOS lq c RANK -3").integer == 2);
    CHECK(c("LPOS lq c RANK 4").is_nil());
    CHECK(ints(c("LPOS lq c COUNT 2")) == I{2, 6});
    CHECK(ints(c("LPOS lq c COUNT 0")) == I{2, 6, 7});
    CHECK(ints(c("LPOS lq c RANK -1 COUNT 2")) == I{7, 6});
    CHECK(ints(c("LPOS lq c COUNT 0 MAXLEN 7")) == I{2, 6});
    CHECK(c("LPOS lq c MAXLEN 2").is_nil());
    CHECK(is_empty_array(c("LPOS lq zz COUNT 0")));
    check_error(
        c("LPOS lq c RANK 0"),
        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
        "or use negative to start from the end of the list");
    check_error(c("LPOS lq c RANK x"), kNotInteger);
    check_error(c("LPOS lq c RANK -9223372036854775808"),
                "ERR value is out of range, value must between -9223372036854775807 and "
                "9223372036854775807");
    check_error(c("LPOS lq c COUNT -1"), "ERR COUNT can't be negative");
    check_error(c("LPOS lq c MAXLEN -1"), "ERR MAXLEN can't be negative");
    check_error(c("LPOS lq c FOO 1"), kSyntax);
    check_error(c("LPOS lq c COUNT"), kSyntax);
  }

  TEST_CASE("LINSERT inserts around a pivot") {
    auto& c = client();
    c("DEL ln");
    CHECK(c("LINSERT ln BEFORE a x").integer == 0);
    CHECK(c("EXISTS ln").integer == 0);
    c("RPUSH ln a b c");
    CHECK(c("LINSERT ln BEFORE b x").integer == 4);
    CHECK(c("LINSERT ln after c y").integer == 5);
    CHECK(c("LINSERT ln BEFORE zz q").integer == -1);
    CHECK(strs(c("LRANGE ln 0 -1")) == V{"a", "x", "b", "c", "y"});
    check_error(c("LINSERT ln MIDDLE b q"), kSyntax);
    check_error(c("LINSERT ln BEFORE b"), "ERR wrong number of arguments for 'linsert' command");
  }

  TEST_CASE("LMOVE moves between lists and rotates one list") {
    auto& c = client();
    c("DEL src dst");
    CHECK(c("LMOVE src dst LEFT RIGHT").is_nil());
    CHECK(c("EXISTS dst").integer == 0);
    c("RPUSH src a b c");
    CHECK(c("LMOVE src dst LEFT RIGHT").str == "a");
    CHECK(c("LMOVE src dst right left").str == "c");
    CHECK(strs(c("LRANGE src 0 -1")) == V{"b"});
    CHECK(strs(c("LRANGE dst 0 -1")) == V{"c", "a"});
    CHECK(c("LMOVE src dst LEFT LEFT").str == "b");
    CHECK(c("EXISTS src").integer == 0);
    CHECK(strs(c("LRANGE dst 0 -1")) == V{"b", "c", "a"});
    CHECK(c("LMOVE dst dst LEFT RIGHT").str == "b");  // rotate
    CHECK(strs(c("LRANGE dst 0 -1")) == V{"c", "a", "b"});
    CHECK(c("LMOVE dst dst RIGHT LEFT").str == "b");
    CHECK(strs(c("LRANGE dst 0 -1")) == V{"b", "c", "a"});
    check_error(c("LMOVE dst src UP LEFT"), kSyntax);
    check_error(c("LMOVE dst src LEFT DOWN"), kSyntax);
    check_error(c("LMOVE dst src LEFT"), "ERR wrong number of arguments for 'lmove' command");
  }

  TEST_CASE("LMOVE and RPOPLPUSH check both types before popping") {
    auto& c = client();
    c("DEL ms md mstr");
    c("SET mstr v");
    c("RPUSH ms a b");
    check_error(c("LMOVE ms mstr LEFT LEFT"), kWrongType);
    check_error(c("RPOPLPUSH ms mstr"), kWrongType);
    CHECK(c("LLEN ms").integer == 2);  // nothing lost
    check_error(c("LMOVE mstr ms LEFT LEFT"), kWrongType);
    CHECK(c("LMOVE nosuch mstr LEFT LEFT").is_nil());  // a missing source wins, as in Redis
    CHECK(c("RPOPLPUSH ms md").str == "b");
    CHECK(c("RPOPLPUSH ms md").str == "a");
    CHECK(strs(c("LRANGE md 0 -1")) == V{"a", "b"});
    CHECK(c("EXISTS ms").integer == 0);
    CHECK(c("RPOPLPUSH ms md").is_nil());
    CHECK(c("RPOPLPUSH md md").str == "b");
    CHECK(strs(c("LRANGE md 0 -1")) == V{"b", "a"});
    check_error(c("RPOPLPUSH md"), "ERR wrong number of arguments for 'rpoplpush' command");
    Reply docs = c("COMMAND DOCS lmove");
    REQUIRE(docs.elements.size() == 2);
    CHECK(docs.elements[1].elements[1].str.find("atomic per key") ==
          std::string::npos);  // atomic as a whole
  }

  TEST_CASE("list commands on a string key and string commands on a list key answer WRONGTYPE") {
    auto& c = client();
    c("DEL wl ws");
    c("SET ws v");
    c("RPUSH wl a");
    for (const char* cmd : {"LPUSH ws a",      "RPUSH ws a",  "LPUSHX ws a",
                            "RPUSHX ws a",     "LPOP ws",     "RPOP ws",
                            "LPOP ws 2",       "LLEN ws",     "LRANGE ws 0 -1",
                            "LINDEX ws 0",     "LSET ws 0 a", "LREM ws 0 a",
                            "LTRIM ws 0 1",    "LPOS ws a",   "LINSERT ws BEFORE a b",
                            "RPOPLPUSH ws wl", "HSET wl f v", "HGET wl f",
                            "HLEN wl",         "HGETALL wl"}) {
      CAPTURE(cmd);
      check_error(c(cmd), kWrongType);
    }
    for (const char* cmd :
         {"GET wl", "APPEND wl x", "INCR wl", "STRLEN wl", "GETRANGE wl 0 1", "SET wl v GET",
          "GETSET wl v", "GETDEL wl", "INCRBYFLOAT wl 1", "SETRANGE wl 0 x", "GETEX wl"}) {
      CAPTURE(cmd);
      check_error(c(cmd), kWrongType);
    }
    CHECK(strs(c("MGET wl ws")) == V{"(nil)", "v"});
    CHECK(c("LLEN wl").integer == 1);      // untouched by the failed commands
    CHECK(c("SET wl v").is_status("OK"));  // plain SET replaces any type, as in Redis
    CHECK(c("TYPE wl").is_status("string"));
  }

  TEST_CASE("generic commands work on lists and hashes") {
    auto& c = client();
    c("FLUSHALL");
    c("RPUSH gl a b");
    c("HSET gh f v");
    c("SET gs v");
    CHECK(c("EXISTS gl gh gs nope").integer == 3);
    CHECK(c("TYPE gl").is_status("list"));
    CHECK(c("TYPE gh").is_status("hash"));
    CHECK(c("DBSIZE").integer == 3);
    std::set<std::string> keys;
    for (const auto& k : c("KEYS g*").elements) keys.insert(k.str);
    CHECK(keys == std::set<std::string>{"gl", "gh", "gs"});
    CHECK(strs(c("SCAN 0 TYPE list COUNT 100").elements[1]) == V{"gl"});
    CHECK(strs(c("SCAN 0 TYPE hash COUNT 100").elements[1]) == V{"gh"});
    for (int i = 0; i < 10; ++i) {
      const std::string k = c("RANDOMKEY").str;
      CHECK(keys.count(k) == 1);
    }
    CHECK(c("DEL gl gh").integer == 2);
    CHECK(c("EXISTS gl gh").integer == 0);
    CHECK(c("LLEN gl").integer == 0);
    CHECK(c("HLEN gh").integer == 0);
    CHECK(c("RPUSH gl again").integer == 1);  // a fresh list after DEL
    CHECK(c("COMMAND COUNT").integer >= 84);
    Reply info = c("COMMAND INFO lpush hscan");
    REQUIRE(info.elements.size() == 2);
    CHECK(info.elements[0].elements[1].integer == -3);
    CHECK(info.elements[1].elements[1].integer == -3);
    Reply docs = c("COMMAND DOCS hset");
    REQUIRE(docs.elements.size() == 2);
    CHECK(strs(docs.elements[1]).at(5) == "hash");
  }

  TEST_CASE("EXPIRE on a list and a hash: TTL, lazy expiry, then a fresh container") {
    auto& c = client();
    c("DEL el eh");
    c("RPUSH el a b");
    c("HSET eh f v");
    CHECK(c("EXPIRE el 100").integer == 1);
    CHECK(c("TTL el").integer == 100);
    CHECK(c("RPUSH el c").integer == 3);
    CHECK(c("TTL el").integer == 100);  // writes keep the TTL
    CHECK(c("PERSIST el").integer == 1);
    CHECK(c("TTL el").integer == -1);
    CHECK(c("PEXPIRE el 50").integer == 1);
    CHECK(c("PEXPIRE eh 50").integer == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    CHECK(c("LLEN el").integer == 0);
    CHECK(c("EXISTS el eh").integer == 0);
    CHECK(c("HGET eh f").is_nil());
    CHECK(c("RPUSH el fresh").integer == 1);
    CHECK(c("TTL el").integer == -1);
    CHECK(c("HSET eh g w").integer == 1);
    CHECK(c("HLEN eh").integer == 1);
  }

  // --------------------------------------------------------------------------------- hashes

  TEST_CASE("HSET, HMSET and HSETNX set fields") {
    auto& c = client();
    c("DEL h");
    CHECK(c("HSET h a 1 b 2").integer == 2);
    CHECK(c("HSET h a 10 c 3").integer == 1);
    CHECK(c("HMSET h d 4 e 5").is_status("OK"));
    CHECK(c("HSETNX h a 99").integer == 0);
    CHECK(c("HSETNX h f 6").integer == 1);
    CHECK(pairs(c("HGETALL h")) ==
          std::map<std::string, std::string>{
              {"a", "10"}, {"b", "2"}, {"c", "3"}, {"d", "4"}, {"e", "5"}, {"f", "6"}});
    CHECK(c("TYPE h").is_status("hash"));
    check_error(c("HSET h a 1 b"), "ERR wrong number of arguments for 'hset' command");
    check_error(c("HSET h a"), "ERR wrong number of arguments for 'hset' command");
    check_error(c("HMSET h a 1 b"), "ERR wrong number of arguments for 'hmset' command");
    check_error(c("HSETNX h a"), "ERR wrong number of arguments for 'hsetnx' command");
    CHECK(c.cmd({"HSET", "h", std::string("bin\0f", 5), std::string("v\0", 2)}).integer == 1);
    CHECK(c.cmd({"HGET", "h", std::string("bin\0f", 5)}).str == std::string("v\0", 2));
  }

  TEST_CASE("HGET, HMGET, HEXISTS, HSTRLEN and HLEN read fields") {
    auto& c = client();
    c("DEL hr");
    CHECK(c("HGET hr a").is_nil());
    CHECK(strs(c("HMGET hr a b")) == V{"(nil)", "(nil)"});
    CHECK(c("HEXISTS hr a").integer == 0);
    CHECK(c("HSTRLEN hr a").integer == 0);
    CHECK(c("HLEN hr").integer == 0);
    c("HSET hr a hello b world");
    CHECK(c("HGET hr a").str == "hello");
    CHECK(c("HGET hr zz").is_nil());
    CHECK(strs(c("HMGET hr a zz b")) == V{"hello", "(nil)", "world"});
    CHECK(c("HEXISTS hr a").integer == 1);
    CHECK(c("HEXISTS hr zz").integer == 0);
    CHECK(c("HSTRLEN hr a").integer == 5);
    CHECK(c("HSTRLEN hr zz").integer == 0);
    CHECK(c("HLEN hr").integer == 2);
    check_error(c("HGET hr"), "ERR wrong number of arguments for 'hget' command");
    check_error(c("HMGET hr"), "ERR wrong number of arguments for 'hmget' command");
    check_error(c("HEXISTS hr"), "ERR wrong number of arguments for 'hexists' command");
  }

  TEST_CASE("HDEL removes fields and the emptied hash disappears") {
    auto& c = client();
    c("DEL hd");
    CHECK(c("HDEL hd a").integer == 0);
    c("HSET hd a 1 b 2 c 3");
    CHECK(c("HDEL hd a zz").integer == 1);
    CHECK(c("HDEL hd b c a").integer == 2);
    CHECK(c("EXISTS hd").integer == 0);
    CHECK(c("TYPE hd").is_status("none"));
    check_error(c("HDEL hd"), "ERR wrong number of arguments for 'hdel' command");
  }

  TEST_CASE("HGETALL, HKEYS and HVALS list the hash") {
    auto& c = client();
    c("DEL ha");
    CHECK(is_empty_array(c("HGETALL ha")));
    CHECK(is_empty_array(c("HKEYS ha")));
    CHECK(is_empty_array(c("HVALS ha")));
    c("HSET ha x 1 y 2");
    CHECK(c("HGETALL ha").elements.size() == 4);
    const V keys = strs(c("HKEYS ha"));
    CHECK(std::set<std::string>(keys.begin(), keys.end()) == std::set<std::string>{"x", "y"});
    const V vals = strs(c("HVALS ha"));
    CHECK(std::set<std::string>(vals.begin(), vals.end()) == std::set<std::string>{"1", "2"});
    check_error(c("HKEYS"), "ERR wrong number of arguments for 'hkeys' command");
  }

  TEST_CASE("HINCRBY counts and refuses non-integers and overflow") {
    auto& c = client();
    c("DEL hi");
    CHECK(c("HINCRBY hi n 5").integer == 5);
    CHECK(c("HINCRBY hi n -7").integer == -2);
    c("HSET hi s abc big 9223372036854775807 neg -9223372036854775808");
    check_error(c("HINCRBY hi s 1"), "ERR hash value is not an integer");
    check_error(c("HINCRBY hi n x"), kNotInteger);
    check_error(c("HINCRBY hi big 1"), "ERR increment or decrement would overflow");
    check_error(c("HINCRBY hi neg -1"), "ERR increment or decrement would overflow");
    CHECK(c("HGET hi big").str == "9223372036854775807");
    check_error(c("HINCRBY nohash n x"), kNotInteger);
    CHECK(c("EXISTS nohash").integer == 0);
    check_error(c("HINCRBY hi n"), "ERR wrong number of arguments for 'hincrby' command");
  }

  TEST_CASE("HINCRBYFLOAT formats like INCRBYFLOAT and refuses non-floats") {
    auto& c = client();
    c("DEL hf");
    CHECK(c("HINCRBYFLOAT hf x 10.5").str == "10.5");
    CHECK(c("HINCRBYFLOAT hf x 0.1").str == "10.6");
    CHECK(c("HINCRBYFLOAT hf x -5").str == "5.6");
    CHECK(c("HINCRBYFLOAT hf y 3").str == "3");
    CHECK(c("HINCRBYFLOAT hf y 3.0e3").str == "3003");
    c("HSET hf s abc");
    check_error(c("HINCRBYFLOAT hf s 1"), "ERR hash value is not a float");
    check_error(c("HINCRBYFLOAT hf x abc"), "ERR value is not a valid float");
    // An infinite increment is refused before the sum (found by tests/compat; Redis 7.0's text).
    check_error(c("HINCRBYFLOAT hf x inf"), "ERR value is NaN or Infinity");
    check_error(c("HINCRBYFLOAT nohash x -inf"), "ERR value is NaN or Infinity");
    CHECK(c("EXISTS nohash").integer == 0);  // no empty hash left behind
    CHECK(c("HGET hf x").str == "5.6");
  }

  TEST_CASE("HRANDFIELD picks fields with and without repeats") {
    auto& c = client();
    c("DEL hx");
    CHECK(c("HRANDFIELD hx").is_nil());
    CHECK(is_empty_array(c("HRANDFIELD hx 3")));
    CHECK(is_empty_array(c("HRANDFIELD hx -3 WITHVALUES")));
    std::map<std::string, std::string> all;
    for (int i = 0; i < 200; ++i) {
      const std::string f = "f" + std::to_string(i), v = "v" + std::to_string(i);
      c.cmd({"HSET", "hx", f, v});
      all[f] = v;
    }
    CHECK(all.count(c("HRANDFIELD hx").str) == 1);
    CHECK(is_empty_array(c("HRANDFIELD hx 0")));
    for (const char* n : {"5", "100", "199"}) {  // both distinct-pick strategies
      CAPTURE(n);
      const V got = strs(c(std::string("HRANDFIELD hx ") + n));
      CHECK(got.size() == static_cast<std::size_t>(std::stoi(n)));
      CHECK(std::set<std::string>(got.begin(), got.end()).size() == got.size());
      for (const auto& f : got) CHECK(all.count(f) == 1);
    }
    CHECK(c("HRANDFIELD hx 1000").elements.size() == 200);
    Reply wv = c("HRANDFIELD hx 3 WITHVALUES");
    REQUIRE(wv.elements.size() == 6);
    for (const auto& [f, v] : pairs(wv)) CHECK(all.at(f) == v);
    // Negative: exactly |count| picks, repeats allowed.
    c("DEL hy");
    c("HSET hy only 1");
    CHECK(strs(c("HRANDFIELD hy -5")) == V{"only", "only", "only", "only", "only"});
    CHECK(c("HRANDFIELD hy -2 WITHVALUES").elements.size() == 4);
    CHECK(strs(c("HRANDFIELD hy 5")) == V{"only"});
    // Over many picks every field of a small hash shows up.
    c("HSET hy two 2 three 3");
    const V many = strs(c("HRANDFIELD hy -300"));
    CHECK(std::set<std::string>(many.begin(), many.end()).size() == 3);
    check_error(c("HRANDFIELD hx x"), kNotInteger);
    check_error(c("HRANDFIELD hx 1 WITHSCORES"), kSyntax);
    check_error(c("HRANDFIELD hx 1 WITHVALUES x"), kSyntax);
    check_error(c("HRANDFIELD hx -4611686018427387904 WITHVALUES"), "ERR value is out of range");
    check_error(c("HRANDFIELD hx 4611686018427387904 WITHVALUES"), "ERR value is out of range");
    check_error(c("HRANDFIELD hx -9223372036854775808"),
                "ERR value is out of range, value must between -9223372036854775807 and "
                "9223372036854775807");
  }

  TEST_CASE("HRANDFIELD still finds fields after most of a big hash was deleted") {
    auto& c = client();
    c("DEL hz");
    for (int b = 0; b < 20; ++b) {
      std::vector<std::string> args = {"HSET", "hz"};
      for (int i = 0; i < 500; ++i) {
        args.push_back("f" + std::to_string(b * 500 + i));
        args.push_back("v");
      }
      c.cmd(args);
    }
    CHECK(c("HLEN hz").integer == 10000);
    for (int b = 0; b < 20; ++b) {
      std::vector<std::string> args = {"HDEL", "hz"};
      for (int i = 0; i < 500; ++i)
        if (b * 500 + i >= 3) args.push_back("f" + std::to_string(b * 500 + i));
      c.cmd(args);
    }
    CHECK(c("HLEN hz").integer == 3);
    const V got = strs(c("HRANDFIELD hz -50"));
    CHECK(got.size() == 50);
    for (const auto& f : got) CHECK((f == "f0" || f == "f1" || f == "f2"));
  }

  TEST_CASE("HSCAN pages through small and large hashes") {
    auto& c = client();
    c("DEL hs");
    Reply none = c("HSCAN hs 0");
    REQUIRE(none.elements.size() == 2);
    CHECK(none.elements[0].str == "0");
    CHECK(none.elements[1].elements.empty());
    CHECK(c("HSCAN hs 0 BADOPT").elements[0].str == "0");  // missing key first, as in Redis
    c("HSET hs a 1 b 2 c 3 other 4");
    Reply small = c("HSCAN hs 0");
    CHECK(small.elements[0].str == "0");
    CHECK(pairs(small.elements[1]).size() == 4);
    Reply matched = c("HSCAN hs 0 MATCH [ab]");
    CHECK(pairs(matched.elements[1]) == std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}});
    CHECK(strs(c("HSCAN hs 0 MATCH o* NOVALUES").elements[1]) == V{"other"});
    check_error(c("HSCAN hs abc"), "ERR invalid cursor");
    check_error(c("HSCAN hs 0 COUNT 0"), kSyntax);
    check_error(c("HSCAN hs 0 COUNT x"), kNotInteger);
    check_error(c("HSCAN hs 0 FOO"), kSyntax);
    check_error(c("HSCAN hs"), "ERR wrong number of arguments for 'hscan' command");

    // A large hash: the cursor makes progress and every field comes back exactly once when the
    // hash does not change; with deletions in between, every field present throughout is seen.
    c("DEL big");
    for (int b = 0; b < 5; ++b) {
      std::vector<std::string> args = {"HSET", "big"};
      for (int i = 0; i < 200; ++i) {
        args.push_back("k" + std::to_string(b * 200 + i));
        args.push_back("v" + std::to_string(b * 200 + i));
      }
      c.cmd(args);
    }
    std::multiset<std::string> seen;
    std::string cursor = "0";
    int calls = 0;
    do {
      Reply r = c.cmd({"HSCAN", "big", cursor, "COUNT", "50"});
      REQUIRE(r.elements.size() == 2);
      cursor = r.elements[0].str;
      CHECK(r.elements[1].elements.size() <= 2 * 60);
      for (const auto& [f, v] : pairs(r.elements[1])) {
        seen.insert(f);
        CHECK(v == "v" + f.substr(1));
      }
    } while (cursor != "0" && ++calls < 1000);
    CHECK(calls >= 15);  // really paged
    CHECK(seen.size() == 1000);
    CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 1000);

    std::set<std::string> seen2;
    cursor = "0";
    calls = 0;
    int deleted = 0;
    do {
      Reply r = c.cmd({"HSCAN", "big", cursor, "COUNT", "30", "NOVALUES"});
      REQUIRE(r.elements.size() == 2);
      cursor = r.elements[0].str;
      for (const auto& f : r.elements[1].elements) seen2.insert(f.str);
      // Delete fields from the even half while scanning; the odd half must all be seen.
      c.cmd({"HDEL", "big", "k" + std::to_string(2 * deleted),
             "k" + std::to_string(2 * deleted + 2)});
      deleted += 2;
    } while (cursor != "0" && ++calls < 1000);
    for (int i = 1; i < 1000; i += 2) CHECK(seen2.count("k" + std::to_string(i)) == 1);
  }

  // ---------------------------------------------------------------------------- concurrency

  // Property: LPUSH is atomic on its key — 4 clients × 10,000 pushes (pipelined) onto one list
  // leave exactly 40,000 elements, each pushed value present exactly once.
  TEST_CASE("4 clients pushing 10,000 elements each onto one list lose nothing") {
    auto& c = client();
    c("DEL cl");
    const int port = server().port();
    std::vector<std::thread> ts;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
      ts.emplace_back([port, t, &failures] {
        Client w(port);
        if (!w.ok()) {
          ++failures;
          return;
        }
        for (int b = 0; b < 100; ++b) {
          for (int i = 0; i < 100; ++i)
            w.append({"LPUSH", "cl", std::to_string(t) + ":" + std::to_string(b * 100 + i)});
          for (int i = 0; i < 100; ++i)
            if (w.get_reply().type != REDIS_REPLY_INTEGER) ++failures;
        }
      });
    }
    for (auto& t : ts) t.join();
    CHECK(failures.load() == 0);
    CHECK(c("LLEN cl").integer == 40000);
    Reply all = c("LRANGE cl 0 -1");
    REQUIRE(all.elements.size() == 40000);
    std::set<std::string> uniq;
    for (const auto& e : all.elements) uniq.insert(e.str);
    CHECK(uniq.size() == 40000);
    for (int t = 0; t < 4; ++t) {
      CHECK(uniq.count(std::to_string(t) + ":0") == 1);
      CHECK(uniq.count(std::to_string(t) + ":9999") == 1);
    }
    c("DEL cl");
  }

  // Property: HINCRBY is atomic on its key — 4 clients × 10,000 increments of one field sum to
  // exactly 40,000.
  TEST_CASE("4 clients incrementing one hash field 10,000 times each reach exactly 40,000") {
    auto& c = client();
    c("DEL ch");
    const int port = server().port();
    std::vector<std::thread> ts;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
      ts.emplace_back([port, &failures] {
        Client w(port);
        if (!w.ok()) {
          ++failures;
          return;
        }
        for (int b = 0; b < 100; ++b) {
          for (int i = 0; i < 100; ++i) w.append({"HINCRBY", "ch", "n", "1"});
          for (int i = 0; i < 100; ++i)
            if (w.get_reply().type != REDIS_REPLY_INTEGER) ++failures;
        }
      });
    }
    for (auto& t : ts) t.join();
    CHECK(failures.load() == 0);
    CHECK(c("HGET ch n").str == "40000");
  }

  // Property: pushes racing with pops that keep emptying the list (so the container is marked
  // dead and unlinked over and over) are never lost: pushed == popped + final LLEN, and no element
  // is popped twice.
  TEST_CASE("concurrent LPUSH and LPOP on a list that keeps emptying lose nothing") {
    auto& c = client();
    c("DEL cp");
    const int port = server().port();
    constexpr int kPushers = 2, kPoppers = 2, kPerPusher = 10000;
    // empty_pops: pops that found the list empty or emptied it (an RPOP short of its count).
    std::atomic<long long> pushed{0}, popped{0}, empty_pops{0};
    std::atomic<int> pushers_done{0}, failures{0};
    std::vector<std::set<std::string>> got(kPoppers);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::vector<std::thread> ts;
    for (int t = 0; t < kPushers; ++t) {
      ts.emplace_back([&, t] {
        Client w(port);
        if (!w.ok()) {
          ++failures;
          ++pushers_done;
          return;
        }
        // One element per round trip, so the poppers (up to 100 per RPOP) keep emptying the list.
        for (int i = 0; i < kPerPusher && std::chrono::steady_clock::now() < deadline; ++i) {
          const Reply r = w.cmd({"LPUSH", "cp", std::to_string(t) + ":" + std::to_string(i)});
          if (r.type == REDIS_REPLY_INTEGER) {
            ++pushed;
          } else {
            ++failures;
          }
        }
        ++pushers_done;
      });
    }
    for (int t = 0; t < kPoppers; ++t) {
      ts.emplace_back([&, t] {
        Client w(port);
        if (!w.ok()) {
          ++failures;
          return;
        }
        // Pop until the pushers are done (bounded by the deadline and a call budget).
        for (int calls = 0; calls < 1000000 && std::chrono::steady_clock::now() < deadline;
             ++calls) {
          const bool done = pushers_done.load() == kPushers;
          Reply r = w(calls % 2 == 0 ? "LPOP cp" : "RPOP cp 100");
          if (r.is_nil()) {
            ++empty_pops;
            if (done) break;
            continue;
          }
          std::vector<std::string> items;
          if (r.type == REDIS_REPLY_STRING) {
            items.push_back(r.str);
          } else if (r.type == REDIS_REPLY_ARRAY) {
            for (const auto& e : r.elements) items.push_back(e.str);
            // Fewer than asked for: this pop took the list's last element.
            if (items.size() < 100) ++empty_pops;
          } else {
            ++failures;
            continue;
          }
          for (auto& s : items) {
            if (!got[t].insert(s).second) ++failures;  // popped twice
            ++popped;
          }
          if (done && items.empty()) break;
        }
      });
    }
    for (auto& t : ts) t.join();
    CHECK(std::chrono::steady_clock::now() < deadline);
    CHECK(failures.load() == 0);
    const long long final_len = c("LLEN cp").integer;
    CHECK(pushed.load() == kPushers * kPerPusher);
    CHECK(pushed.load() == popped.load() + final_len);
    std::size_t overlap = 0;
    for (const auto& s : got[0]) overlap += got[1].count(s);
    CHECK(overlap == 0);
    CHECK(empty_pops.load() >= 10);  // the list really was emptied (and re-created) repeatedly
    MESSAGE("pushed " << pushed.load() << ", popped " << popped.load() << ", left " << final_len
                      << ", empty pops " << empty_pops.load());
    c("DEL cp");
  }

  // Property: LMOVE between two lists in both directions never loses or duplicates an element
  // (per-key atomicity is enough for conservation).
  TEST_CASE("concurrent LMOVE between two lists conserves the elements") {
    auto& c = client();
    c("DEL ma mb");
    for (int b = 0; b < 10; ++b) {
      std::vector<std::string> args = {"RPUSH", "ma"};
      for (int i = 0; i < 100; ++i) args.push_back(std::to_string(b * 100 + i));
      c.cmd(args);
    }
    const int port = server().port();
    std::atomic<int> failures{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) {
      ts.emplace_back([&, t] {
        Client w(port);
        if (!w.ok()) {
          ++failures;
          return;
        }
        for (int b = 0; b < 30; ++b) {
          for (int i = 0; i < 50; ++i)
            w.append({"LMOVE", t % 2 ? "ma" : "mb", t % 2 ? "mb" : "ma", "LEFT", "RIGHT"});
          for (int i = 0; i < 50; ++i) {
            const Reply r = w.get_reply();
            if (r.type != REDIS_REPLY_STRING && !r.is_nil()) ++failures;
          }
        }
      });
    }
    for (auto& t : ts) t.join();
    CHECK(failures.load() == 0);
    std::set<std::string> all;
    for (const auto& e : c("LRANGE ma 0 -1").elements) all.insert(e.str);
    for (const auto& e : c("LRANGE mb 0 -1").elements) all.insert(e.str);
    CHECK(c("LLEN ma").integer + c("LLEN mb").integer == 1000);
    CHECK(all.size() == 1000);
  }

  // Found by tests/compat: an empty HSCAN cursor is 0 (strtoul), as in Redis.
  TEST_CASE("HSCAN reads the cursor as Redis's strtoul does") {
    auto& c = client();
    c("DEL hcur");
    CHECK(c.cmd({"HSCAN", "hcur", ""}).elements.size() == 2);
    const Reply r = c.cmd({"HSCAN", "hcur", "+0"});
    REQUIRE(r.elements.size() == 2);
    CHECK(r.elements[0].str == "0");
    check_error(c.cmd({"HSCAN", "hcur", " 0"}), "ERR invalid cursor");
    check_error(c.cmd({"HSCAN", "hcur", "-"}), "ERR invalid cursor");
  }

  // Found by tests/compat: Redis checks the count's range before the WITHVALUES syntax.
  TEST_CASE("HRANDFIELD checks the count's range before the rest of the syntax") {
    auto& c = client();
    check_error(c("HRANDFIELD hr -9223372036854775808 x"),
                "ERR value is out of range, value must between -9223372036854775807 and "
                "9223372036854775807");
    check_error(c("HRANDFIELD hr 1 x"), "ERR syntax error");
  }

  TEST_CASE("the server exits cleanly") {
    CHECK(server().stop() == 0);
  }
}

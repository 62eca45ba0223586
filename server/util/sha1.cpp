// SHA-1 through libcrypto's EVP interface (see sha1.hpp).
#include "server/util/sha1.hpp"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace kvlab::server {
namespace {

// OpenSSL cannot hash without its default provider's SHA-1 (a FIPS-only configuration lacks
// it) or without memory for a context; neither depends on a client's input, and a wrong script
// name or digest would be worse than stopping, so the server stops with the reason.
[[noreturn]] void fatal(const char* what) {
  std::fprintf(stderr, "kvlab-server: libcrypto SHA-1: %s\n", what);
  std::abort();
}

// Fetched once for the process (thread-safe static initialization); never freed, so that a thread
// still hashing while the process exits finds it intact.
const EVP_MD* sha1_md() {
  static const EVP_MD* const md = [] {
    EVP_MD* m = EVP_MD_fetch(nullptr, "SHA1", nullptr);
    if (m == nullptr) fatal("the SHA1 algorithm is not available");
    return m;
  }();
  return md;
}

// This thread's context, reset by each EVP_DigestInit_ex2.
EVP_MD_CTX* thread_context() {
  thread_local const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                                 &EVP_MD_CTX_free);
  if (ctx == nullptr) fatal("cannot allocate a digest context");
  return ctx.get();
}

}  // namespace

Sha1Digest sha1(std::initializer_list<std::string_view> parts) {
  EVP_MD_CTX* ctx = thread_context();
  Sha1Digest out{};
  unsigned int n = 0;
  bool ok = EVP_DigestInit_ex2(ctx, sha1_md(), nullptr) == 1;
  for (const std::string_view p : parts)
    ok = ok && (p.empty() || EVP_DigestUpdate(ctx, p.data(), p.size()) == 1);
  ok = ok && EVP_DigestFinal_ex(ctx, out.data(), &n) == 1 && n == kSha1Bytes;
  if (!ok) fatal("hashing failed");
  return out;
}

std::string to_hex(const Sha1Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * kSha1Bytes, '0');
  for (std::size_t i = 0; i < kSha1Bytes; ++i) {
    out[2 * i] = kHex[d[i] >> 4];
    out[2 * i + 1] = kHex[d[i] & 0xf];
  }
  return out;
}

}  // namespace kvlab::server

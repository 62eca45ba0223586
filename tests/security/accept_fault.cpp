// An LD_PRELOAD shim for tests/security (case_accept_retries_transient_errors): the first
// KVLAB_ACCEPT_FAULTS calls of accept4() in the process fail with EPROTO, the error accept(2)
// returns for a connection that had a protocol error while it waited in the backlog. A fault
// injector for that one test; nothing in kvlab links it.
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdlib>

namespace {
using Accept4 = int (*)(int, sockaddr*, socklen_t*, int);
// -1 until read from the environment. seq_cst throughout: a test shim, not a hot path.
std::atomic<long> g_faults_left{-1};
}  // namespace

extern "C" int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  static const auto real = reinterpret_cast<Accept4>(dlsym(RTLD_NEXT, "accept4"));
  long expected = -1;
  if (g_faults_left.load() == -1) {
    const char* v = std::getenv("KVLAB_ACCEPT_FAULTS");
    g_faults_left.compare_exchange_strong(expected, v != nullptr ? std::atol(v) : 0);
  }
  long n = g_faults_left.load();
  while (n > 0) {
    if (g_faults_left.compare_exchange_weak(n, n - 1)) {
      errno = EPROTO;
      return -1;
    }
  }
  return real(fd, addr, len, flags);
}

// used_memory: the bytes kvlab-server has allocated and not freed, counted as Redis's zmalloc
// counts them.
//
// How it is computed. server/util/memory.cpp replaces the global operator new and delete (every
// variant) of the kvlab-server executable. Each allocation adds the allocator's usable size of the
// block (malloc_usable_size: tbbmalloc's size class, or glibc's chunk) and each free subtracts it;
// the pool's large blocks (structures/common/pool.hpp, > 512 B, straight from malloc/calloc) are
// added through pool::large_bytes(). So the figure covers keys, values, containers, the backends'
// nodes and tables, connection buffers and every std:: container, at the allocator's granularity.
// It does not count: memory that C code mallocs directly (Lua's interpreter state), the
// allocator's own metadata and free lists, and freed blocks that tbbmalloc keeps for reuse — that
// is the difference to RSS (used_memory_rss). Blocks that sit in the pool's per-thread block
// caches (at most 3.6 MiB per thread, pool.hpp) were allocated through operator new and still
// count as used, as blocks in an allocator's free list count in RSS.
//
// Thread safety and cost: each thread adds its allocations to a plain thread-local delta and
// folds it into one global atomic when it passes ±kFlushBytes, so an allocation costs a
// malloc_usable_size() call and a thread-local add; the global line is written once per 32 KiB
// of net allocation. A reader therefore sees the total up to kFlushBytes per thread stale, and a
// thread that exits loses its unfolded delta (at most kFlushBytes). pool::large_bytes() is
// counted the same way (up to 32 KiB per thread stale; folded at thread exit).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvlab::server::memory {

inline constexpr std::int64_t kFlushBytes = 32 * 1024;

// Bytes allocated and not freed (see above) once counting started; before, the resident set size.
std::size_t used_bytes();
// Whether allocations are counted. Counting starts with the first non-zero maxmemory (flag or
// CONFIG SET) and then stays on: it costs a malloc_usable_size() per allocation and free, about a
// quarter of a pipelined SET's server CPU in an A/B on the 2-vCPU VM, which a server without a
// limit does not pay. Before, used_bytes() is the resident set size, as INFO showed it.
bool counting();
// Starts counting; true for the one caller that started it. The blocks allocated before were not
// counted, and their frees will be subtracted: the callers add an estimate of them with
// add_baseline() (server/features/eviction.cpp: MEMORY USAGE's estimate summed over the keyspace;
// commands/config.cpp: the connections' memory and the script caches). With --maxmemory,
// counting starts before the keyspace exists and the baseline is 0.
bool start_counting();
void add_baseline(std::int64_t bytes);
// The resident set size (/proc/self/statm), 0 when unreadable: INFO's used_memory_rss, MEMORY
// STATS, and used_bytes() before counting starts.
std::size_t rss_bytes();

}  // namespace kvlab::server::memory

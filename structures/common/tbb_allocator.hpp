// The allocator the TBB-backed wrappers use: TBB's own (tbb::tbb_allocator, which uses the
// scalable tbbmalloc pools when present) in normal builds; std::allocator under ThreadSanitizer,
// because tbbmalloc recycles memory inside an uninstrumented library and TSan then reports every
// reuse of a node as a race. The containers' algorithms are the same either way.
#pragma once

#include <memory>

#include <oneapi/tbb/cache_aligned_allocator.h>
#include <oneapi/tbb/tbb_allocator.h>

namespace kvlab {

#if defined(__SANITIZE_THREAD__)
template <class T>
using TbbAllocator = std::allocator<T>;
template <class T>
using TbbQueueAllocator = std::allocator<T>;
#else
template <class T>
using TbbAllocator = tbb::tbb_allocator<T>;  // the containers' default
template <class T>
using TbbQueueAllocator = tbb::cache_aligned_allocator<T>;  // concurrent_queue's default
#endif

}  // namespace kvlab

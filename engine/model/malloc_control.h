// What the engine asks of the C library's allocator, where that is glibc's
// malloc (a sanitizer build replaces the allocator, and glibc's calls then
// act on heaps glibc never set up: AddressSanitizer builds crashed in
// malloc_trim). Elsewhere it does nothing.
#pragma once

#include <cstddef>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PIPESCOPE_OWN_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define PIPESCOPE_OWN_MALLOC 0
#endif
#endif
#ifndef PIPESCOPE_OWN_MALLOC
#define PIPESCOPE_OWN_MALLOC 1
#endif

namespace pipescope {

/// Hands the free memory of the allocator's heaps back to the system.
inline void release_free_memory() {
#if defined(__GLIBC__) && PIPESCOPE_OWN_MALLOC
  malloc_trim(0);
#endif
}

}  // namespace pipescope

// What the engine asks of the kernel about the pages of its own large
// arrays: fault them in ahead of the thread that will write them, and give
// back those faulted in but never used.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

namespace pipescope {

namespace page_control_detail {
inline constexpr std::uintptr_t kPage = 4096;
inline std::uintptr_t page_down(std::uintptr_t a) { return a & ~(kPage - 1); }
inline std::uintptr_t page_up(std::uintptr_t a) { return page_down(a + kPage - 1); }
}  // namespace page_control_detail

/// Faults in the pages of [begin, begin + bytes) for writing without
/// changing what they hold (MADV_POPULATE_WRITE, Linux 5.14): a page that is
/// already there, even one another thread is writing at that moment, keeps
/// its bytes. A thread with time to spare takes the page faults (and the
/// kernel's zeroing of fresh pages) that a busier thread would otherwise
/// take as it writes. Does nothing where the kernel cannot.
inline void populate_for_writing(const void* begin, std::size_t bytes) {
#if defined(MADV_POPULATE_WRITE)
  using namespace page_control_detail;
  const auto from = page_down(reinterpret_cast<std::uintptr_t>(begin));
  const auto to = page_up(reinterpret_cast<std::uintptr_t>(begin) + bytes);
  if (to > from) {
    // Failure (an older kernel, or memory no longer mapped) costs nothing:
    // the writer then faults the pages in itself.
    (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
  }
#else
  (void)begin;
  (void)bytes;
#endif
}

/// Gives back the whole pages of bytes [used, capacity) after `data`, the
/// unused end of an array's allocation (their contents are dropped: the
/// array holds nothing there). The page holding byte `used`, and the one
/// holding byte `capacity`, are kept.
inline void release_unused_pages(const void* data, std::size_t used, std::size_t capacity) {
  using namespace page_control_detail;
  if (capacity <= used) return;
  const auto from = page_up(reinterpret_cast<std::uintptr_t>(data) + used);
  const auto to = page_down(reinterpret_cast<std::uintptr_t>(data) + capacity);
  if (to > from) (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

}  // namespace pipescope

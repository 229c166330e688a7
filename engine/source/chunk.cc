#include "source/chunk.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace pipescope {

namespace {
constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t n) { return (n + kPage - 1) / kPage * kPage; }
}  // namespace

void ChunkBuffer::Free::operator()(char* p) const { std::free(p); }

ChunkBuffer::ChunkBuffer(const ReadLimits& limits)
    : front_capacity_(round_up(std::max<std::size_t>(limits.max_line_bytes, 1))),
      chunk_bytes_(std::max<std::size_t>(limits.chunk_bytes, 1)),
      read_capacity_(round_up(chunk_bytes_) +
                     round_up(std::max<std::size_t>(limits.max_line_bytes, 1)) + kPage) {
  void* memory = std::aligned_alloc(kPage, front_capacity_ + read_capacity_);
  if (memory == nullptr) throw std::bad_alloc();
  memory_.reset(static_cast<char*>(memory));
}

}  // namespace pipescope

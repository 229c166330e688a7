#include "scan/hyperscan_block.h"

#include <cstring>
#include <new>
#include <utility>

#if PIPESCOPE_HAVE_HYPERSCAN
#include <hs/hs.h>
#endif

namespace pipescope {

HyperscanScratch::HyperscanScratch(const void* database) {
#if PIPESCOPE_HAVE_HYPERSCAN
  if (database == nullptr) return;
  hs_scratch_t* scratch = nullptr;
  if (hs_alloc_scratch(static_cast<const hs_database_t*>(database), &scratch) != HS_SUCCESS) {
    throw std::bad_alloc();
  }
  scratch_ = scratch;
#else
  (void)database;
#endif
}

HyperscanScratch::~HyperscanScratch() {
#if PIPESCOPE_HAVE_HYPERSCAN
  hs_free_scratch(static_cast<hs_scratch_t*>(scratch_));
#endif
}

HyperscanScratch::HyperscanScratch(HyperscanScratch&& other) noexcept
    : scratch_(std::exchange(other.scratch_, nullptr)) {}

void scan_block(const void* database, std::string_view block, HyperscanScratch& scratch,
                HyperscanCallback callback, void* context, std::size_t* piece_base) {
#if PIPESCOPE_HAVE_HYPERSCAN
  if (database == nullptr || scratch.get() == nullptr) return;
  // Hyperscan takes an unsigned length: a block over 2 GiB goes in pieces cut
  // at line ends (blocks are far smaller in practice).
  constexpr std::size_t kMaxPiece = std::size_t{1} << 31;
  std::size_t begin = 0;
  while (begin < block.size()) {
    std::size_t end = block.size();
    if (end - begin > kMaxPiece) {
      const void* nl = memrchr(block.data() + begin, '\n', kMaxPiece);
      end = nl ? static_cast<const char*>(nl) - block.data() + 1 : begin + kMaxPiece;
    }
    *piece_base = begin;
    hs_scan(static_cast<const hs_database_t*>(database), block.data() + begin,
            static_cast<unsigned>(end - begin), 0, static_cast<hs_scratch_t*>(scratch.get()),
            callback, context);
    begin = end;
  }
#else
  (void)database;
  (void)block;
  (void)scratch;
  (void)callback;
  (void)context;
  (void)piece_base;
#endif
}

}  // namespace pipescope

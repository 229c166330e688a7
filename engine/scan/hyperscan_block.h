// What every user of a Hyperscan block-mode database does: a scratch per
// thread, and a scan of a block of whole lines in pieces under Hyperscan's
// length limit. The event matcher and the job-line regex share it. Without
// Hyperscan (PIPESCOPE_HAVE_HYPERSCAN 0) both are inert: no scratch, no
// match.
#pragma once

#include <cstddef>
#include <string_view>

namespace pipescope {

/// Hyperscan's match callback (hs_runtime.h's match_event_handler): return 0
/// to go on.
using HyperscanCallback = int (*)(unsigned id, unsigned long long from, unsigned long long to,
                                  unsigned flags, void* context);

/// One thread's scratch space for one database (an hs_database_t*; null:
/// none). Movable, not copyable.
class HyperscanScratch {
 public:
  /// Throws std::bad_alloc when Hyperscan cannot allocate it.
  explicit HyperscanScratch(const void* database);
  ~HyperscanScratch();
  HyperscanScratch(HyperscanScratch&& other) noexcept;
  HyperscanScratch& operator=(HyperscanScratch&&) = delete;
  HyperscanScratch(const HyperscanScratch&) = delete;

  void* get() const { return scratch_; }

 private:
  void* scratch_ = nullptr;
};

/// Scans `block` (whole lines) with `database`: each piece (the block, or
/// pieces of it cut at line ends when it is over 2 GiB) is scanned after
/// `*piece_base` is set to its offset in the block, so that `callback` can
/// turn the piece-relative match ends into block offsets.
void scan_block(const void* database, std::string_view block, HyperscanScratch& scratch,
                HyperscanCallback callback, void* context, std::size_t* piece_base);

}  // namespace pipescope

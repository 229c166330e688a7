// Finds candidate lines: a literal search for the few strings that every line
// of interest contains. Contract (as ripgrep words it): may report a line
// that the parser then rejects, never misses a line that contains one of the
// literals. The search reports exactly the literals' occurrences: both
// contain "Profiler ", found with SIMD compares of two of its bytes over 32
// (or 16) bytes at a time and then checked in place, so the bytes between
// candidates cost a few instructions per 32 and no call.
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace pipescope {

enum class LiteralId : unsigned {
  job_line = 0,    ///< "Profiler Info: Job"
  step_start = 1,  ///< "Schedule Profiler start at step"
};

class Prefilter {
 public:
  /// Per-thread search state; create one per worker thread. The current
  /// search needs none, but callers keep one per thread so that a search
  /// that does (as Hyperscan's did) needs no change of theirs.
  class Scratch {
   public:
    explicit Scratch(const Prefilter&) {}
  };

  Prefilter() = default;
  Prefilter(const Prefilter&) = delete;
  Prefilter& operator=(const Prefilter&) = delete;

  /// Calls `on_match(LiteralId, end_offset)` for every occurrence in `data`,
  /// in increasing offset order. `on_match` returns false to stop the scan.
  template <typename OnMatch>
  void scan(std::string_view data, Scratch& scratch, OnMatch&& on_match) const {
    scan_raw(data, scratch, &Trampoline<OnMatch>::call, &on_match);
  }

 private:
  using RawCallback = bool (*)(void* context, LiteralId id, std::size_t end_offset);
  template <typename OnMatch>
  struct Trampoline {
    static bool call(void* context, LiteralId id, std::size_t end) {
      return (*static_cast<std::remove_reference_t<OnMatch>*>(context))(id, end);
    }
  };
  void scan_raw(std::string_view data, Scratch& scratch, RawCallback callback, void* context) const;
};

}  // namespace pipescope

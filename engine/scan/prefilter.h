// Finds candidate lines with Hyperscan: a literal search for the few strings
// that every line of interest contains. Contract (as ripgrep words it): may
// report a line that the parser then rejects, never misses a line that
// contains one of the literals.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

struct hs_database;
struct hs_scratch;

namespace pipescope {

enum class LiteralId : unsigned {
  job_line = 0,    ///< "Profiler Info: Job"
  step_start = 1,  ///< "Schedule Profiler start at step"
};

class Prefilter {
 public:
  /// Per-thread Hyperscan scratch space; create one per worker thread.
  class Scratch {
   public:
    explicit Scratch(const Prefilter& prefilter);
    ~Scratch();
    Scratch(Scratch&& other) noexcept;
    Scratch& operator=(Scratch&&) = delete;
    Scratch(const Scratch&) = delete;

   private:
    friend class Prefilter;
    hs_scratch* scratch_ = nullptr;
  };

  /// Compiles the literal database. Throws std::runtime_error if Hyperscan
  /// refuses (e.g. a CPU without SSSE3).
  Prefilter();
  ~Prefilter();
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

  hs_database* database_ = nullptr;
};

}  // namespace pipescope

// Finds every occurrence of any of a set of literals (ASCII letters folded)
// in text, fast enough to run over every byte between the job lines: the
// first pass of the event search (scan/event_prefilter.h).
//
// How: each literal is known by a window of kWindow bytes of it (its rarest,
// by a table of byte frequencies in text), and the literals are spread over
// 8 buckets. At every position of the text, one byte-indexed table per
// window byte gives the buckets whose windows may start there, and the
// bitwise and of the kWindow answers leaves the candidates, which are then
// compared in full ("Teddy", as Hyperscan and Rust's aho-corasick call it,
// with exact 128-entry tables instead of nibble ones). With AVX-512 VBMI the
// tables are looked up 64 positions at a time (vpermi2b).
//
// With AVX2 only, whose byte lookup (vpshufb) reads a 16-entry table, the
// tables are indexed by the low 4 bits of each byte instead, 32 positions at
// a time, over kNibbleWindow bytes: a bucket then takes every byte with the
// low bits of one of its windows' bytes there ("a", "q", "1" and "!"
// alike), ASCII only (vpshufb gives no bucket for a byte of 0x80 or more),
// so each literal's window and bucket are chosen together, the window that
// adds the fewest low bits to a bucket. Each position the low-bit tables
// pass is checked against the exact tables of its window before the
// literals are compared. Why low bits only, over 8 bytes: the kernel is
// bound by its 8 unaligned loads a step (about 15 GB/s per core on a
// 2-core AMD EPYC, text in cache), a table of the high 4 bits would cost a
// shift, a mask and a lookup more per byte and pass hardly fewer positions
// of a log (its misses are words made of letters, not digits), 16 buckets
// do not fit the 16 AVX2 registers, and 10 window bytes run slower without
// passing fewer positions reliably. Measured on the
// simulator's and bench/other_logs.py's logs with the shipped library's
// literals: about 1,300 to 4,800 positions per MB pass that hold no
// literal, depending on how the literals fall into buckets (one in 40 to
// 250 bytes for both nibbles over 4 bytes, Teddy's usual window).
//
// Elsewhere the exact tables are read one position at a time, far slower,
// so callers ask fast() before relying on it. Which kernel runs is chosen
// once per search: the fastest the CPU runs, or the one the environment
// variable PIPESCOPE_LITERAL_SEARCH names (portable, avx2, vbmi), so that
// tests can run each on the same machine.
//
// Which literals share a bucket is a guess from the same byte frequencies,
// and text may prove it wrong: a bucket takes every mix of its windows'
// bytes (or of their low bits), position by position, and some mix may be
// common in a log (the shipped library's first guess took "fo: Join" at
// every `Profiler Info: Joined` line). find() reports such misses, and a
// search built again with them to avoid spreads the literals so that no
// bucket takes them.
//
// Contract: find() reports each occurrence of each literal exactly once,
// whatever the text and the buckets; a candidate that is no occurrence is
// never reported.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pipescope {

class LiteralSetSearch {
 public:
  /// Window bytes compared per position by the exact tables (portable,
  /// vbmi), and by the low-bit tables (avx2); a shorter literal's window is
  /// the whole literal.
  static constexpr std::size_t kWindow = 7;
  static constexpr std::size_t kNibbleWindow = 8;
  static constexpr std::size_t kMaxWindow = kWindow > kNibbleWindow ? kWindow : kNibbleWindow;
  static constexpr std::size_t kBuckets = 8;
  /// The environment variable that chooses the kernel (tests).
  static constexpr const char* kKernelVariable = "PIPESCOPE_LITERAL_SEARCH";

  struct Hit {
    std::uint32_t literal = 0;  ///< index into literals()
    std::size_t begin = 0;      ///< offset of the occurrence in the text
  };

  enum class Kernel {
    portable,  ///< the exact tables, one position at a time
    avx2,      ///< the low-bit tables, 32 positions at a time (AVX2)
    vbmi,      ///< the exact tables, 64 positions at a time (AVX-512 VBMI)
  };

  /// Whether this CPU (and build) runs `kernel`.
  static bool runs(Kernel kernel);
  /// The kernel a search is built for by default: the one
  /// $PIPESCOPE_LITERAL_SEARCH names (portable, avx2 or vbmi; unset or
  /// empty: any), else the fastest this CPU runs. Throws
  /// std::invalid_argument naming the variable when it names no kernel or
  /// one this CPU cannot run.
  static Kernel chosen_kernel();
  /// The kernel's name as the variable spells it.
  static const char* name(Kernel kernel);
  /// Whether chosen_kernel() searches many positions at a time (throws as
  /// it does).
  static bool fast() { return chosen_kernel() != Kernel::portable; }

  /// Text seen to pass a bucket without holding its literals: window()
  /// bytes from a miss (or more), and how often per byte of text it occurred.
  struct Avoid {
    std::string window;
    double rate = 0;
  };

  /// `literals`: non-empty, lower case (an upper-case ASCII letter in one
  /// can never be found), no duplicates needed. The buckets are chosen to
  /// take as few of the `avoid` windows as they can. Throws
  /// std::invalid_argument when this CPU cannot run `kernel`.
  explicit LiteralSetSearch(std::vector<std::string> literals, const std::vector<Avoid>& avoid = {},
                            Kernel kernel = chosen_kernel());

  Kernel kernel() const { return kernel_; }
  /// The bytes from a position that decide which buckets take it: kWindow,
  /// or kNibbleWindow for the avx2 kernel.
  std::size_t window() const { return window(kernel_); }
  static std::size_t window(Kernel kernel) {
    return kernel == Kernel::avx2 ? kNibbleWindow : kWindow;
  }

  /// The positions where a bucket took the window but none of its literals
  /// was there: how many, and a few of them (enough to learn from).
  struct Misses {
    static constexpr std::size_t kKept = 16;
    std::size_t count = 0;
    std::array<std::size_t, kKept> first{};
    std::size_t kept() const { return count < kKept ? count : kKept; }
  };

  /// Appends every occurrence in `text` to `hits`, ordered by the position
  /// of the literal's window, then by bucket; with `misses`, counts its
  /// misses there too (positions the kernel's tables passed).
  void find(std::string_view text, std::vector<Hit>& hits, Misses* misses = nullptr) const;

  const std::vector<std::string>& literals() const { return literals_; }

  /// About how often `literal`'s window occurs per byte of ordinary text
  /// (the product of its bytes' frequencies): the cost of searching for it.
  static double rate(std::string_view literal);

 private:
  struct Member {
    std::uint32_t literal = 0;
    std::uint32_t window = 0;  ///< offset of its window in the literal
  };

  /// A position where the tables gave some buckets: compared afterwards.
  struct Candidate {
    std::size_t at = 0;
    unsigned buckets = 0;
  };

  /// The exact layout (portable, vbmi) and the low-bit one (avx2).
  void place_exact(const std::vector<Avoid>& avoid);
  void place_nibble(const std::vector<Avoid>& avoid);
  void find_portable(std::string_view text, std::vector<Hit>& hits, Misses* misses) const;
  void find_vbmi(std::string_view text, std::vector<Hit>& hits, Misses* misses) const;
  void find_avx2(std::string_view text, std::vector<Hit>& hits, Misses* misses) const;
  /// Compares the literals of `c.buckets` whose window would start at c.at.
  void verify(std::string_view text, Candidate c, std::vector<Hit>& hits, Misses* misses) const;

  Kernel kernel_;
  std::vector<std::string> literals_;
  std::array<std::vector<Member>, kBuckets> buckets_;
  /// [position in the window][byte]: the buckets whose window has that byte
  /// there (both cases of a letter); past a shorter literal, every byte.
  std::array<std::array<std::uint8_t, 256>, kMaxWindow> tables_{};
  /// vbmi: the same with the top bit of the byte ignored, as vpermi2b indexes.
  alignas(64) std::array<std::array<std::uint8_t, 128>, kWindow> tables7_{};
  /// avx2: [position][low 4 bits of the byte], the 16 entries twice (one
  /// copy per 128-bit lane, as vpshufb indexes).
  alignas(32) std::array<std::array<std::uint8_t, 32>, kNibbleWindow> nibbles_{};
  /// avx2: the window positions before this one take ASCII bytes only (a
  /// byte of 0x80 or more passes no bucket there, as vpshufb reads it);
  /// from it on, any byte by its low 4 bits (a shorter literal's window has
  /// ended, or a window holds such a byte).
  std::size_t ascii_positions_ = kNibbleWindow;
};

}  // namespace pipescope

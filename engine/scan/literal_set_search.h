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
// tables are looked up 64 positions at a time (vpermi2b); elsewhere one
// position at a time, far slower, so callers ask fast() before relying on it.
//
// Which literals share a bucket is a guess from the same byte frequencies,
// and text may prove it wrong: a bucket takes every mix of its windows'
// bytes, position by position, and some mix may be common in a log (the
// shipped library's first guess took "fo: Join" at every `Profiler Info:
// Joined` line). find() reports such misses, and a search built again with
// them to avoid spreads the literals so that no bucket takes them.
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
  /// Window bytes compared per position (a shorter literal's window is the
  /// whole literal).
  static constexpr std::size_t kWindow = 7;
  static constexpr std::size_t kBuckets = 8;

  struct Hit {
    std::uint32_t literal = 0;  ///< index into literals()
    std::size_t begin = 0;      ///< offset of the occurrence in the text
  };

  enum class Kernel {
    best,      ///< the 64-position search where the CPU has it
    portable,  ///< one position at a time (the reference the tests compare)
  };

  /// Text seen to pass a bucket without holding its literals: kWindow bytes
  /// from a miss, and how often per byte of text it occurred.
  struct Avoid {
    std::string window;
    double rate = 0;
  };

  /// `literals`: non-empty, lower case (an upper-case ASCII letter in one
  /// can never be found), no duplicates needed. The buckets are chosen to
  /// take as few of the `avoid` windows as they can.
  explicit LiteralSetSearch(std::vector<std::string> literals,
                            const std::vector<Avoid>& avoid = {});

  /// Whether Kernel::best runs the 64-position search on this CPU.
  static bool fast();

  /// The positions where a bucket took the window but none of its literals
  /// was there: how many, and the first few (enough to learn from).
  struct Misses {
    static constexpr std::size_t kKept = 16;
    std::size_t count = 0;
    std::array<std::size_t, kKept> first{};
    std::size_t kept() const { return count < kKept ? count : kKept; }
  };

  /// Appends every occurrence in `text` to `hits`, ordered by the position
  /// of the literal's window, then by bucket; with `misses`, counts its
  /// misses there too.
  void find(std::string_view text, std::vector<Hit>& hits, Misses* misses = nullptr,
            Kernel kernel = Kernel::best) const;

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

  void find_portable(std::string_view text, std::vector<Hit>& hits, Misses* misses) const;
  void find_vbmi(std::string_view text, std::vector<Hit>& hits, Misses* misses) const;
  /// Compares the literals of `c.buckets` whose window would start at c.at.
  void verify(std::string_view text, Candidate c, std::vector<Hit>& hits, Misses* misses) const;

  std::vector<std::string> literals_;
  std::array<std::vector<Member>, kBuckets> buckets_;
  /// [position in the window][byte]: the buckets whose window has that byte
  /// there (both cases of a letter).
  std::array<std::array<std::uint8_t, 256>, kWindow> tables_{};
  /// The same with the top bit of the byte ignored, as vpermi2b indexes.
  alignas(64) std::array<std::array<std::uint8_t, 128>, kWindow> tables7_{};
};

}  // namespace pipescope

#include "scan/literal_set_search.h"

#include <algorithm>
#include <bitset>
#include <cstring>
#include <map>
#include <utility>

#include "scan/cpu_features.h"

#if PIPESCOPE_X86_DISPATCH
#include <immintrin.h>
#endif

namespace pipescope {

namespace {

// How often each ASCII byte occurs per 100,000 bytes of ordinary text, letters
// folded (an upper-case letter has its lower case's count, which covers
// both): measured once over 27 MB of English prose and program text. Only
// the order of magnitude matters: it ranks a literal's windows and guesses
// which literals can share a bucket. The event search corrects the guess
// where a log disagrees (scan/event_prefilter.h).
constexpr std::uint16_t kFrequency[128] = {
    1,     1,    1,    1,    1,    1,    1,    1,    1,    1,    2388, 1,   1,    1,    1,    1,
    1,     1,    1,    1,    1,    1,    1,    1,    1,    1,    1,    1,   1,    1,    1,    1,
    16768, 4,    60,   133,  5,    2,    4,    74,   461,  461,  553,  303, 488,  2007, 1416, 587,
    1647,  1333, 1380, 570,  534,  449,  535,  318,  410,  486,  1290, 168, 177,  202,  183,  3,
    173,   4536, 1693, 2738, 2942, 7081, 1643, 1586, 1502, 4477, 153,  664, 3114, 2199, 4174, 4109,
    2284,  98,   4334, 4070, 4563, 2332, 839,  636,  654,  814,  128,  156, 1,    156,  1,    645,
    12,    4536, 1693, 2738, 2942, 7081, 1643, 1586, 1502, 4477, 153,  664, 3114, 2199, 4174, 4109,
    2284,  98,   4334, 4070, 4563, 2332, 839,  636,  654,  814,  128,  10,  2,    10,   35,   1,
};

double frequency(unsigned char c) { return c < 128 ? kFrequency[c] * 1e-5 : 0.3e-5; }

unsigned char fold(unsigned char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c + ('a' - 'A')) : c;
}

/// Bytes of `literal` compared from `window` on (fewer than kWindow when it
/// is shorter).
std::size_t compared(std::string_view literal) {
  return std::min(literal.size(), LiteralSetSearch::kWindow);
}

double window_rate(std::string_view literal, std::size_t window) {
  double rate = 1;
  for (std::size_t k = 0; k < compared(literal); ++k) {
    rate *= frequency(static_cast<unsigned char>(literal[window + k]));
  }
  return rate;
}

/// The offset of `literal`'s rarest window.
std::size_t rarest_window(std::string_view literal) {
  std::size_t best = 0;
  double best_rate = 2;
  for (std::size_t w = 0; w + compared(literal) <= literal.size(); ++w) {
    if (const double rate = window_rate(literal, w); rate < best_rate) {
      best_rate = rate;
      best = w;
    }
  }
  return best;
}

/// The bytes a bucket accepts at each window position, and how often text
/// would pass it if its bytes were independent (the product over positions
/// of the accepted bytes' total frequency): what a further member costs.
struct BucketShape {
  std::array<std::bitset<256>, LiteralSetSearch::kWindow> bytes;  // as in the windows
  std::array<bool, LiteralSetSearch::kWindow> any{};              // a shorter literal ended before
  std::array<double, LiteralSetSearch::kWindow> mass{};
  bool empty = true;

  double leak() const {
    if (empty) return 0;
    double rate = 1;
    for (std::size_t k = 0; k < LiteralSetSearch::kWindow; ++k) rate *= any[k] ? 1 : mass[k];
    return rate;
  }

  /// Whether the bucket takes `text` (kWindow bytes) as the vpermi2b tables
  /// read it: by its low 7 bits, a letter in either case.
  bool takes(std::string_view text) const {
    if (empty) return false;
    for (std::size_t k = 0; k < LiteralSetSearch::kWindow; ++k) {
      const auto low = static_cast<unsigned char>(text[k] & 0x7f);
      if (!any[k] && !bytes[k][fold(low)] && !bytes[k][low | 0x80]) return false;
    }
    return true;
  }

  void add(std::string_view window) {
    empty = false;
    for (std::size_t k = 0; k < LiteralSetSearch::kWindow; ++k) {
      if (k >= window.size()) {
        any[k] = true;
        continue;
      }
      const auto c = static_cast<unsigned char>(window[k]);
      if (!bytes[k][c]) mass[k] += frequency(c);
      bytes[k].set(c);
    }
  }
};

}  // namespace

double LiteralSetSearch::rate(std::string_view literal) {
  return literal.empty() ? 1 : window_rate(literal, rarest_window(literal));
}

LiteralSetSearch::LiteralSetSearch(std::vector<std::string> literals,
                                   const std::vector<Avoid>& avoid)
    : literals_(std::move(literals)) {
  // What taking `text` costs: how often it was seen where it was no literal.
  auto avoided = [&](auto&& takes) {
    double rate = 0;
    for (const Avoid& a : avoid) {
      if (a.window.size() == kWindow && takes(std::string_view(a.window))) rate += a.rate;
    }
    return rate;
  };
  // Each literal's rarest window, leaving out those a miss was seen at.
  // Literals with the same window share one table entry: grouped.
  std::map<std::string, std::vector<Member>> windows;
  for (std::uint32_t i = 0; i < literals_.size(); ++i) {
    const std::string& literal = literals_[i];
    if (literal.empty()) continue;
    std::size_t best = 0;
    double best_cost = 0;
    for (std::size_t w = 0; w + compared(literal) <= literal.size(); ++w) {
      const std::string_view window = std::string_view(literal).substr(w, compared(literal));
      BucketShape alone;
      alone.add(window);
      const double cost = window_rate(literal, w) +
                          avoided([&](std::string_view text) { return alone.takes(text); });
      if (w == 0 || cost < best_cost) {
        best = w;
        best_cost = cost;
      }
    }
    windows[literal.substr(best, compared(literal))].push_back(
        {i, static_cast<std::uint32_t>(best)});
  }
  // Commonest windows first, each into the bucket it widens least (by the
  // byte frequencies and the misses seen): the common ones get buckets of
  // their own, the rare ones share.
  std::vector<std::string> order;
  for (const auto& entry : windows) order.push_back(entry.first);
  std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
    return window_rate(a, 0) > window_rate(b, 0);
  });
  std::array<BucketShape, kBuckets> shapes;
  for (const std::string& window : order) {
    std::size_t best = 0;
    double best_cost = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      BucketShape widened = shapes[b];
      widened.add(window);
      const BucketShape& before = shapes[b];
      const double cost = widened.leak() - before.leak() + avoided([&](std::string_view text) {
                            return widened.takes(text) && !before.takes(text);
                          });
      if (b == 0 || cost < best_cost) {
        best = b;
        best_cost = cost;
      }
    }
    shapes[best].add(window);
    const auto& members = windows[window];
    buckets_[best].insert(buckets_[best].end(), members.begin(), members.end());
    const auto bit = static_cast<std::uint8_t>(1u << best);
    for (std::size_t k = 0; k < kWindow; ++k) {
      if (k >= window.size()) {
        for (auto& entry : tables_[k]) entry |= bit;
        continue;
      }
      const auto c = static_cast<unsigned char>(window[k]);
      tables_[k][c] |= bit;
      if (c >= 'a' && c <= 'z') tables_[k][c - ('a' - 'A')] |= bit;
    }
  }
  for (std::size_t k = 0; k < kWindow; ++k) {
    for (std::size_t c = 0; c < 128; ++c) tables7_[k][c] = tables_[k][c] | tables_[k][c | 0x80];
  }
}

bool LiteralSetSearch::fast() {
#if PIPESCOPE_X86_DISPATCH
  static const bool vbmi = (__builtin_cpu_init(), __builtin_cpu_supports("avx512f") &&
                                                      __builtin_cpu_supports("avx512bw") &&
                                                      __builtin_cpu_supports("avx512vbmi"));
  return vbmi;
#else
  return false;
#endif
}

void LiteralSetSearch::find(std::string_view text, std::vector<Hit>& hits, Misses* misses,
                            Kernel kernel) const {
  if (text.empty() || literals_.empty()) return;
  if (kernel == Kernel::best && fast()) {
    find_vbmi(text, hits, misses);
  } else {
    find_portable(text, hits, misses);
  }
}

void LiteralSetSearch::verify(std::string_view text, Candidate c, std::vector<Hit>& hits,
                              Misses* misses) const {
  const auto* d = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t found = hits.size();
  unsigned buckets = c.buckets;
  while (buckets != 0) {
    const auto b = static_cast<std::size_t>(__builtin_ctz(buckets));
    buckets &= buckets - 1;
    for (const Member& m : buckets_[b]) {
      if (c.at < m.window) continue;
      const std::size_t begin = c.at - m.window;
      const std::string& literal = literals_[m.literal];
      if (begin + literal.size() > text.size()) continue;
      std::size_t k = 0;
      while (k < literal.size() && fold(d[begin + k]) == static_cast<unsigned char>(literal[k]))
        ++k;
      if (k == literal.size()) hits.push_back({m.literal, begin});
    }
  }
  if (misses != nullptr && hits.size() == found) {
    if (misses->count < Misses::kKept) misses->first[misses->count] = c.at;
    ++misses->count;
  }
}

void LiteralSetSearch::find_portable(std::string_view text, std::vector<Hit>& hits,
                                     Misses* misses) const {
  const auto* d = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    unsigned buckets = tables_[0][d[i]];
    // Past the text's end only a shorter literal's window goes on, and its
    // positions there accept any byte: they are left out of the and.
    for (std::size_t k = 1; k < kWindow && buckets != 0 && i + k < n; ++k) {
      buckets &= tables_[k][d[i + k]];
    }
    if (buckets != 0) verify(text, {i, buckets}, hits, misses);
  }
}

#if PIPESCOPE_X86_DISPATCH
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void LiteralSetSearch::find_vbmi(
    std::string_view text, std::vector<Hit>& hits, Misses* misses) const {
  const char* d = text.data();
  const std::size_t n = text.size();
  // Each position's table as two registers of 64 entries: vpermi2b looks a
  // byte up in both by its low 7 bits (tables7_ merges the top-bit twins).
  __m512i lo[kWindow], hi[kWindow];
  for (std::size_t k = 0; k < kWindow; ++k) {
    lo[k] = _mm512_load_si512(tables7_[k].data());
    hi[k] = _mm512_load_si512(tables7_[k].data() + 64);
  }
  // Candidates are noted here and compared after the loop, and a call in
  // the loop is made only when this fills: a call would save and restore
  // the 16 table registers around it (no register survives a call).
  constexpr std::size_t kPending = 256;
  Candidate pending[kPending];
  std::size_t count = 0;
  auto flush = [&]() {
    for (std::size_t c = 0; c < count; ++c) verify(text, pending[c], hits, misses);
    count = 0;
  };
  // (No intrinsics in the lambdas: they would not inherit the target.)
  alignas(64) std::uint8_t buckets_at[64];
  auto note = [&](std::size_t base, std::uint64_t mask) {
    while (mask != 0) {
      const auto j = static_cast<std::size_t>(__builtin_ctzll(mask));
      mask &= mask - 1;
      pending[count++] = {base + j, buckets_at[j]};
      if (count == kPending) [[unlikely]]
        flush();
    }
  };
  // The bytes at i + 1 and i + 2 are shifted out of this block and the next
  // (valignq, then vpalignr within each 16-byte lane), the others loaded:
  // a load across a cache line costs two, and a mix keeps both the load
  // and the vector units busy (a fifth faster than seven loads).
  static_assert(kWindow >= 3);
  std::size_t i = 0;
  if (n >= 128) {
    __m512i block = _mm512_loadu_si512(d);
    for (; i + 128 <= n; i += 64) {
      const __m512i next = _mm512_loadu_si512(d + i + 64);
      // (The masked form: GCC 12 warns of the plain one's undefined source.)
      const __m512i lanes_on = _mm512_maskz_alignr_epi64(0xff, next, block, 2);
      __m512i buckets = _mm512_permutex2var_epi8(lo[0], block, hi[0]);
      buckets = _mm512_and_si512(
          buckets, _mm512_permutex2var_epi8(lo[1], _mm512_alignr_epi8(lanes_on, block, 1), hi[1]));
      buckets = _mm512_and_si512(
          buckets, _mm512_permutex2var_epi8(lo[2], _mm512_alignr_epi8(lanes_on, block, 2), hi[2]));
#pragma GCC unroll 16
      for (std::size_t k = 3; k < kWindow; ++k) {
        buckets = _mm512_and_si512(
            buckets, _mm512_permutex2var_epi8(lo[k], _mm512_loadu_si512(d + i + k), hi[k]));
      }
      const std::uint64_t mask = _mm512_test_epi8_mask(buckets, buckets);
      if (mask != 0) [[unlikely]] {
        _mm512_store_si512(buckets_at, buckets);
        note(i, mask);
      }
      block = next;
    }
  }
  // The last positions: masked loads read nothing past the end (a masked
  // lane does not fault), and a byte past it reads as 0, which only a
  // shorter literal's any-byte positions accept.
  auto below = [](std::size_t bytes) {
    return bytes >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bytes) - 1;
  };
  for (; i < n; i += 64) {
    __m512i buckets = _mm512_set1_epi8(-1);
    for (std::size_t k = 0; k < kWindow; ++k) {
      const std::size_t left = i + k < n ? n - (i + k) : 0;
      const __m512i bytes = _mm512_maskz_loadu_epi8(below(left), d + std::min(i + k, n));
      buckets = _mm512_and_si512(buckets, _mm512_permutex2var_epi8(lo[k], bytes, hi[k]));
    }
    const std::uint64_t mask = _mm512_test_epi8_mask(buckets, buckets) & below(n - i);
    if (mask != 0) {
      _mm512_store_si512(buckets_at, buckets);
      note(i, mask);
    }
  }
  flush();
}
#else
void LiteralSetSearch::find_vbmi(std::string_view text, std::vector<Hit>& hits,
                                 Misses* misses) const {
  find_portable(text, hits, misses);
}
#endif

}  // namespace pipescope

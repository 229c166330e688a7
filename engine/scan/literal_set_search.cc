#include "scan/literal_set_search.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "scan/cpu_features.h"

#if PIPESCOPE_X86_DISPATCH
#include <immintrin.h>
#endif

namespace pipescope {

namespace {

/// Sets `bit` (a bucket) in the first `width` tables at the window's bytes,
/// both cases of a letter; past a shorter window's end, at every byte.
template <typename Tables>
void mark_window(Tables& tables, std::string_view window, std::size_t width, std::uint8_t bit) {
  for (std::size_t k = 0; k < width; ++k) {
    if (k >= window.size()) {
      for (auto& entry : tables[k]) entry |= bit;
      continue;
    }
    const auto c = static_cast<unsigned char>(window[k]);
    tables[k][c] |= bit;
    if (c >= 'a' && c <= 'z') tables[k][c - ('a' - 'A')] |= bit;
  }
}

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

constexpr std::size_t kNibbleWindow = LiteralSetSearch::kNibbleWindow;

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

/// How often a byte with each low 4 bits occurs in ordinary text, at a
/// window position of the avx2 tables: among ASCII bytes (the positions
/// before LiteralSetSearch's ascii_positions_), or among all.
struct NibbleMass {
  std::array<double, 16> ascii{}, all{};
  NibbleMass() {
    for (unsigned c = 0; c < 256; ++c) (c < 128 ? ascii : all)[c & 15] += frequency(c);
    for (std::size_t l = 0; l < 16; ++l) all[l] += ascii[l];
  }
  static const NibbleMass& get() {
    static const NibbleMass mass;
    return mass;
  }
};

/// The windows to avoid as the avx2 tables read them, as sets of bits (one
/// per window, 64 to a word): at[position][low bits] holds the windows that
/// a table taking those low bits there passes.
class AvoidSets {
 public:
  using Set = std::vector<std::uint64_t>;

  AvoidSets(const std::vector<LiteralSetSearch::Avoid>& avoid, std::size_t ascii) {
    for (const auto& a : avoid) {
      if (a.window.size() >= kNibbleWindow) windows_.push_back(&a);
    }
    words_ = (windows_.size() + 63) / 64;
    for (auto& position : at_) position.fill(Set(words_, 0));
    for (std::size_t w = 0; w < windows_.size(); ++w) {
      for (std::size_t k = 0; k < kNibbleWindow; ++k) {
        const auto c = static_cast<unsigned char>(windows_[w]->window[k]);
        if (k < ascii && c >= 0x80) continue;  // vpshufb gives no bucket there
        at_[k][c & 15][w / 64] |= std::uint64_t{1} << (w % 64);
      }
    }
  }

  Set none() const { return Set(words_, 0); }
  /// Sets `out` to every window.
  void all(Set& out) const {
    out.assign(words_, 0);
    for (std::size_t w = 0; w < windows_.size(); ++w) out[w / 64] |= std::uint64_t{1} << (w % 64);
  }
  std::uint64_t word(std::size_t k, unsigned low, std::size_t i) const { return at_[k][low][i]; }
  /// Adds to `out` the windows that pass `low` bits at position k.
  void add(Set& out, std::size_t k, unsigned low) const {
    for (std::size_t i = 0; i < words_; ++i) out[i] |= at_[k][low][i];
  }
  /// The rate of the windows in `taken` and not in `before`.
  double rate(const Set& taken, const Set& before) const {
    double rate = 0;
    for (std::size_t i = 0; i < words_; ++i) {
      for (std::uint64_t bits = taken[i] & ~before[i]; bits != 0; bits &= bits - 1) {
        rate += windows_[i * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))]->rate;
      }
    }
    return rate;
  }
  std::size_t words() const { return words_; }

 private:
  std::vector<const LiteralSetSearch::Avoid*> windows_;
  std::size_t words_ = 0;
  std::array<std::array<Set, 16>, kNibbleWindow> at_;
};

/// A bucket as the avx2 kernel's tables read it: at each window position,
/// the low 4 bits a byte may have there (all 16 where a shorter literal's
/// window has ended); how often ordinary text has them there; and which
/// windows to avoid pass at each position. Both cases of a letter share
/// their low bits.
struct NibbleShape {
  std::array<std::uint16_t, kNibbleWindow> low{};
  std::array<double, kNibbleWindow> mass{};
  std::array<AvoidSets::Set, kNibbleWindow> passed;
  bool empty = true;

  explicit NibbleShape(const AvoidSets& avoid) { passed.fill(avoid.none()); }

  /// The low bits a window (kNibbleWindow bytes or fewer) has at k, or all.
  static std::uint16_t bits(std::string_view window, std::size_t k) {
    return k < window.size()
               ? static_cast<std::uint16_t>(1u << (static_cast<unsigned char>(window[k]) & 15))
               : std::uint16_t{0xffff};
  }

  struct Scratch {
    AvoidSets::Set taken, before;
  };
  /// How much more often text would pass it with `window` added (the bytes
  /// taken as independent), and the rate of the windows to avoid it would
  /// pass then and not before: what adding the window costs.
  double cost_of(std::string_view window, std::size_t ascii, const AvoidSets& avoid,
                 Scratch& s) const {
    const NibbleMass& m = NibbleMass::get();
    double leak = 1, leak_before = empty ? 0 : 1;
    avoid.all(s.taken);
    if (empty) {
      s.before.assign(avoid.words(), 0);
    } else {
      avoid.all(s.before);
    }
    for (std::size_t k = 0; k < kNibbleWindow; ++k) {
      const std::uint16_t add = bits(window, k);
      const std::uint16_t fresh = add & ~low[k];
      const auto& masses = k < ascii ? m.ascii : m.all;
      double widened = mass[k];
      for (std::uint16_t l = fresh; l != 0; l &= l - 1) widened += masses[__builtin_ctz(l)];
      leak *= (low[k] | add) == 0xffff ? 1 : std::min(widened, 1.0);
      leak_before *= low[k] == 0xffff ? 1 : std::min(mass[k], 1.0);
      for (std::size_t i = 0; i < s.taken.size(); ++i) {
        std::uint64_t also = 0;
        for (std::uint16_t l = fresh; l != 0; l &= l - 1) {
          also |= avoid.word(k, static_cast<unsigned>(__builtin_ctz(l)), i);
        }
        s.taken[i] &= passed[k][i] | also;
        s.before[i] &= passed[k][i];
      }
    }
    return leak - leak_before + avoid.rate(s.taken, s.before);
  }

  void add(std::string_view window, std::size_t ascii, const AvoidSets& avoid) {
    const NibbleMass& m = NibbleMass::get();
    empty = false;
    for (std::size_t k = 0; k < kNibbleWindow; ++k) {
      for (std::uint16_t l = bits(window, k) & ~low[k]; l != 0; l &= l - 1) {
        const auto nibble = static_cast<unsigned>(__builtin_ctz(l));
        mass[k] += (k < ascii ? m.ascii : m.all)[nibble];
        avoid.add(passed[k], k, nibble);
      }
      low[k] |= bits(window, k);
    }
  }
};

bool ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

}  // namespace

double LiteralSetSearch::rate(std::string_view literal) {
  return literal.empty() ? 1 : window_rate(literal, rarest_window(literal));
}

bool LiteralSetSearch::runs(Kernel kernel) {
  switch (kernel) {
    case Kernel::portable:
      return true;
#if PIPESCOPE_X86_DISPATCH
    case Kernel::avx2:
      return cpu_has_avx2();
    case Kernel::vbmi:
      return cpu_has_avx512_vbmi();
#endif
    default:
      return false;
  }
}

const char* LiteralSetSearch::name(Kernel kernel) {
  switch (kernel) {
    case Kernel::avx2:
      return "avx2";
    case Kernel::vbmi:
      return "vbmi";
    default:
      return "portable";
  }
}

LiteralSetSearch::Kernel LiteralSetSearch::chosen_kernel() {
  constexpr Kernel kFastestFirst[] = {Kernel::vbmi, Kernel::avx2, Kernel::portable};
  const char* forced = std::getenv(kKernelVariable);
  if (forced == nullptr || *forced == '\0') {
    for (const Kernel kernel : kFastestFirst) {
      if (runs(kernel)) return kernel;
    }
    return Kernel::portable;
  }
  for (const Kernel kernel : kFastestFirst) {
    if (std::string_view(forced) != name(kernel)) continue;
    if (!runs(kernel)) {
      throw std::invalid_argument(
          std::string(kKernelVariable) + "=" + forced + ": this CPU cannot run that kernel (" +
          (kernel == Kernel::vbmi ? "AVX-512 VBMI" : "AVX2") + " is missing)");
    }
    return kernel;
  }
  throw std::invalid_argument(std::string(kKernelVariable) + "='" + forced +
                              "': expected portable, avx2 or vbmi");
}

LiteralSetSearch::LiteralSetSearch(std::vector<std::string> literals,
                                   const std::vector<Avoid>& avoid, Kernel kernel)
    : kernel_(kernel), literals_(std::move(literals)) {
  if (!runs(kernel)) {
    throw std::invalid_argument(std::string("this CPU cannot run the literal search's ") +
                                name(kernel) + " kernel");
  }
  if (kernel == Kernel::avx2) {
    place_nibble(avoid);
  } else {
    place_exact(avoid);
  }
}

void LiteralSetSearch::place_exact(const std::vector<Avoid>& avoid) {
  // What taking `text` costs: how often it was seen where it was no literal.
  auto avoided = [&](auto&& takes) {
    double rate = 0;
    for (const Avoid& a : avoid) {
      if (a.window.size() >= kWindow && takes(std::string_view(a.window))) rate += a.rate;
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
    mark_window(tables_, window, kWindow, bit);
  }
  for (std::size_t k = 0; k < kWindow; ++k) {
    for (std::size_t c = 0; c < 128; ++c) tables7_[k][c] = tables_[k][c] | tables_[k][c | 0x80];
  }
}

void LiteralSetSearch::place_nibble(const std::vector<Avoid>& avoid) {
  // Windows of kNibbleWindow bytes or the whole literal, ASCII where the
  // literal has such a window: the tables take a byte of 0x80 or more only
  // at positions from ascii_positions_ on (where a shorter literal's window
  // has ended, or every window of a literal holds such a byte), and those
  // positions cost a mask more.
  auto width = [](std::string_view literal) { return std::min(literal.size(), kNibbleWindow); };
  struct Choice {
    std::uint32_t literal = 0;
    std::vector<std::pair<double, std::uint32_t>> windows;  // (cost alone, offset), cheapest first
  };
  std::vector<Choice> choices;
  for (std::uint32_t i = 0; i < literals_.size(); ++i) {
    const std::string_view literal = literals_[i];
    if (literal.empty()) continue;
    Choice choice{i, {}};
    const std::size_t n = width(literal);
    for (std::size_t w = 0; w + n <= literal.size(); ++w) {
      if (ascii(literal.substr(w, n)))
        choice.windows.emplace_back(0, static_cast<std::uint32_t>(w));
    }
    if (choice.windows.empty()) {
      choice.windows.emplace_back(0, 0);
      ascii_positions_ = 0;
    }
    ascii_positions_ = std::min(ascii_positions_, n);
    choices.push_back(std::move(choice));
  }
  const std::size_t ascii_positions = ascii_positions_;
  const AvoidSets avoided(avoid, ascii_positions);
  NibbleShape::Scratch scratch;
  // Each literal's windows by what they would cost alone (the low bits they
  // take and the misses seen there); the few cheapest are tried in every
  // bucket below.
  constexpr std::size_t kTried = 8;
  const NibbleShape none(avoided);
  for (Choice& choice : choices) {
    const std::string_view literal = literals_[choice.literal];
    for (auto& [cost, w] : choice.windows) {
      cost = none.cost_of(literal.substr(w, width(literal)), ascii_positions, avoided, scratch);
    }
    std::stable_sort(choice.windows.begin(), choice.windows.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    if (choice.windows.size() > kTried) choice.windows.resize(kTried);
  }
  // The commonest literals first, each window of it into each bucket: the
  // pair that widens a bucket least (by the byte frequencies and the misses
  // seen) is taken, so that windows sharing their low bits share a bucket.
  std::stable_sort(choices.begin(), choices.end(), [](const Choice& a, const Choice& b) {
    return a.windows.front().first > b.windows.front().first;
  });
  std::vector<NibbleShape> shapes(kBuckets, NibbleShape(avoided));
  for (const Choice& choice : choices) {
    const std::string_view literal = literals_[choice.literal];
    std::size_t best_bucket = 0;
    std::uint32_t best_window = choice.windows.front().second;
    double best_cost = 0;
    bool first = true;
    for (const auto& [alone, w] : choice.windows) {
      const std::string_view window = literal.substr(w, width(literal));
      for (std::size_t b = 0; b < kBuckets; ++b) {
        const double cost = shapes[b].cost_of(window, ascii_positions, avoided, scratch);
        if (first || cost < best_cost) {
          best_bucket = b;
          best_window = w;
          best_cost = cost;
          first = false;
        }
      }
    }
    const std::string_view window = literal.substr(best_window, width(literal));
    shapes[best_bucket].add(window, ascii_positions, avoided);
    buckets_[best_bucket].push_back({choice.literal, best_window});
    const auto bit = static_cast<std::uint8_t>(1u << best_bucket);
    mark_window(tables_, window, kNibbleWindow, bit);
  }
  for (std::size_t b = 0; b < kBuckets; ++b) {
    for (std::size_t k = 0; k < kNibbleWindow; ++k) {
      for (std::size_t l = 0; l < 16; ++l) {
        if ((shapes[b].low[k] >> l & 1) == 0) continue;
        nibbles_[k][l] |= static_cast<std::uint8_t>(1u << b);
        nibbles_[k][l + 16] |= static_cast<std::uint8_t>(1u << b);
      }
    }
  }
}

void LiteralSetSearch::find(std::string_view text, std::vector<Hit>& hits, Misses* misses) const {
  if (text.empty() || literals_.empty()) return;
  switch (kernel_) {
    case Kernel::vbmi:
      find_vbmi(text, hits, misses);
      break;
    case Kernel::avx2:
      find_avx2(text, hits, misses);
      break;
    default:
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

namespace {

using NibbleTables = std::array<std::array<std::uint8_t, 32>, kNibbleWindow>;
using ExactTables = std::array<std::array<std::uint8_t, 256>, LiteralSetSearch::kMaxWindow>;

/// What the avx2 kernel found: the positions whose window the exact
/// tables pass too, with those buckets, for verify(); and its misses.
struct NibbleCandidates {
  static constexpr std::size_t kCapacity = 256;
  std::size_t count = 0;
  std::array<std::size_t, kCapacity> at;
  std::array<std::uint8_t, kCapacity> buckets;
  LiteralSetSearch::Misses* misses = nullptr;

  /// Position `at_text` of the text, which the low-bit tables passed for the
  /// buckets `passed`: a candidate where the exact tables pass its window's
  /// `reach` bytes from `bytes` too (past the text's end only a shorter
  /// literal's window goes on), else a miss. Branch-free but at the text's
  /// end.
  void check(std::size_t at_text, unsigned passed, const unsigned char* bytes, std::size_t reach,
             const ExactTables& exact) {
    if (reach >= kNibbleWindow) [[likely]] {
#pragma GCC unroll 16
      for (std::size_t k = 0; k < kNibbleWindow; ++k) passed &= exact[k][bytes[k]];
    } else {
      for (std::size_t k = 0; k < reach; ++k) passed &= exact[k][bytes[k]];
    }
    if (passed != 0) {
      at[count] = at_text;
      buckets[count] = static_cast<std::uint8_t>(passed);
      ++count;
    } else if (misses != nullptr) {
      if (misses->count < LiteralSetSearch::Misses::kKept) misses->first[misses->count] = at_text;
      ++misses->count;
    }
  }
};

#if PIPESCOPE_X86_DISPATCH
/// The buckets that may start at each of the 32 positions from `at`, by the
/// low-bit tables `low` (bytes up to at + 32 + kNibbleWindow - 2 are read).
/// vpshufb looks a byte up by its low 4 bits, and gives 0 for one of 0x80
/// or more: the positions from kAscii on mask the high bits off first. (The
/// empty asm keeps the ands in sequence: GCC would otherwise look every
/// table up first and run out of registers.)
template <std::size_t kAscii>
__attribute__((target("avx2"), always_inline)) inline __m256i nibble_buckets(
    const __m256i (&low)[kNibbleWindow], const char* at) {
  const __m256i low_bits = _mm256_set1_epi8(0x0f);
  __m256i buckets = _mm256_set1_epi8(-1);
#pragma GCC unroll 16
  for (std::size_t k = 0; k < kNibbleWindow; ++k) {
    __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + k));
    if (k >= kAscii) bytes = _mm256_and_si256(bytes, low_bits);
    buckets = _mm256_and_si256(buckets, _mm256_shuffle_epi8(low[k], bytes));
    asm("" : "+x"(buckets));
  }
  return buckets;
}

/// The positions of `buckets` that some bucket passed (of those in
/// `within`), from `base`, each checked against the exact tables.
__attribute__((target("avx2"), always_inline)) inline void note_passed(
    __m256i buckets, std::size_t base, const unsigned char* bytes, std::size_t left,
    std::uint32_t within, const ExactTables& exact, NibbleCandidates& out) {
  alignas(32) std::uint8_t passed[32];
  _mm256_store_si256(reinterpret_cast<__m256i*>(passed), buckets);
  std::uint32_t mask = ~static_cast<std::uint32_t>(_mm256_movemask_epi8(
                           _mm256_cmpeq_epi8(buckets, _mm256_setzero_si256()))) &
                       within;
  while (mask != 0) {
    const auto j = static_cast<std::size_t>(__builtin_ctz(mask));
    mask &= mask - 1;
    out.check(base + j, passed[j], bytes + j, left - j, exact);
  }
}

/// The avx2 kernel: the positions of `text` from `i` on that the tables
/// pass, into `out`, until the text ends or `out` has room for fewer than
/// one step's; returns where it stopped. Candidates are compared after it
/// returns: a call inside the loop would save and restore the table
/// registers around it.
template <std::size_t kAscii>
__attribute__((target("avx2"))) std::size_t nibble_scan(const NibbleTables& tables,
                                                        const ExactTables& exact,
                                                        std::string_view text, std::size_t i,
                                                        NibbleCandidates& out) {
  const char* d = text.data();
  const auto* bytes = reinterpret_cast<const unsigned char*>(d);
  const std::size_t n = text.size();
  __m256i low[kNibbleWindow];
  for (std::size_t k = 0; k < kNibbleWindow; ++k) {
    low[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tables[k].data()));
  }
  constexpr std::size_t kReach = 32 + kNibbleWindow - 1;  // bytes a step reads
  for (; i + kReach <= n; i += 32) {
    const __m256i buckets = nibble_buckets<kAscii>(low, d + i);
    if (!_mm256_testz_si256(buckets, buckets)) [[unlikely]] {
      note_passed(buckets, i, bytes + i, n - i, ~std::uint32_t{0}, exact, out);
      if (out.count > NibbleCandidates::kCapacity - 32) return i + 32;
    }
  }
  if (i < n && out.count > NibbleCandidates::kCapacity - 64) return i;  // room for two steps
  // The last positions, from a copy with zero bytes past the text's end: no
  // literal's window reaches there but a shorter literal's, whose positions
  // take any byte (verify() compares no literal past the end).
  if (i < n) {
    alignas(32) char tail[32 + kReach] = {};
    std::memcpy(tail, d + i, n - i);
    for (std::size_t j = 0; i + j < n; j += 32) {
      const __m256i buckets = nibble_buckets<kAscii>(low, tail + j);
      const std::size_t left = n - (i + j);
      note_passed(buckets, i + j, bytes + i + j, left,
                  left >= 32 ? ~std::uint32_t{0} : (std::uint32_t{1} << left) - 1, exact, out);
    }
  }
  return n;
}
#else
template <std::size_t kAscii>
std::size_t nibble_scan(const NibbleTables&, const ExactTables&, std::string_view text, std::size_t,
                        NibbleCandidates&) {
  return text.size();  // never called: LiteralSetSearch::runs(Kernel::avx2) is false
}
#endif

}  // namespace

void LiteralSetSearch::find_avx2(std::string_view text, std::vector<Hit>& hits,
                                 Misses* misses) const {
  // One copy of the kernel per count of ASCII-only window positions.
  using Scan = std::size_t (*)(const NibbleTables&, const ExactTables&, std::string_view,
                               std::size_t, NibbleCandidates&);
  static constexpr auto kScans = []<std::size_t... kAscii>(std::index_sequence<kAscii...>) {
    return std::array<Scan, sizeof...(kAscii)>{&nibble_scan<kAscii>...};
  }
  (std::make_index_sequence<kNibbleWindow + 1>());
  NibbleCandidates found;
  found.misses = misses;
  for (std::size_t i = 0; i < text.size();) {
    i = kScans[ascii_positions_](nibbles_, tables_, text, i, found);
    for (std::size_t c = 0; c < found.count; ++c) {
      verify(text, {found.at[c], found.buckets[c]}, hits, misses);
    }
    found.count = 0;
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

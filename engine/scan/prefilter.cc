#include "scan/prefilter.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "scan/job_line_parser.h"

namespace pipescope {

namespace {

// Both literals contain the anchor: the job literal starts with it, the
// step literal has it after "Schedule ".
constexpr std::string_view kAnchor = "Profiler ";
constexpr std::string_view kStepPrefix = "Schedule ";
static_assert(kJobLineLiteral.substr(0, kAnchor.size()) == kAnchor);
static_assert(kStepStartLiteral.substr(0, kStepPrefix.size()) == kStepPrefix);
static_assert(kStepStartLiteral.substr(kStepPrefix.size(), kAnchor.size()) == kAnchor);
// The two bytes compared for every position: 'P' and the 'f' three bytes on.
constexpr std::size_t kSecond = 3;
static_assert(kAnchor[0] == 'P' && kAnchor[kSecond] == 'f');

bool has_at(std::string_view data, std::size_t at, std::string_view token) {
  return at + token.size() <= data.size() &&
         std::memcmp(data.data() + at, token.data(), token.size()) == 0;
}

/// The occurrences of the anchor's first and second compared bytes at `at`:
/// reports the literal there, if any. Returns false when the callback stops.
/// The anchor cannot overlap itself and the literals cannot overlap each
/// other, so reporting in the order of the anchors is the order of the ends.
struct Verifier {
  std::string_view data;
  bool (*callback)(void*, LiteralId, std::size_t);
  void* context;

  bool at(std::size_t i) const {
    if (!has_at(data, i, kAnchor)) return true;
    const std::size_t rest = i + kAnchor.size();
    if (has_at(data, rest, kJobLineLiteral.substr(kAnchor.size()))) {
      return callback(context, LiteralId::job_line, i + kJobLineLiteral.size());
    }
    if (i >= kStepPrefix.size() && has_at(data, i - kStepPrefix.size(), kStepPrefix) &&
        has_at(data, rest, kStepStartLiteral.substr(kStepPrefix.size() + kAnchor.size()))) {
      return callback(context, LiteralId::step_start,
                      i - kStepPrefix.size() + kStepStartLiteral.size());
    }
    return true;
  }
};

/// Positions [from, to) one at a time (to + kSecond <= data.size()).
bool scan_scalar(const Verifier& v, std::size_t from, std::size_t to) {
  const char* d = v.data.data();
  for (std::size_t i = from; i < to; ++i) {
    if (d[i] == 'P' && d[i + kSecond] == 'f' && !v.at(i)) return false;
  }
  return true;
}

#if defined(__x86_64__)
/// Reports the candidates in the bit mask of positions from `base`.
inline bool report(const Verifier& v, std::size_t base, std::uint32_t mask) {
  while (mask != 0) {
    if (!v.at(base + static_cast<std::size_t>(__builtin_ctz(mask)))) return false;
    mask &= mask - 1;
  }
  return true;
}

__attribute__((target("avx2"))) bool scan_avx2(const Verifier& v, std::size_t& i) {
  const char* d = v.data.data();
  const std::size_t n = v.data.size();
  const __m256i first = _mm256_set1_epi8('P');
  const __m256i second = _mm256_set1_epi8('f');
  for (; i + 32 + kSecond <= n; i += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + i + kSecond));
    const auto mask = static_cast<std::uint32_t>(_mm256_movemask_epi8(
        _mm256_and_si256(_mm256_cmpeq_epi8(a, first), _mm256_cmpeq_epi8(b, second))));
    if (mask != 0 && !report(v, i, mask)) return false;
  }
  return true;
}

bool scan_sse2(const Verifier& v, std::size_t& i) {
  const char* d = v.data.data();
  const std::size_t n = v.data.size();
  const __m128i first = _mm_set1_epi8('P');
  const __m128i second = _mm_set1_epi8('f');
  for (; i + 16 + kSecond <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i + kSecond));
    const auto mask = static_cast<std::uint32_t>(
        _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, second))));
    if (mask != 0 && !report(v, i, mask)) return false;
  }
  return true;
}

bool has_avx2() {
  static const bool avx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  return avx2;
}
#endif

}  // namespace

void Prefilter::scan_raw(std::string_view data, Scratch& /*scratch*/, RawCallback callback,
                         void* context) const {
  if (data.size() < kAnchor.size()) return;
  const Verifier verifier{data, callback, context};
  std::size_t i = 0;
#if defined(__x86_64__)
  if (!(has_avx2() ? scan_avx2(verifier, i) : scan_sse2(verifier, i))) return;
#endif
  scan_scalar(verifier, i, data.size() - kSecond);
}

}  // namespace pipescope

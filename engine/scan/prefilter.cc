#include "scan/prefilter.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "scan/cpu_features.h"
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
// The bytes compared at every position: the anchor's 'P', and the last byte
// of either literal as counted from it ('b' of "Job", 'p' of "step"), which
// leaves out the many other "Profiler " words of a log.
constexpr std::size_t kJobLast = kJobLineLiteral.size() - 1;
constexpr std::size_t kStepLast = kStepStartLiteral.size() - kStepPrefix.size() - 1;
constexpr std::size_t kReach = kStepLast;  // bytes looked at past a position
static_assert(kAnchor[0] == 'P' && kJobLineLiteral[kJobLast] == 'b' &&
              kStepStartLiteral[kStepPrefix.size() + kStepLast] == 'p' && kJobLast < kReach);
// The words Verifier::at compares, spelled out there as literals.
static_assert(kAnchor == "Profiler " && kStepPrefix == "Schedule ");
static_assert(kJobLineLiteral.substr(kAnchor.size()) == "Info: Job");
static_assert(kStepStartLiteral.substr(kStepPrefix.size() + kAnchor.size()) == "start at step");

/// `token` (a string literal) at data[at]: a compare of constant size, which
/// the compiler turns into a few word compares instead of a call.
template <std::size_t N>
bool has_at(std::string_view data, std::size_t at, const char (&token)[N]) {
  return at + (N - 1) <= data.size() && std::memcmp(data.data() + at, token, N - 1) == 0;
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
    if (!has_at(data, i, "Profiler ")) return true;
    const std::size_t rest = i + kAnchor.size();
    if (has_at(data, rest, "Info: Job")) {
      return callback(context, LiteralId::job_line, i + kJobLineLiteral.size());
    }
    if (i >= kStepPrefix.size() && has_at(data, i - kStepPrefix.size(), "Schedule ") &&
        has_at(data, rest, "start at step")) {
      return callback(context, LiteralId::step_start,
                      i - kStepPrefix.size() + kStepStartLiteral.size());
    }
    return true;
  }
};

/// Positions from `from` on, one at a time.
bool scan_scalar(const Verifier& v, std::size_t from) {
  const char* d = v.data.data();
  for (std::size_t i = from; i < v.data.size(); ++i) {
    if (d[i] == 'P' && !v.at(i)) return false;
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

__attribute__((target("avx2"))) bool scan_avx2(const Verifier& v, std::size_t& next) {
  const char* d = v.data.data();
  const std::size_t n = v.data.size();
  const __m256i p = _mm256_set1_epi8('P');
  const __m256i b = _mm256_set1_epi8('b');
  const __m256i q = _mm256_set1_epi8('p');
  std::size_t i = next;
  for (; i + 32 + kReach <= n; i += 32) {
    // (No lambda for the loads: it would not inherit the AVX2 target.)
    const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + i));
    const __m256i job = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + i + kJobLast));
    const __m256i step = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + i + kStepLast));
    const __m256i ends = _mm256_or_si256(_mm256_cmpeq_epi8(job, b), _mm256_cmpeq_epi8(step, q));
    const auto mask = static_cast<std::uint32_t>(
        _mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(first, p), ends)));
    if (mask != 0 && !report(v, i, mask)) return false;
  }
  next = i;
  return true;
}

bool scan_sse2(const Verifier& v, std::size_t& next) {
  const char* d = v.data.data();
  const std::size_t n = v.data.size();
  const __m128i p = _mm_set1_epi8('P');
  const __m128i b = _mm_set1_epi8('b');
  const __m128i q = _mm_set1_epi8('p');
  std::size_t i = next;
  for (; i + 16 + kReach <= n; i += 16) {
    const auto at = [d, i](std::size_t offset) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i + offset));
    };
    const __m128i ends =
        _mm_or_si128(_mm_cmpeq_epi8(at(kJobLast), b), _mm_cmpeq_epi8(at(kStepLast), q));
    const auto mask = static_cast<std::uint32_t>(
        _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(at(0), p), ends)));
    if (mask != 0 && !report(v, i, mask)) return false;
  }
  next = i;
  return true;
}

#endif

}  // namespace

void Prefilter::scan_raw(std::string_view data, Scratch& /*scratch*/, RawCallback callback,
                         void* context) const {
  if (data.size() < kAnchor.size()) return;
  const Verifier verifier{data, callback, context};
  std::size_t i = 0;
#if defined(__x86_64__)
  if (!(cpu_has_avx2() ? scan_avx2(verifier, i) : scan_sse2(verifier, i))) return;
#endif
  scan_scalar(verifier, i);
}

}  // namespace pipescope

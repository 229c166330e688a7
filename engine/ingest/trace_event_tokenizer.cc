#include "ingest/trace_event_tokenizer.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PIPESCOPE_TOKENIZER_AVX2 1
#endif

namespace pipescope {

namespace {

constexpr std::size_t kMaxValueBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxKeyBytes = 64;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

TraceEventTokenizer::TraceEventTokenizer(std::vector<std::string> keys, EventCallback on_event,
                                         ValueCallback on_value, std::size_t max_event_bytes)
    : keys_(std::move(keys)),
      on_event_(std::move(on_event)),
      on_value_(std::move(on_value)),
      max_event_bytes_(max_event_bytes) {}

void TraceEventTokenizer::fail(std::uint64_t offset, std::string message) {
  if (!error_.empty()) return;
  error_ = std::move(message);
  error_offset_ = offset;
}

void TraceEventTokenizer::append_carry(const char* data, std::size_t size) {
  if (carry_.size() < carry_size_ + size + kPadding) {
    carry_.resize(std::max(carry_.size() * 2, carry_size_ + size + kPadding));
  }
  std::memcpy(carry_.data() + carry_size_, data, size);
  carry_size_ += size;
  std::memset(carry_.data() + carry_size_, ' ', kPadding);
}

std::string_view TraceEventTokenizer::region_view(const char* data, std::size_t end) {
  if (!region_in_carry_) return {data + region_begin_, end - region_begin_};
  append_carry(data, end);
  return {carry_.data(), carry_size_};
}

void TraceEventTokenizer::feed(const char* data, std::size_t size) {
  if (!error_.empty() || size == 0) {
    consumed_ += size;
    return;
  }
  scan(data, size);
  consumed_ += size;
  if (!error_.empty()) return;
  const bool open = region_ == Region::event || region_ == Region::value;
  if (!open) return;
  // Keep the unfinished region's bytes for the next chunk.
  const std::size_t kept = region_in_carry_ ? carry_size_ + size : size - region_begin_;
  if (kept > (region_ == Region::event ? max_event_bytes_ : kMaxValueBytes)) {
    if (region_ == Region::event) ++oversized_;
    region_ = Region::skipped;
    region_in_carry_ = false;
    carry_size_ = 0;
    return;
  }
  if (region_in_carry_) {
    append_carry(data, size);
  } else {
    carry_size_ = 0;
    append_carry(data + region_begin_, size - region_begin_);
    region_in_carry_ = true;
  }
}

void TraceEventTokenizer::close_value(const char* data, std::size_t end) {
  if (region_ == Region::value && on_value_) {
    std::string_view value = region_view(data, end);
    while (!value.empty() && is_space(value.back())) value.remove_suffix(1);
    on_value_(value_key_, value);
  }
  region_ = Region::none;
  region_in_carry_ = false;
  carry_size_ = 0;
}

namespace {

// Bytes that change the tokenizer's state outside a string.
struct Structural {
  bool table[256] = {};
  constexpr Structural() {
    for (const char c : {'"', '{', '}', '[', ']', ',', ':', '\\'})
      table[static_cast<unsigned char>(c)] = true;
  }
};
constexpr Structural kStructural;

}  // namespace

bool TraceEventTokenizer::bracket(const char* data, std::size_t i, char c, std::uint64_t base) {
  if (c == '{' || c == '[') {
    if (depth_ >= kMaxDepth) {
      fail(base + i, fmt::format("nesting deeper than {} levels", kMaxDepth));
      return false;
    }
    if (depth_ == 0) {
      top_object_ = c == '{';
      expect_key_ = top_object_;
      if (!top_object_) events_depth_ = 1;
    }
    if (c == '{' && events_depth_ > 0 && depth_ == events_depth_ && region_ == Region::none) {
      region_ = Region::event;
      region_begin_ = i;
      region_offset_ = base + i;
    }
    stack_[static_cast<std::size_t>(depth_)] = c;
    ++depth_;
    return true;
  }
  const char open = c == '}' ? '{' : '[';
  if (depth_ == 0 || stack_[static_cast<std::size_t>(depth_ - 1)] != open) {
    fail(base + i, fmt::format("unexpected '{}'", c));
    return false;
  }
  --depth_;
  if (depth_ == events_depth_ && events_depth_ > 0) {
    if (region_ == Region::event) {
      ++events_;
      if (on_event_) on_event_(region_view(data, i + 1), region_offset_);
      region_in_carry_ = false;
      carry_size_ = 0;
      if (!error_.empty()) return false;
    }
    if (region_ == Region::event || region_ == Region::skipped) region_ = Region::none;
  } else if (events_depth_ > 0 && depth_ == events_depth_ - 1) {
    events_depth_ = 0;  // the events array closed
  }
  if (depth_ == 0) {
    if (region_ == Region::value || region_ == Region::skipped) close_value(data, i);
    done_ = true;
  }
  return true;
}

bool TraceEventTokenizer::blocks_allowed() const {
  // Below the top object's own level only brackets change the state: its
  // keys, commas and colons (depth 1) need the byte-wise scan.
  return block_scan_ != BlockScan::off && !done_ && !awaiting_value_ && !key_capture_ &&
         error_.empty() && depth_ >= (top_object_ ? 2 : 1);
}

namespace {

/// Bit i set where p[i] is one of the bytes asked for, over 64 bytes.
struct BlockMasks {
  std::uint64_t quote = 0;
  std::uint64_t backslash = 0;
  std::uint64_t bracket = 0;  // { [ } ]
};

BlockMasks block_masks(const char* p) {
  BlockMasks m;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i case_bit = _mm_set1_epi8(0x20);  // '[' | 0x20 == '{', ']' | 0x20 == '}'
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i folded = _mm_or_si128(v, case_bit);
    const auto bits = [](__m128i eq) {
      return static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(eq)));
    };
    m.quote |= bits(_mm_cmpeq_epi8(v, quote)) << (16 * k);
    m.backslash |= bits(_mm_cmpeq_epi8(v, backslash)) << (16 * k);
    m.bracket |= bits(_mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close)))
                 << (16 * k);
  }
#else
  for (int i = 0; i < 64; ++i) {
    const char c = p[i];
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (c == '"') m.quote |= bit;
    if (c == '\\') m.backslash |= bit;
    if (c == '{' || c == '[' || c == '}' || c == ']') m.bracket |= bit;
  }
#endif
  return m;
}

/// The characters escaped by a backslash (each right after an odd-length
/// run of backslashes), carrying a run that ends the block into the next
/// one: the method of simdjson's stage 1 (Langdale and Lemire, "Parsing
/// gigabytes of JSON per second").
std::uint64_t escaped_chars(std::uint64_t backslash, std::uint64_t& ends_odd_run) {
  constexpr std::uint64_t kEven = 0x5555555555555555ULL;
  constexpr std::uint64_t kOdd = ~kEven;
  const std::uint64_t starts = backslash & ~(backslash << 1);
  const std::uint64_t even_start_mask = kEven ^ ends_odd_run;
  const std::uint64_t even_starts = starts & even_start_mask;
  const std::uint64_t odd_starts = starts & ~even_start_mask;
  const std::uint64_t even_carries = backslash + even_starts;
  std::uint64_t odd_carries = 0;
  const bool overflow = __builtin_add_overflow(backslash, odd_starts, &odd_carries);
  odd_carries |= ends_odd_run;
  ends_odd_run = overflow ? 1 : 0;
  const std::uint64_t even_carry_ends = even_carries & ~backslash;
  const std::uint64_t odd_carry_ends = odd_carries & ~backslash;
  return (even_carry_ends & kOdd) | (odd_carry_ends & kEven);
}

/// Bit i = XOR of bits 0..i: 1 from an opening quote up to (not including)
/// its closing one.
std::uint64_t prefix_xor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

}  // namespace

bool TraceEventTokenizer::visit_brackets(const char* data, std::size_t size, std::size_t i,
                                         std::uint64_t base, std::uint64_t brackets,
                                         std::size_t& resume) {
  for (; brackets != 0; brackets &= brackets - 1) {
    const std::size_t at = i + static_cast<std::size_t>(__builtin_ctzll(brackets));
    const char c = data[at];
    // Inside an event, below its own braces (its "args", a kernel's grid):
    // only the nesting changes.
    if (region_ == Region::event && depth_ > events_depth_) {
      if (c == '{' || c == '[') {
        if (depth_ < kMaxDepth) {
          stack_[static_cast<std::size_t>(depth_++)] = c;
          continue;
        }
      } else if (depth_ > events_depth_ + 1 &&
                 stack_[static_cast<std::size_t>(depth_ - 1)] == (c == '}' ? '{' : '[')) {
        --depth_;
        continue;
      }
    }
    if (!bracket(data, at, c, base)) {
      resume = size;
      return false;
    }
    if (!blocks_allowed()) {
      // Back to the byte-wise scan after this bracket, outside any string.
      in_string_ = false;
      escape_ = false;
      resume = at + 1;
      return false;
    }
  }
  return true;
}

std::size_t TraceEventTokenizer::scan_blocks(const char* data, std::size_t size, std::size_t i,
                                             std::uint64_t base) {
#if defined(PIPESCOPE_TOKENIZER_AVX2)
  static const bool avx2 =
      (__builtin_cpu_init(), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul"));
  if (avx2 && block_scan_ == BlockScan::best) return scan_blocks_avx2(data, size, i, base);
#endif
  // The byte-wise scan's string state, as masks.
  std::uint64_t ends_odd_run = escape_ ? 1 : 0;
  std::uint64_t in_string = in_string_ ? ~std::uint64_t{0} : 0;
  for (; i + 64 <= size; i += 64) {
    const BlockMasks m = block_masks(data + i);
    const std::uint64_t escaped =
        m.backslash == 0 && ends_odd_run == 0 ? 0 : escaped_chars(m.backslash, ends_odd_run);
    const std::uint64_t inside = prefix_xor(m.quote & ~escaped) ^ in_string;
    in_string = static_cast<std::uint64_t>(static_cast<std::int64_t>(inside) >> 63);
    std::size_t resume;
    if (!visit_brackets(data, size, i, base, m.bracket & ~inside & ~escaped, resume)) {
      return resume;
    }
  }
  in_string_ = in_string != 0;
  escape_ = ends_odd_run != 0;
  return i;
}

#if defined(PIPESCOPE_TOKENIZER_AVX2)
/// The same scan, the masks of 64 bytes from two 32-byte compares and the
/// strings' extent from one carry-less multiplication.
__attribute__((target("avx2,pclmul"))) std::size_t TraceEventTokenizer::scan_blocks_avx2(
    const char* data, std::size_t size, std::size_t i, std::uint64_t base) {
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i case_bit = _mm256_set1_epi8(0x20);  // '[' | 0x20 == '{', ']' | 0x20 == '}'
  const __m256i open = _mm256_set1_epi8('{');
  const __m256i close = _mm256_set1_epi8('}');
  const __m128i ones = _mm_set1_epi8(-1);
  std::uint64_t ends_odd_run = escape_ ? 1 : 0;
  std::uint64_t in_string = in_string_ ? ~std::uint64_t{0} : 0;
  for (; i + 64 <= size; i += 64) {
    BlockMasks m;
    for (int k = 0; k < 2; ++k) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 32 * k));
      const __m256i folded = _mm256_or_si256(v, case_bit);
      // (A lambda would not take this function's target.)
      const auto q = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote)));
      const auto b =
          static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, backslash)));
      const auto r = static_cast<std::uint32_t>(_mm256_movemask_epi8(
          _mm256_or_si256(_mm256_cmpeq_epi8(folded, open), _mm256_cmpeq_epi8(folded, close))));
      m.quote |= std::uint64_t{q} << (32 * k);
      m.backslash |= std::uint64_t{b} << (32 * k);
      m.bracket |= std::uint64_t{r} << (32 * k);
    }
    const std::uint64_t escaped =
        m.backslash == 0 && ends_odd_run == 0 ? 0 : escaped_chars(m.backslash, ends_odd_run);
    const auto unescaped = static_cast<long long>(m.quote & ~escaped);
    const std::uint64_t inside = static_cast<std::uint64_t>(_mm_cvtsi128_si64(
                                     _mm_clmulepi64_si128(_mm_set_epi64x(0, unescaped), ones, 0))) ^
                                 in_string;
    in_string = static_cast<std::uint64_t>(static_cast<std::int64_t>(inside) >> 63);
    std::size_t resume;
    if (!visit_brackets(data, size, i, base, m.bracket & ~inside & ~escaped, resume)) {
      return resume;
    }
  }
  in_string_ = in_string != 0;
  escape_ = ends_odd_run != 0;
  return i;
}
#else
std::size_t TraceEventTokenizer::scan_blocks_avx2(const char* data, std::size_t size, std::size_t i,
                                                  std::uint64_t base) {
  return scan_blocks(data, size, i, base);
}
#endif

void TraceEventTokenizer::scan(const char* data, std::size_t size) {
  const std::uint64_t base = consumed_;
  for (std::size_t i = 0; i < size; ++i) {
    if (i + 64 <= size && blocks_allowed()) {
      i = scan_blocks(data, size, i, base);
      if (i >= size || !error_.empty()) return;
    }
    if (escape_) {
      // A backslash takes the next byte with it, in a string or (damaged
      // JSON) outside one: the rule the block scan's masks follow too, so
      // that both read damage alike.
      escape_ = false;
      continue;
    }
    if (in_string_) {
      if (!key_capture_) {
        // The rest of the string at once: up to its quote or a backslash.
        while (i < size && data[i] != '"' && data[i] != '\\') ++i;
        if (i == size) break;
        if (data[i] == '\\') {
          escape_ = true;
        } else {
          in_string_ = false;
        }
        continue;
      }
      const char c = data[i];
      if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
        key_capture_ = false;
      } else if (key_.size() <= kMaxKeyBytes) {
        key_.push_back(c);
      }
      continue;
    }
    if (done_) {
      // Whatever follows the document is ignored (a second document, junk).
      return;
    }
    if (!awaiting_value_) {
      while (i < size && !kStructural.table[static_cast<unsigned char>(data[i])]) ++i;
      if (i == size) break;
    }
    const char c = data[i];
    if (is_space(c)) continue;
    if (awaiting_value_) {
      awaiting_value_ = false;
      if (c == '[' && key_ == "traceEvents") {
        events_depth_ = 2;
      } else if (std::find(keys_.begin(), keys_.end(), key_) != keys_.end()) {
        region_ = Region::value;
        region_begin_ = i;
        region_offset_ = base + i;
        value_key_ = key_;
      }
    }
    switch (c) {
      case '"':
        in_string_ = true;
        if (depth_ == 1 && top_object_ && expect_key_) {
          key_capture_ = true;
          expect_key_ = false;
          key_.clear();
        }
        break;
      case '{':
      case '[':
      case '}':
      case ']':
        if (!bracket(data, i, c, base)) return;
        break;
      case ',':
        if (depth_ == 1 && top_object_) {
          if (region_ == Region::value || region_ == Region::skipped) close_value(data, i);
          expect_key_ = true;
        }
        break;
      case ':':
        if (depth_ == 1 && top_object_) awaiting_value_ = true;
        break;
      case '\\':
        escape_ = true;
        break;
      default:
        break;
    }
  }
}

void TraceEventTokenizer::finish() {
  if (!error_.empty()) return;
  if (consumed_ == 0) {
    fail(0, "the file is empty");
  } else if (depth_ == 0 && !done_) {
    fail(consumed_, "no JSON object or array in the file");
  } else if (!done_) {
    const std::uint64_t where = region_ == Region::event ? region_offset_ : consumed_;
    fail(where, fmt::format("the JSON ends early (cut off at byte {}): every event before byte {} "
                            "was read",
                            consumed_, where));
  }
}

}  // namespace pipescope

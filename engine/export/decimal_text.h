// Integers as decimal text, written forward into a caller's buffer, for the
// trace writers that print millions of numbers: no locale, no allocation, no
// floating point. Each function writes at most the kMax* bytes named beside
// it and returns one past the last byte written.
//
// Usage:
//   char text[kMaxNsAsUsChars];
//   const char* end = write_ns_as_us(text, -1);   // "-0.001"
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pipescope {

/// "18446744073709551615" and "-9223372036854775808" are 20 bytes.
inline constexpr std::size_t kMaxDecimalChars = 20;
/// "-9223372036854775.808".
inline constexpr std::size_t kMaxNsAsUsChars = 21;

namespace decimal_detail {

inline constexpr char kPairs[] =
    "00010203040506070809"
    "10111213141516171819"
    "20212223242526272829"
    "30313233343536373839"
    "40414243444546474849"
    "50515253545556575859"
    "60616263646566676869"
    "70717273747576777879"
    "80818283848586878889"
    "90919293949596979899";

inline constexpr std::uint64_t kPowers[] = {1ull,
                                            10ull,
                                            100ull,
                                            1000ull,
                                            10000ull,
                                            100000ull,
                                            1000000ull,
                                            10000000ull,
                                            100000000ull,
                                            1000000000ull,
                                            10000000000ull,
                                            100000000000ull,
                                            1000000000000ull,
                                            10000000000000ull,
                                            100000000000000ull,
                                            1000000000000000ull,
                                            10000000000000000ull,
                                            100000000000000000ull,
                                            1000000000000000000ull,
                                            10000000000000000000ull};

inline void put_pair(char* out, std::uint32_t two_digits) {
  std::memcpy(out, kPairs + 2 * two_digits, 2);
}

}  // namespace decimal_detail

/// The number of decimal digits of `v` (1 for 0).
inline unsigned decimal_digit_count(std::uint64_t v) {
  // log10 from log2 (1233/4096 ~ log10(2)), corrected by one comparison.
  const unsigned guess = static_cast<unsigned>(std::bit_width(v | 1) * 1233) >> 12;
  return guess + ((v | 1) >= decimal_detail::kPowers[guess] ? 1 : 0);
}

/// Writes `v` (kMaxDecimalChars at most).
inline char* write_decimal(char* out, std::uint64_t v) {
  if (v < 10) {
    *out = static_cast<char>('0' + v);
    return out + 1;
  }
  char* const end = out + decimal_digit_count(v);
  char* p = end;
  // Eight digits at a time in 32-bit arithmetic, their four pairs independent
  // of one another; then pairs.
  while (v >= 100000000) {
    const auto block = static_cast<std::uint32_t>(v % 100000000);
    v /= 100000000;
    const std::uint32_t high = block / 10000;
    const std::uint32_t low = block % 10000;
    p -= 8;
    decimal_detail::put_pair(p, high / 100);
    decimal_detail::put_pair(p + 2, high % 100);
    decimal_detail::put_pair(p + 4, low / 100);
    decimal_detail::put_pair(p + 6, low % 100);
  }
  auto rest = static_cast<std::uint32_t>(v);
  while (rest >= 100) {
    p -= 2;
    decimal_detail::put_pair(p, rest % 100);
    rest /= 100;
  }
  if (rest >= 10) {
    decimal_detail::put_pair(p - 2, rest);
  } else {
    p[-1] = static_cast<char>('0' + rest);
  }
  return end;
}

/// Writes `v` with a '-' when negative (kMaxDecimalChars at most).
inline char* write_decimal(char* out, std::int64_t v) {
  if (v < 0) {
    *out++ = '-';
    // In unsigned arithmetic, so INT64_MIN has a magnitude too.
    return write_decimal(out, std::uint64_t{0} - static_cast<std::uint64_t>(v));
  }
  return write_decimal(out, static_cast<std::uint64_t>(v));
}

inline char* write_decimal(char* out, std::uint32_t v) {
  return write_decimal(out, std::uint64_t{v});
}

/// Writes nanoseconds as microseconds with exactly three decimals, from the
/// integer alone: 1234567 -> "1234.567", -1 -> "-0.001", 0 -> "0.000"
/// (kMaxNsAsUsChars at most).
inline char* write_ns_as_us(char* out, std::int64_t ns) {
  std::uint64_t magnitude = static_cast<std::uint64_t>(ns);
  if (ns < 0) {
    *out++ = '-';
    magnitude = std::uint64_t{0} - magnitude;
  }
  out = write_decimal(out, magnitude / 1000);
  const auto frac = static_cast<unsigned>(magnitude % 1000);
  out[0] = '.';
  out[1] = static_cast<char>('0' + frac / 100);
  decimal_detail::put_pair(out + 2, frac % 100);
  return out + 4;
}

}  // namespace pipescope

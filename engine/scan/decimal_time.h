// Exact conversion of decimal timestamps to integer nanoseconds, straight
// from the text: PaddlePaddle's milliseconds ("1697793307213.760986") and the
// microseconds of Chrome-trace JSON ("1712195495984501.2"). A double holds
// only ~16 significant digits, so 1.697793307213760986e12 ms would lose the
// last nanoseconds on the way. Both units are read by one routine, so they
// round and reject alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pipescope {

/// Parses `DIGITS[.DIGITS]` milliseconds (1–13 integer digits, 1–9 fraction
/// digits) into nanoseconds; values beyond int64 nanoseconds are rejected. Fraction digits beyond
/// the 6th are sub-nanosecond and rounded half up (.0000005 ms -> 1 ns). Returns nullopt for
/// anything else: empty text, a sign, other characters, too many digits.
std::optional<std::int64_t> parse_millis_to_ns(std::string_view text);

/// parse_millis_to_ns of the 20 bytes at `p` when they are in the form
/// PaddlePaddle prints, `DDDDDDDDDDDDD.DDDDDD` (p[13] is '.'; the caller
/// checks it): nullopt when any other byte is not a digit.
std::optional<std::int64_t> parse_millis_13_6(const char* p);

/// Parses `[-]DIGITS[.DIGITS]` microseconds, as JSON writes them ("12",
/// "1712195495984501.2", "-3.5"), into nanoseconds: any number of digits on
/// either side, fraction digits beyond the 3rd rounded half up, away from
/// zero (-0.0005 us -> -1 ns). Returns nullopt for anything else (empty
/// text, a '+', an exponent, other characters) and for a magnitude beyond
/// int64 nanoseconds, never a wrapped value.
std::optional<std::int64_t> parse_micros_to_ns(std::string_view text);

/// Formats nanoseconds as milliseconds with 6 decimals ("1697793307213.760986"),
/// the inverse of parse_millis_to_ns for whole nanoseconds. Non-negative input.
std::string format_ns_as_millis(std::int64_t ns);

}  // namespace pipescope

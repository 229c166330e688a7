// Exact conversion of decimal timestamps to integer nanoseconds, straight
// from the text: PaddlePaddle's milliseconds ("1697793307213.760986") and the
// microseconds of Chrome-trace JSON ("1712195495984501.2"), and the seconds,
// milliseconds, microseconds or nanoseconds of another framework's job lines
// (`--job-line-unit`). A double holds only ~16 significant digits, so
// 1.697793307213760986e12 ms would lose the last nanoseconds on the way. Every
// unit is read by one routine, so they round and reject alike.
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

/// The units a job line's times may be printed in (`--job-line-unit`).
enum class TimeUnit : std::uint8_t { s, ms, us, ns };

/// "s", "ms", "us" or "ns"; nullopt for anything else.
std::optional<TimeUnit> parse_time_unit(std::string_view name);
std::string_view time_unit_name(TimeUnit unit);

/// Parses `DIGITS[.DIGITS]` in `unit` into nanoseconds by parse_millis_to_ns's
/// rule, for every unit: whole units times the unit's nanoseconds, plus the
/// fraction's digits down to the nanosecond (9 for s, 6 for ms, 3 for us, none
/// for ns); the next digit rounds half up (0.0000000005 s -> 1 ns) and any
/// after it are ignored. At most as many integer digits as the largest int64
/// nanosecond count has in the unit (s 10, ms 13, us 16, ns 19), and fraction
/// digits down to the picosecond (s 12, ms 9, us 6, ns 3); a value beyond
/// int64 nanoseconds is rejected. Returns nullopt for anything else: empty
/// text, a sign, an exponent, spaces, other characters.
/// parse_decimal_to_ns(text, TimeUnit::ms) is parse_millis_to_ns(text).
std::optional<std::int64_t> parse_decimal_to_ns(std::string_view text, TimeUnit unit);

/// Formats nanoseconds as milliseconds with 6 decimals ("1697793307213.760986"),
/// the inverse of parse_millis_to_ns for whole nanoseconds. Non-negative input.
std::string format_ns_as_millis(std::int64_t ns);

}  // namespace pipescope

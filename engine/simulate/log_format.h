// Text pieces of a simulated PaddlePaddle worker log: millisecond timestamps
// formatted from integer ns (never via double), GLOG and Python-logging
// prefixes. All append to an fmt::memory_buffer so the writer stays fast.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

namespace pipescope::sim {

/// Appends ns as milliseconds with `decimals` fraction digits (3, 6 or 9):
///  3: rounded half up to whole microseconds ("1697793307213.761");
///  6: exact ("1697793307213.760986");
///  9: nine digits whose value rounds half up to exactly ns, e.g.
///     "1697793307213.760985512" — `bits` picks the sub-ns digits, so that the
///     reader's rounding of digits 7-9 is exercised.
void append_ms_time(fmt::memory_buffer& out, std::int64_t ns, int decimals, std::uint64_t bits = 0);

/// The ns value a reader obtains from append_ms_time's text (the grammar's
/// Decimal(text)·10^6 rounded half up): ns itself unless decimals == 3.
std::int64_t printed_ns(std::int64_t ns, int decimals);

/// Appends a GLOG prefix for epoch time ns (UTC):
/// "I1020 09:15:07.265326 22317 standalone_executor.cc:217] ".
void append_glog_prefix(fmt::memory_buffer& out, char severity, std::int64_t ns, int thread_id,
                        std::string_view source);

/// Appends a Python logging timestamp (UTC): "2023-10-20 09:15:07,265".
void append_python_time(fmt::memory_buffer& out, std::int64_t ns);

/// Appends an unsigned or signed integer in decimal.
inline void append_int(fmt::memory_buffer& out, std::int64_t value) {
  const fmt::format_int text(value);
  out.append(text.data(), text.data() + text.size());
}

inline void append_text(fmt::memory_buffer& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

}  // namespace pipescope::sim

#include "scan/line_stamp.h"

#include <algorithm>
#include <cstdlib>

namespace pipescope {

namespace {

constexpr std::int64_t kNsPerSecond = 1'000'000'000;
constexpr std::int64_t kNsPerDay = 86'400 * kNsPerSecond;

bool digit(char c) { return c >= '0' && c <= '9'; }

/// Reads `n` digits at `p` into `value`; false unless all are digits.
bool digits(std::string_view text, std::size_t at, std::size_t n, int& value) {
  if (at + n > text.size()) return false;
  value = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[at + i];
    if (!digit(c)) return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

int days_in_month(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month == 2) {
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return leap ? 29 : 28;
  }
  return kDays[month - 1];
}

/// `HH:MM:SS` at `at`, then an optional fraction after one of `separators`:
/// ns of the day and the end offset; nullopt when it is no time of day.
std::optional<std::pair<std::int64_t, std::size_t>> time_of_day(std::string_view text,
                                                                std::size_t at,
                                                                std::string_view separators) {
  int h = 0, m = 0, s = 0;
  if (!digits(text, at, 2, h) || at + 2 >= text.size() || text[at + 2] != ':' ||
      !digits(text, at + 3, 2, m) || at + 5 >= text.size() || text[at + 5] != ':' ||
      !digits(text, at + 6, 2, s)) {
    return std::nullopt;
  }
  if (h > 23 || m > 59 || s > 60) return std::nullopt;  // 60: a leap second
  std::int64_t ns = ((h * 60 + m) * std::int64_t{60} + s) * kNsPerSecond;
  std::size_t end = at + 8;
  if (end < text.size() && separators.find(text[end]) != std::string_view::npos &&
      end + 1 < text.size() && digit(text[end + 1])) {
    std::int64_t fraction = 0;
    std::int64_t scale = kNsPerSecond;
    std::size_t i = end + 1;
    for (; i < text.size() && digit(text[i]); ++i) {
      if (scale > 1) {
        scale /= 10;
        fraction += (text[i] - '0') * scale;
      }
    }
    ns += fraction;
    end = i;
  }
  return std::make_pair(ns, end);
}

/// GLOG's `Lmmdd hh:mm:ss.uuuuuu` with its severity letter at `at`.
std::optional<LineStamp> glog_at(std::string_view text, std::size_t at) {
  int month = 0, day = 0;
  if (!digits(text, at + 1, 2, month) || !digits(text, at + 3, 2, day)) return std::nullopt;
  if (at + 5 >= text.size() || text[at + 5] != ' ') return std::nullopt;
  const auto time = time_of_day(text, at + 6, ".");
  // GLOG prints microseconds; PyTorch's c10 logging (the `[rank3]:[E1218
  // 20:27:21.426415540 ...` of ProcessGroupNCCL) nanoseconds.
  if (!time || (time->second != at + 6 + 15 && time->second != at + 6 + 18)) return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(2000, month)) return std::nullopt;
  return LineStamp{0, month, day, time->first, std::nullopt};  // GLOG writes no offset
}

bool alphanumeric(char c) { return digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/// The UTC offset written at `at`, right after a time (`Z`, `+05:30`,
/// `+0530`, `+05`), or after one space (`+0530`, `+05:30`): minutes east of
/// UTC; nullopt when none is (a sign must be followed by the digits and
/// then no further digit or letter, an offset be at most 14 hours).
std::optional<int> written_offset(std::string_view text, std::size_t at) {
  if (at >= text.size()) return std::nullopt;
  const auto ends_word = [&](std::size_t end) {
    return end >= text.size() || !alphanumeric(text[end]);
  };
  if (text[at] == 'Z') {
    if (ends_word(at + 1)) return 0;
    return std::nullopt;
  }
  bool spaced = false;
  if (text[at] == ' ') {
    spaced = true;
    ++at;
    if (at >= text.size()) return std::nullopt;
  }
  if (text[at] != '+' && text[at] != '-') return std::nullopt;
  const int sign = text[at] == '-' ? -1 : 1;
  int hours = 0, minutes = 0;
  if (!digits(text, at + 1, 2, hours)) return std::nullopt;
  std::size_t end = at + 3;
  if (end < text.size() && text[end] == ':') {
    if (!digits(text, end + 1, 2, minutes)) return std::nullopt;
    end += 3;
  } else if (digits(text, end, 2, minutes)) {
    end += 2;
  } else if (spaced) {
    return std::nullopt;  // ` -05` after a time is too likely to be text
  }
  if (!ends_word(end) || hours > 14 || minutes > 59 || hours * 60 + minutes > 14 * 60) {
    return std::nullopt;
  }
  return sign * (hours * 60 + minutes);
}

/// `yyyy-mm-dd hh:mm:ss[,.fff]` (or `T` between date and time) at `at`,
/// then an optional written UTC offset.
std::optional<LineStamp> iso_at(std::string_view text, std::size_t at) {
  int year = 0, month = 0, day = 0;
  if (!digits(text, at, 4, year) || at + 4 >= text.size() || text[at + 4] != '-' ||
      !digits(text, at + 5, 2, month) || at + 7 >= text.size() || text[at + 7] != '-' ||
      !digits(text, at + 8, 2, day) || at + 10 >= text.size() ||
      (text[at + 10] != ' ' && text[at + 10] != 'T')) {
    return std::nullopt;
  }
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > days_in_month(year, month)) {
    return std::nullopt;
  }
  const auto time = time_of_day(text, at + 11, ",.");
  if (!time) return std::nullopt;
  return LineStamp{year, month, day, time->first, written_offset(text, time->second)};
}

/// Days from 1970-01-01 to the given civil date (Howard Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

/// Whether a stamp may start at `i` > 0: after a non-alphanumeric byte, or
/// right after a colour code (`\x1b[0;32m`).
bool after_word_break(std::string_view line, std::size_t i) {
  const char before = line[i - 1];
  if (!alphanumeric(before)) return true;
  if (before != 'm') return false;
  std::size_t j = i - 1;
  while (j > 0 && (digit(line[j - 1]) || line[j - 1] == ';')) --j;
  return j >= 2 && line[j - 1] == '[' && line[j - 2] == '\x1b';
}

}  // namespace

std::optional<LineStamp> find_line_stamp(std::string_view line) {
  const std::size_t limit = std::min(line.size(), kStampSearchBytes);
  for (std::size_t i = 0; i < limit; ++i) {
    const char c = line[i];
    // A stamp starts a word: after the line's start or a non-alphanumeric.
    if (i > 0 && !after_word_break(line, i)) continue;
    if (c == 'I' || c == 'W' || c == 'E' || c == 'F') {
      if (auto stamp = glog_at(line, i)) return stamp;
    } else if (digit(c)) {
      if (auto stamp = iso_at(line, i)) return stamp;
    }
  }
  return std::nullopt;
}

std::int64_t naive_epoch_ns(const LineStamp& stamp, int year) {
  const int y = stamp.year != 0 ? stamp.year : year;
  // February 29th of a year without one (GLOG prints no year) reads as March 1st.
  return days_from_civil(y, static_cast<unsigned>(stamp.month), static_cast<unsigned>(stamp.day)) *
             kNsPerDay +
         stamp.ns_of_day;
}

int utc_year(std::int64_t epoch_ns) {
  // Floor division: times before 1970 stay in their year.
  std::int64_t days = epoch_ns / kNsPerDay;
  if (epoch_ns % kNsPerDay < 0) --days;
  // civil_from_days (Howard Hinnant), the year only.
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned month = mp + (mp < 10 ? 3 : -9);
  return static_cast<int>(static_cast<std::int64_t>(yoe) + era * 400 + (month <= 2));
}

std::optional<std::int64_t> written_epoch_ns(const LineStamp& stamp) {
  // Only dated stamps (ISO) write an offset.
  if (!stamp.utc_offset_minutes || stamp.year == 0) return std::nullopt;
  return naive_epoch_ns(stamp, stamp.year) -
         std::int64_t{*stamp.utc_offset_minutes} * 60 * kNsPerSecond;
}

std::int64_t StampPlacement::place(const LineStamp& stamp) const {
  if (const auto written = written_epoch_ns(stamp)) return *written;
  if (stamp.year != 0) return naive_epoch_ns(stamp, stamp.year) - utc_offset_ns;
  const int year = utc_year(anchor_ns);
  std::int64_t best = 0;
  std::int64_t best_distance = -1;
  for (int y = year - 1; y <= year + 1; ++y) {
    const std::int64_t t = naive_epoch_ns(stamp, y) - utc_offset_ns;
    const std::int64_t distance = std::llabs(t - anchor_ns);
    if (best_distance < 0 || distance < best_distance) {
      best = t;
      best_distance = distance;
    }
  }
  return best;
}

std::optional<StampPlacement> placement_from(const StampAnchor& anchor) {
  constexpr std::int64_t kQuarterHour = 15 * 60 * kNsPerSecond;
  constexpr std::int64_t kMaxOffset = 14 * 3600 * kNsPerSecond;  // UTC+14 is the furthest zone
  const int year = utc_year(anchor.end_ns);
  std::optional<std::int64_t> offset;
  for (int y = year - 1; y <= year + 1; ++y) {
    if (anchor.stamp.year != 0 && y != anchor.stamp.year) continue;
    const std::int64_t raw = naive_epoch_ns(anchor.stamp, y) - anchor.end_ns;
    // Round to the quarter hour, halves away from zero: the line is printed
    // a little after the job ended, never a quarter of an hour later.
    const std::int64_t rounded = (raw >= 0 ? (raw + kQuarterHour / 2) : (raw - kQuarterHour / 2)) /
                                 kQuarterHour * kQuarterHour;
    if (std::llabs(rounded) <= kMaxOffset &&
        (!offset || std::llabs(rounded) < std::llabs(*offset))) {
      offset = rounded;
    }
  }
  if (!offset) return std::nullopt;
  return StampPlacement{*offset, anchor.end_ns};
}

}  // namespace pipescope

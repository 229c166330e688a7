// The timestamp a log line begins with, as written, and how a file's job
// lines place such times on the epoch (docs/guide.md, "Log events"):
//
//  - GLOG: `I1020 09:15:07.265326` (severity, month, day, local time to the
//    microsecond; no year), also inside a prefix such as torch.distributed's
//    `[rank3]:[E1020 09:15:07.265326540 ...]` (c10 logging: to the ns);
//  - Python logging and ISO dates: `2023-10-20 09:15:07,265` (or `.265`,
//    `T` for the space, 0-9 fraction digits), local time; or with the UTC
//    offset written after the time: `Z`, `+05:30`, `+0530`, `+05`
//    (`2024-03-10T09:59:59.944Z`, `datetime.isoformat()`'s
//    `2024-03-10T15:29:59.944000+05:30`, `%z`'s `+0530`; also after one
//    space, `2024-03-10 15:29:59 +0530`, as ±HHMM or ±HH:MM only).
//
// A stamp is looked for within the first kStampSearchBytes bytes of the line
// (after colour codes and bracketed prefixes), so that a message quoting a
// date further on is not taken for the line's time. Exact: integer ns,
// never through double.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pipescope {

inline constexpr std::size_t kStampSearchBytes = 96;

/// A wall-clock time as a line prints it.
struct LineStamp {
  /// 0: the format prints no year (GLOG).
  int year = 0;
  int month = 0;  ///< 1..12
  int day = 0;    ///< 1..31
  /// Nanoseconds since midnight of the printed day.
  std::int64_t ns_of_day = 0;
  /// The UTC offset the line writes after its time (local − UTC, minutes:
  /// `Z` 0, `+05:30` 330); unset: local time of an unwritten offset.
  std::optional<int> utc_offset_minutes;

  friend bool operator==(const LineStamp&, const LineStamp&) = default;
};

/// The stamp `line` begins with; nullopt when none (or an impossible date).
std::optional<LineStamp> find_line_stamp(std::string_view line);

/// `stamp` read as if it were UTC in `year` (the stamp's own year when it has
/// one): ns since the epoch.
std::int64_t naive_epoch_ns(const LineStamp& stamp, int year);

/// The UTC year of an epoch time in ns.
int utc_year(std::int64_t epoch_ns);

/// How a file's local stamps map to the epoch, from one job line: its stamp
/// and the job's end time (epoch ns), which the line is printed just after.
struct StampAnchor {
  LineStamp stamp;
  std::int64_t end_ns = 0;

  friend bool operator==(const StampAnchor&, const StampAnchor&) = default;
};

/// The placement of a file's stamps: its UTC offset (local − UTC, rounded
/// to 15 minutes) and the year of its anchor.
struct StampPlacement {
  std::int64_t utc_offset_ns = 0;
  std::int64_t anchor_ns = 0;  ///< the anchor job's end (epoch ns)

  /// Epoch ns of `stamp`: a stamp without a year takes the year that puts it
  /// closest to the anchor (a run over New Year's Eve stays in order). A
  /// stamp that writes its own offset is read with that offset instead.
  std::int64_t place(const LineStamp& stamp) const;
};

/// Epoch ns of a stamp that writes its own UTC offset; nullopt for a local
/// stamp (its offset must come from a job line).
std::optional<std::int64_t> written_epoch_ns(const LineStamp& stamp);

/// The placement an anchor implies (from its stamp as printed, whether or
/// not it writes an offset: a job line's local offset is measured); nullopt when the anchor's stamp
/// lies more than 14 hours from its end time in every candidate year (not a clock a time zone
/// explains).
std::optional<StampPlacement> placement_from(const StampAnchor& anchor);

}  // namespace pipescope

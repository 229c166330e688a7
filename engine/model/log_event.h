// Log events: lines of a worker log that say what else happened (a
// checkpoint saved, a NCCL warning, an allocator retry, a skipped step), found
// by the event library's patterns (scan/event_library.h) in the same pass as
// the job lines, and placed on the run's clock (docs/guide.md, "Log events").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pipescope {

/// One entry of the event library, as the run reports it.
struct EventKind {
  std::string id;        ///< `nccl_warn`
  std::string category;  ///< `nccl`
  std::string severity;  ///< info, warning or error
  std::string description;

  friend bool operator==(const EventKind&, const EventKind&) = default;
};

/// How an event's time was found.
enum class EventTime : std::uint8_t {
  /// From the line's own timestamp prefix (GLOG or Python logging), placed
  /// on the epoch with the year and UTC offset of the file's job lines.
  stamped,
  /// The line has no timestamp: the time of the closest dated line before it.
  approximate,
  /// No time could be placed (no dated line before it, or no job line in
  /// the file to anchor its local times): counted, listed in no step.
  unplaced,
};

/// One matched line of a device's input.
struct LogEvent {
  /// Index into Run::event_kinds.
  std::uint32_t kind = 0;
  EventTime time_kind = EventTime::stamped;
  /// 1-based line in the input.
  std::uint64_t line = 0;
  /// Epoch ns on the run's clock (clock corrections applied as to the jobs);
  /// meaningless when `time_kind` is unplaced.
  std::int64_t time_ns = 0;
  /// The pattern's named captures on this line, in the pattern's order.
  std::vector<std::pair<std::string, std::string>> captures;

  friend bool operator==(const LogEvent&, const LogEvent&) = default;
};

}  // namespace pipescope

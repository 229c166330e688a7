// Where a log's event lines lie on the epoch (docs/guide.md, "Log events"),
// one rule for every reader: `analyze`'s chunks taken in file order
// (ingest/text_log_reader.cc) and `watch`'s appended lines (live/live_run.cc).
//
//  - A stamp that writes its UTC offset (`2024-03-10T09:59:59.944Z`,
//    `+05:30`) is read with it.
//  - A local stamp takes the offset of the nearest job line before it in its
//    file that has a stamp (that stamp minus its job's end time, rounded to
//    15 minutes: scan/line_stamp.h), so a daylight-saving change or any
//    other change of the host's zone is followed from the first job line
//    printed after it; a stamp before the file's first stamped job line
//    takes that line's offset.
//
// The scanner gives each event the nearest stamped job line before it in its
// chunk (EventSeen::anchor); this clock carries the last one of the earlier
// chunks to the events before a chunk's first.
#pragma once

#include <cstdint>
#include <optional>

#include "scan/chunk_scanner.h"
#include "scan/line_stamp.h"

namespace pipescope {

class EventClock {
 public:
  /// The job line whose offset an event of the chunk being taken is read
  /// with; unset: none before it yet (the file's first, once known: place()).
  /// Call for a chunk's events before advance() over that chunk.
  std::optional<StampAnchor> anchor_of(const EventSeen& seen) const {
    return seen.anchor ? seen.anchor : last_;
  }

  /// Takes the chunk after the one before (the file's chunks in order).
  void advance(const ChunkScan& scan) {
    if (!first_ && scan.anchor) first_ = scan.anchor;
    if (scan.last_anchor) last_ = scan.last_anchor;
  }

  /// The file's first stamped job line, once a chunk has given one.
  const std::optional<StampAnchor>& first() const { return first_; }

  /// Epoch ns of an event's stamp, read by `anchor` (from anchor_of) or, when
  /// unset, by the file's first stamped job line; a written offset needs
  /// neither. Nullopt: no stamp, or no job line to read it by (yet), or that
  /// job line's stamp is no time zone away from its end (placement_from).
  std::optional<std::int64_t> place(const std::optional<LineStamp>& stamp,
                                    const std::optional<StampAnchor>& anchor) const;

 private:
  std::optional<StampAnchor> first_;
  std::optional<StampAnchor> last_;
};

}  // namespace pipescope

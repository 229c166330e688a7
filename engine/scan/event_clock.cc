#include "scan/event_clock.h"

namespace pipescope {

std::optional<std::int64_t> EventClock::place(const std::optional<LineStamp>& stamp,
                                              const std::optional<StampAnchor>& anchor) const {
  if (!stamp) return std::nullopt;
  if (const auto written = written_epoch_ns(*stamp)) return written;
  const std::optional<StampAnchor>& by = anchor ? anchor : first_;
  if (!by) return std::nullopt;
  const std::optional<StampPlacement> placement = placement_from(*by);
  if (!placement) return std::nullopt;
  return placement->place(*stamp);
}

}  // namespace pipescope

// What `pipescope watch` writes for each completed step (docs/guide.md,
// "Watching a running job"): the printed line, the JSON-lines object, and
// the Prometheus text-exposition file node_exporter's textfile collector
// reads (gauges for the last step, counters for steps and jobs seen, every
// series labelled by run; no timestamps).
#pragma once

#include <cstdint>
#include <string>

#include "live/live_run.h"

namespace pipescope {

/// "step 12  window 812.345 ms  bubble 23.41%  inherent 20.10 pts  excess
/// 3.31 pts  waited on stage 2", then "  beyond recent spread" and
/// "  provisional" when they hold. No newline.
std::string format_step_line(const LiveStep& step);

/// One JSON object on one line (no newline): run, segment, step, label,
/// start_ns, end_ns, window_ns, bubble_ratio (shortest round-trip digits),
/// devices, inherent_points, excess_points, most_waited_stage (null when
/// unknown), beyond_spread, provisional.
std::string step_json(const std::string& run, const LiveStep& step);

struct WatchCounters {
  std::uint64_t steps = 0;
  std::uint64_t jobs = 0;
};

/// The whole .prom file after `last` (the last step reported).
std::string prometheus_text(const std::string& run, const LiveStep& last,
                            const WatchCounters& counters);

}  // namespace pipescope

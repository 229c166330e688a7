#include "analysis/explanation.h"

#include <fmt/core.h>

#include <algorithm>

#include "numeric/units.h"

namespace pipescope {

namespace {

double share(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string points(double share) { return fmt::format("{:.1f}", share * 100.0); }

/// What would lower a schedule's own bubble.
std::string_view advice(const ScheduleDetection& d) {
  if (!d.family) return "more micro-batches would lower it";
  switch (*d.family) {
    case ScheduleFamily::fthenb:
    case ScheduleFamily::one_f_one_b:
    case ScheduleFamily::eager_one_f_one_b:
      return "more micro-batches or an interleaved schedule would lower it";
    case ScheduleFamily::interleaved:
      return "more micro-batches or more chunks per stage would lower it";
    case ScheduleFamily::zero_bubble:
    case ScheduleFamily::zero_bubble_v:
    case ScheduleFamily::dualpipe_v:
      return "more micro-batches would lower it";
  }
  return "more micro-batches would lower it";
}

/// ", which computes 1.21x the mean" / the balanced clause.
std::string slowest_clause(const BottleneckReport& b) {
  return fmt::format("stage {}, which computes {:.2f}x the mean of the stages", b.slowest_stage,
                     b.imbalance);
}

/// "; 4.1 points inside communication jobs, most of it receives waiting for
/// stage 3", or "" without comm time.
std::string comm_clause(const Metrics& metrics, const BubbleSplit& split, std::int64_t total) {
  if (metrics.comm_ns <= 0) return "";
  std::string out = fmt::format("; {} points inside communication jobs that no compute overlaps",
                                points(share(metrics.comm_ns, total)));
  std::int64_t best = 0, attributed = 0;
  std::size_t best_stage = 0;
  bool best_receive = true;
  for (std::size_t s = 0; s < split.receive_wait_ns.size(); ++s) {
    attributed += split.receive_wait_ns[s] + split.send_wait_ns[s];
    if (split.receive_wait_ns[s] > best) {
      best = split.receive_wait_ns[s], best_stage = s, best_receive = true;
    }
    if (split.send_wait_ns[s] > best) {
      best = split.send_wait_ns[s], best_stage = s, best_receive = false;
    }
  }
  if (best > 0) {
    out += fmt::format(", {} {} waiting for stage {} ({} points)",
                       2 * best >= attributed ? "most of it" : "the largest part",
                       best_receive ? "receives" : "sends", best_stage, points(share(best, total)));
  }
  return out;
}

}  // namespace

bool has_bottleneck(const BottleneckReport& b) {
  return b.slowest_stage >= 0 && b.imbalance > 1.0 + kImbalanceNoise;
}

bool excess_beyond_noise(const BubbleSplit& split, const Metrics& metrics, std::size_t devices) {
  const auto total = static_cast<std::int64_t>(devices) * metrics.total_window_ns;
  return split.known && share(split.excess_ns, total) > kExcessNoise;
}

std::string explain_bubbles(const Run& run, const Metrics& metrics, const ScheduleReport& schedule,
                            const BubbleSplit& split, const BottleneckReport& bottleneck) {
  const std::size_t devices = run.devices.size();
  const auto total = static_cast<std::int64_t>(devices) * metrics.total_window_ns;
  if (total <= 0) return "no complete step with a window: nothing to explain";
  const ScheduleDetection& d = schedule.detection;
  std::string out = percent(metrics.bubble_ratio) + " bubble";
  const std::string shape = fmt::format("P={}, M={}{}", d.stages, d.micro_batches,
                                        d.chunks > 1 ? fmt::format(", V={}", d.chunks) : "");
  if (split.known) {
    out +=
        fmt::format(": {} points inherent to {} with {} ({}), ",
                    points(share(split.inherent_ns, total)), detection_name(d), shape, advice(d));
    const std::string excess = points(share(split.excess_ns, total));
    if (!excess_beyond_noise(split, metrics, devices)) {
      out += fmt::format("{} points excess, within noise", excess);
    } else if (has_bottleneck(bottleneck)) {
      out +=
          fmt::format("{} points excess, mostly waiting on {}", excess, slowest_clause(bottleneck));
    } else {
      out += fmt::format(
          "{} points excess with the stages balanced (slowest {:.2f}x the mean): latency, "
          "communication or uneven job times, not a slow stage",
          excess, bottleneck.imbalance);
    }
  } else {
    out += fmt::format(
        "; the schedule is {}, so the part of it that the schedule makes unavoidable cannot be "
        "told",
        d.family
            ? fmt::format("{}-like but matches no known job list for {}", detection_name(d), shape)
            : std::string("unknown"));
    if (has_bottleneck(bottleneck)) {
      out += fmt::format("; the other stages wait on {}", slowest_clause(bottleneck));
    } else if (bottleneck.slowest_stage >= 0) {
      out +=
          fmt::format("; the stages are balanced (slowest {:.2f}x the mean)", bottleneck.imbalance);
    }
  }
  out += comm_clause(metrics, split, total);
  return out;
}

}  // namespace pipescope

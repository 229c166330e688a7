#include "simulate/log_events.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "simulate/log_format.h"

namespace pipescope::sim {

namespace {

constexpr std::int64_t kUs = 1'000;
constexpr std::int64_t kEventMs = 1'000'000;

/// Floors to a multiple of `unit` (times are after 1970: non-negative).
std::int64_t floor_to(std::int64_t ns, std::int64_t unit) { return ns - ns % unit; }

std::string glog_line(char severity, std::int64_t local_ns, int thread_id, std::string_view source,
                      std::string_view text) {
  fmt::memory_buffer out;
  append_glog_prefix(out, severity, local_ns, thread_id, source);
  append_text(out, text);
  return fmt::to_string(out);
}

/// PaddleNLP's logger: `[2023-04-11 17:30:32,658] [    INFO] - text`.
std::string python_line(std::int64_t local_ns, std::string_view text) {
  fmt::memory_buffer out;
  out.push_back('[');
  append_python_time(out, local_ns);
  append_text(out, "] [    INFO] - ");
  append_text(out, text);
  return fmt::to_string(out);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

EventPlan::EventPlan(const SimConfig& config, std::int64_t utc_offset_ns)
    : config_(config), offset_(utc_offset_ns) {}

std::vector<EventLine> EventPlan::lines_after_jobs(const SimDeviceInfo& device, int step,
                                                   const std::vector<SimJob>& jobs,
                                                   std::int64_t next_start) {
  std::vector<EventLine> lines;
  if (jobs.empty()) return lines;
  const int devices = config_.shape.stages * config_.devices_per_stage;
  const int thread_id = 30000 + device.index;
  auto stamped = [&](std::size_t after, std::int64_t t, std::string text, std::string id,
                     std::int64_t unit) {
    lines.push_back({after, std::move(text)});
    planned_.push_back({device.index, std::move(id), floor_to(t, unit), false});
  };
  // (a) A data loader's cost line, one device a step, every third step.
  if (step % 3 == 1 && device.index == step % devices && jobs.size() > 2) {
    const std::int64_t t = jobs[1].end_ns + 20 * kUs;
    stamped(1, t,
            python_line(t + offset_,
                        fmt::format("global step {}, epoch: 0, batch: {}, loss: 2.104230, "
                                    "avg_reader_cost: 0.02340 sec, avg_batch_cost: 1.20000 sec, "
                                    "speed: 0.83 step/s",
                                    step, step)),
            "paddle_reader_cost", kEventMs);
  }
  // (b) A NCCL warning, printed without a timestamp: it takes the time of
  // the job line it follows (floored to the microsecond, as printed).
  if (step % 4 == 2 && device.index == devices - 1 && jobs.size() > 3) {
    lines.push_back({2, fmt::format("gpu-node-{}:{}:{} [{}] misc/ibvwrap.cc:153 NCCL WARN Call to "
                                    "ibv_reg_mr failed with error Cannot allocate memory",
                                    device.machine, thread_id, thread_id + 93, device.rank)});
    planned_.push_back({device.index, "nccl_warn", floor_to(jobs[2].end_ns, kUs), true});
  }
  // (c) A communication watchdog's warning in the last step, on device 0.
  if (step == config_.steps - 1 && device.index == 0) {
    const std::int64_t t = jobs[0].end_ns + 5 * kUs;
    stamped(0, t,
            glog_line('W', t + offset_, thread_id, "comm_task_manager.cc:158",
                      fmt::format("Find timeout start but not finish task:group_key:group_0,"
                                  "group_ranks:[0, 1],global_rank:0,local_rank:0,comm_count:{},"
                                  "op:AllReduce,started:1,completed:0,numel:4194304,nranks:2",
                                  step)),
            "paddle_comm_task_timeout", kUs);
  }
  // Between this step and the next, after the step's last job (its optimizer).
  const std::size_t last = jobs.size() - 1;
  // (d) An evaluation before every fifth step, on every device.
  if ((step + 1) % 5 == 0) {
    const std::int64_t t = jobs[last].end_ns + 100 * kUs;
    stamped(last, t, python_line(t + offset_, "***** Running Evaluation *****"),
            "trainer_running_evaluation", kEventMs);
  }
  // (e) A checkpoint saved while the device stalls before its next step.
  for (const SimStall& stall : config_.stalls) {
    if (stall.step != step + 1 || stall.stage != device.stage) continue;
    const std::int64_t t = next_start + stall.ns / 2;
    stamped(
        last, t,
        python_line(t + offset_,
                    fmt::format("Saving model checkpoint to checkpoint/checkpoint-{}", step + 1)),
        "paddlenlp_saving_checkpoint", kEventMs);
  }
  return lines;
}

std::string EventPlan::expected_json(const ExpectedMetrics& metrics) const {
  const auto& steps = metrics.steps;
  std::vector<std::vector<const PlannedEvent*>> in(steps.size()), before(steps.size());
  std::vector<const PlannedEvent*> after_last;
  std::vector<const PlannedEvent*> ordered;
  for (const PlannedEvent& e : planned_) ordered.push_back(&e);
  // Time order, then device; one device's events at one time in the order
  // they were planned (line order).
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const PlannedEvent* a, const PlannedEvent* b) {
                     return std::tie(a->time_ns, a->device) < std::tie(b->time_ns, b->device);
                   });
  for (const PlannedEvent* e : ordered) {
    bool placed = false;
    for (std::size_t k = 0; k < steps.size() && !placed; ++k) {
      if (e->time_ns < steps[k].start_ns) {
        before[k].push_back(e);
        placed = true;
      } else if (e->time_ns < steps[k].end_ns) {
        in[k].push_back(e);
        placed = true;
      }
    }
    if (!placed) after_last.push_back(e);
  }
  auto list = [](const std::vector<const PlannedEvent*>& events) {
    std::string out = "[";
    for (std::size_t i = 0; i < events.size(); ++i) {
      const PlannedEvent& e = *events[i];
      out +=
          fmt::format("{}{{\"device\": {}, \"id\": \"{}\", \"time_ns\": {}, \"approximate\": {}}}",
                      i == 0 ? "" : ", ", e.device, e.id, e.time_ns, e.approximate);
    }
    return out + "]";
  };
  std::string out = fmt::format("{{\"total\": {}, \"steps\": [", planned_.size());
  bool first = true;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (in[k].empty() && before[k].empty()) continue;
    out += fmt::format("{}\n    {{\"step\": {}, \"before\": {}, \"events\": {}}}", first ? "" : ",",
                       steps[k].step, list(before[k]), list(in[k]));
    first = false;
  }
  out += fmt::format("\n  ], \"after_last\": {}, \"outliers\": [", list(after_last));
  // Outliers: beyond 3 median absolute deviations above the median window
  // (at least 1% of it) or bubble ratio (at least 0.005), over the steps.
  if (steps.size() >= 3) {
    std::vector<double> windows, bubbles;
    for (const ExpectedStep& s : steps) {
      windows.push_back(static_cast<double>(s.end_ns - s.start_ns));
      bubbles.push_back(s.bubble_ratio);
    }
    const double mw = median_of(windows), mb = median_of(bubbles);
    std::vector<double> dw, db;
    for (double w : windows) dw.push_back(std::abs(w - mw));
    for (double b : bubbles) db.push_back(std::abs(b - mb));
    const double sw = std::max(3 * median_of(dw), 0.01 * mw);
    const double sb = std::max(3 * median_of(db), 0.005);
    bool any = false;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const bool slow = windows[k] - mw > sw;
      const bool bubble = bubbles[k] - mb > sb;
      if (!slow && !bubble) continue;
      out += fmt::format("{}{{\"step\": {}, \"slow\": {}, \"bubble\": {}, \"events\": {}}}",
                         any ? ", " : "", steps[k].step, slow, bubble,
                         in[k].size() + before[k].size());
      any = true;
    }
  }
  return out + "]}";
}

}  // namespace pipescope::sim

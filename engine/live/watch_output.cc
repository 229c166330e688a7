#include "live/watch_output.h"

#include <fmt/format.h>

#include "export/json_writer.h"
#include "numeric/units.h"

namespace pipescope {

namespace {

std::string points(const std::optional<double>& value) {
  return value ? fmt::format("{:.2f} pts", *value) : std::string("- pts");
}

/// A Prometheus label value: backslash, quote and newline escaped.
std::string label_value(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string format_step_line(const LiveStep& step) {
  std::string line = fmt::format(
      "step {}  window {} ms  bubble {:.2f}%  inherent {}  excess {}  waited on {}", step.label,
      format_ms(step.window_ns()), 100.0 * step.bubble_ratio, points(step.inherent_points),
      points(step.excess_points),
      step.most_waited_stage ? fmt::format("stage {}", *step.most_waited_stage) : std::string("-"));
  if (step.beyond_spread) line += "  beyond recent spread";
  if (step.provisional) line += "  provisional";
  if (!step.unwritten.empty()) {
    // Who the final figures wait for.
    std::string who;
    for (std::size_t i = 0; i < step.unwritten.size(); ++i) {
      who += fmt::format("{}{}", i == 0 ? "" : ", ", step.unwritten[i]);
    }
    line +=
        fmt::format(" (device{} {} {} not logged it yet)", step.unwritten.size() == 1 ? "" : "s",
                    who, step.unwritten.size() == 1 ? "has" : "have");
  }
  if (!step.events.empty()) {
    // The first few events, as the text report names them.
    constexpr std::size_t kShown = 3;
    line += "  events:";
    for (std::size_t i = 0; i < step.events.size() && i < kShown; ++i) {
      const LiveEvent& e = step.events[i];
      // Rounded half up to the ms, as the text report writes offsets.
      const std::int64_t ms =
          ((e.offset_ns < 0 ? -e.offset_ns : e.offset_ns) + 500'000) / 1'000'000;
      line += fmt::format("{} device {} {} at {}{}.{:03} s{}", i == 0 ? "" : ",", e.device, e.id,
                          e.offset_ns < 0 ? '-' : '+', ms / 1000, ms % 1000,
                          e.approximate ? " (about)" : "");
    }
    if (step.events.size() > kShown)
      line += fmt::format(" and {} more", step.events.size() - kShown);
  }
  return line;
}

std::string step_json(const std::string& run, const LiveStep& step) {
  fmt::memory_buffer buffer;
  JsonWriter json(buffer, JsonStyle::compact());
  json.begin_object(true);
  json.field("run", run);
  json.field("segment", step.segment);
  json.field("step", step.step);
  json.field("label", step.label);
  json.field("start_ns", step.start_ns);
  json.field("end_ns", step.end_ns);
  json.field("window_ns", step.window_ns());
  json.field("bubble_ratio", step.bubble_ratio);
  json.field("devices", static_cast<std::uint64_t>(step.devices));
  json.key("inherent_points");
  if (step.inherent_points)
    json.value(*step.inherent_points);
  else
    json.null();
  json.key("excess_points");
  if (step.excess_points)
    json.value(*step.excess_points);
  else
    json.null();
  json.key("most_waited_stage");
  if (step.most_waited_stage) {
    json.value(static_cast<std::uint64_t>(*step.most_waited_stage));
  } else {
    json.null();
  }
  json.field("beyond_spread", step.beyond_spread);
  json.field("provisional", step.provisional);
  json.key("unwritten_devices");
  json.begin_array(true);
  for (const int device : step.unwritten) json.value(device);
  json.end_array();
  json.key("events");
  json.begin_array(true);
  for (const LiveEvent& e : step.events) {
    json.begin_object(true);
    json.field("device", e.device);
    json.field("id", e.id);
    json.field("category", e.category);
    json.field("severity", e.severity);
    json.field("offset_ns", e.offset_ns);
    json.field("approximate", e.approximate);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  return fmt::to_string(buffer);
}

std::string prometheus_text(const std::string& run, const LiveStep& last,
                            const WatchCounters& counters) {
  const std::string label = fmt::format("{{run=\"{}\"}}", label_value(run));
  std::string out;
  auto series = [&](const char* name, const char* type, const char* help,
                    const std::string& value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{} {}\n", name, help, name, type, name, label,
                       value);
  };
  auto number = [](double v) { return fmt::format("{}", v); };
  series("pipescope_step", "gauge", "Number of the last completed step.",
         fmt::format("{}", last.step));
  series("pipescope_step_segment", "gauge", "Launch segment of the last completed step.",
         fmt::format("{}", last.segment));
  series("pipescope_step_window_seconds", "gauge", "Window of the last completed step.",
         number(static_cast<double>(last.window_ns()) / 1e9));
  series("pipescope_step_bubble_ratio", "gauge", "Bubble ratio of the last completed step.",
         number(last.bubble_ratio));
  if (last.inherent_points) {
    series("pipescope_step_inherent_points", "gauge",
           "Inherent idle of the last completed step, in points of its bubble ratio.",
           number(*last.inherent_points));
    series("pipescope_step_excess_points", "gauge",
           "Excess idle of the last completed step, in points of its bubble ratio.",
           number(*last.excess_points));
  }
  if (last.most_waited_stage) {
    series("pipescope_step_most_waited_stage", "gauge",
           "Stage most waited on in the last completed step.",
           fmt::format("{}", *last.most_waited_stage));
  }
  series("pipescope_step_beyond_spread", "gauge",
         "1 when the last step's bubble ratio is beyond the run's recent spread.",
         last.beyond_spread ? "1" : "0");
  series("pipescope_step_provisional", "gauge",
         "1 when the last step's figures may change in the final pass.",
         last.provisional ? "1" : "0");
  series("pipescope_steps_total", "counter", "Completed steps reported.",
         fmt::format("{}", counters.steps));
  series("pipescope_jobs_total", "counter", "Job lines read.", fmt::format("{}", counters.jobs));
  return out;
}

}  // namespace pipescope

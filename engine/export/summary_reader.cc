#include "export/summary_reader.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/errors.h"

namespace pipescope {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Required fields: every schema problem becomes one readable error.
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(std::string_view what) const {
    throw InputError(fmt::format("{}: {}", source_, what));
  }

  element field(object o, std::string_view name, std::string_view where) const {
    element e;
    if (o[name].get(e) != simdjson::SUCCESS) fail(fmt::format("{} has no \"{}\"", where, name));
    return e;
  }
  std::int64_t int64(object o, std::string_view name, std::string_view where) const {
    const element e = field(o, name, where);
    std::int64_t v = 0;
    if (e.get(v) == simdjson::SUCCESS) return v;
    std::uint64_t u = 0;
    if (e.get(u) == simdjson::SUCCESS && u <= INT64_MAX) return static_cast<std::int64_t>(u);
    fail(fmt::format("\"{}\" of {} is not an integer", name, where));
  }
  double number(object o, std::string_view name, std::string_view where) const {
    const element e = field(o, name, where);
    double v = 0;
    if (e.get(v) == simdjson::SUCCESS) return v;
    std::int64_t i = 0;
    if (e.get(i) == simdjson::SUCCESS) return static_cast<double>(i);
    fail(fmt::format("\"{}\" of {} is not a number", name, where));
  }
  std::string string(object o, std::string_view name, std::string_view where) const {
    std::string_view v;
    if (field(o, name, where).get(v) != simdjson::SUCCESS) {
      fail(fmt::format("\"{}\" of {} is not a string", name, where));
    }
    return std::string(v);
  }
  array list(object o, std::string_view name, std::string_view where) const {
    array a;
    if (field(o, name, where).get(a) != simdjson::SUCCESS) {
      fail(fmt::format("\"{}\" of {} is not an array", name, where));
    }
    return a;
  }
  object obj(element e, std::string_view where) const {
    object o;
    if (e.get(o) != simdjson::SUCCESS) fail(fmt::format("{} is not an object", where));
    return o;
  }

 private:
  const std::string& source_;
};

// Optional fields: absent or of another type, they are left as they are.

void opt(object o, std::string_view name, std::int64_t& out) {
  const auto e = o[name];
  std::int64_t v = 0;
  std::uint64_t u = 0;
  if (e.get(v) == simdjson::SUCCESS) {
    out = v;
  } else if (e.get(u) == simdjson::SUCCESS && u <= INT64_MAX) {
    out = static_cast<std::int64_t>(u);
  }
}
void opt(object o, std::string_view name, int& out) {
  std::int64_t v = out;
  opt(o, name, v);
  out = static_cast<int>(v);
}
void opt(object o, std::string_view name, std::uint64_t& out) {
  std::uint64_t v = 0;
  if (o[name].get(v) == simdjson::SUCCESS) out = v;
}
void opt(object o, std::string_view name, double& out) {
  const auto e = o[name];
  double v = 0;
  std::int64_t i = 0;
  if (e.get(v) == simdjson::SUCCESS) {
    out = v;
  } else if (e.get(i) == simdjson::SUCCESS) {
    out = static_cast<double>(i);
  }
}
void opt(object o, std::string_view name, bool& out) {
  bool v = false;
  if (o[name].get(v) == simdjson::SUCCESS) out = v;
}
void opt(object o, std::string_view name, std::string& out) {
  std::string_view v;
  if (o[name].get(v) == simdjson::SUCCESS) out = std::string(v);
}
// A nullable number: null, absent or of another type read as unset.
template <typename T>
void opt(object o, std::string_view name, std::optional<T>& out) {
  T v{};
  bool present = false;
  const auto e = o[name];
  if constexpr (std::is_same_v<T, double>) {
    std::int64_t i = 0;
    if (e.get(v) == simdjson::SUCCESS) {
      present = true;
    } else if (e.get(i) == simdjson::SUCCESS) {
      v = static_cast<double>(i);
      present = true;
    }
  } else {
    present = e.get(v) == simdjson::SUCCESS;
  }
  if (present) {
    out = v;
  } else {
    out.reset();
  }
}

std::optional<object> opt_object(object o, std::string_view name) {
  object v;
  if (o[name].get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}
std::optional<array> opt_array(object o, std::string_view name) {
  array v;
  if (o[name].get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}

// Each object of the array `name` of `o` (none when absent), through `read`.
template <typename T, typename F>
std::vector<T> opt_list(const Reader& r, object o, std::string_view name, std::string_view where,
                        F read) {
  std::vector<T> out;
  const std::optional<array> a = opt_array(o, name);
  if (!a) return out;
  for (element e : *a) out.push_back(read(r.obj(e, where)));
  return out;
}

// --- the contract's sections --------------------------------------------------

DeviceFigures read_device(const Reader& r, object d) {
  constexpr std::string_view where = "a devices[] entry";
  DeviceFigures f;
  f.device = static_cast<int>(r.int64(d, "device", where));
  f.machine = static_cast<int>(r.int64(d, "machine", where));
  opt(d, "machine_name", f.machine_name);
  f.rank = static_cast<int>(r.int64(d, "rank", where));
  opt(d, "path", f.path);
  f.jobs = r.int64(d, "jobs", where);
  opt(d, "steps", f.steps);
  f.busy_ns = r.int64(d, "busy_ns", where);
  f.idle_ns = r.int64(d, "idle_ns", where);
  opt(d, "comm_ns", f.comm_ns);
  f.utilization = r.number(d, "utilization", where);
  return f;
}

StepFigures read_step(const Reader& r, object s) {
  constexpr std::string_view where = "a steps[] entry";
  StepFigures f;
  f.step = r.int64(s, "step", where);
  opt(s, "segment", f.segment);
  opt(s, "complete", f.complete);
  f.start_ns = r.int64(s, "start_ns", where);
  f.end_ns = r.int64(s, "end_ns", where);
  f.duration_ns = r.int64(s, "duration_ns", where);
  f.bubble_ratio = r.number(s, "bubble_ratio", where);
  for (element e : r.list(s, "devices", where)) {
    constexpr std::string_view inner = "a steps[].devices[] entry";
    const object d = r.obj(e, inner);
    StepDeviceFigures device{static_cast<int>(r.int64(d, "device", inner)),
                             r.int64(d, "busy_ns", inner),
                             r.int64(d, "idle_ns", inner),
                             {}};
    opt(d, "comm_ns", device.comm_ns);
    f.devices.push_back(device);
  }
  return f;
}

SegmentFigures read_segment(const Reader& r, object s) {
  constexpr std::string_view where = "a segments[] entry";
  SegmentFigures f;
  f.index = static_cast<int>(r.int64(s, "index", where));
  f.start_ns = r.int64(s, "start_ns", where);
  f.end_ns = r.int64(s, "end_ns", where);
  f.first_step = r.int64(s, "first_step", where);
  opt(s, "numbered_by_line", f.numbered_by_line);
  f.steps = r.int64(s, "steps", where);
  opt(s, "complete_steps", f.complete_steps);
  opt(s, "found_by", f.found_by);
  if (const auto files = opt_array(s, "files")) {
    for (element e : *files) {
      std::string_view file;
      if (e.get(file) == simdjson::SUCCESS) f.files.emplace_back(file);
    }
  }
  return f;
}

JobTypeFigures read_job_type(const Reader& r, object t) {
  constexpr std::string_view where = "a job_types[] entry";
  JobTypeFigures f;
  f.type = r.string(t, "type", where);
  f.kind = r.string(t, "kind", where);
  f.jobs = r.int64(t, "jobs", where);
  opt(t, "total_ns", f.total_ns);
  return f;
}

InputFigures read_input(object i) {
  InputFigures f;
  opt(i, "path", f.path);
  opt(i, "bytes", f.bytes);
  opt(i, "lines", f.lines);
  opt(i, "matched", f.matched);
  opt(i, "malformed", f.malformed);
  opt(i, "oversized", f.oversized);
  opt(i, "partial_last_line_bytes", f.partial_last_line_bytes);
  opt(i, "error", f.error);
  return f;
}

DiagnosticFigures read_diagnostic(object d) {
  DiagnosticFigures f;
  opt(d, "path", f.path);
  opt(d, "line", f.line);
  opt(d, "message", f.message);
  return f;
}

LeftOutFigures read_left_out(object d) {
  LeftOutFigures f;
  opt(d, "device", f.device);
  opt(d, "machine", f.machine);
  opt(d, "machine_name", f.machine_name);
  opt(d, "rank", f.rank);
  opt(d, "path", f.path);
  opt(d, "reason", f.reason);
  return f;
}

// --- the pipeline sections -----------------------------------------------------

ScheduleFigures read_schedule(object s) {
  ScheduleFigures f;
  f.name = "unknown";
  opt(s, "name", f.name);
  opt(s, "exact", f.exact);
  opt(s, "stages", f.stages);
  opt(s, "micro_batches", f.micro_batches);
  opt(s, "chunks", f.chunks);
  opt(s, "steps_examined", f.steps_examined);
  opt(s, "steps_agreeing", f.steps_agreeing);
  opt(s, "mean_forward_ns", f.mean_forward_ns);
  opt(s, "mean_backward_ns", f.mean_backward_ns);
  opt(s, "mean_weight_ns", f.mean_weight_ns);
  opt(s, "measured_bubble_ratio", f.measured_bubble_ratio);
  opt(s, "ideal_bubble_ratio", f.ideal_bubble_ratio);
  opt(s, "excess_bubble_ratio", f.excess_bubble_ratio);
  // Summaries written before the schedule table (issue 14) have no family:
  // derive it from the name, so that check still compares them by family.
  if (std::string_view family; s["family"].get(family) == simdjson::SUCCESS) {
    f.family = std::string(family);
  } else {
    const auto derived = family_of_schedule_name(f.name);
    f.family = derived ? std::string(schedule_family_name(*derived)) : "";
  }
  opt(s, "frameworks", f.frameworks);
  return f;
}

StagesFigures read_stages(const Reader& r, object s) {
  StagesFigures f;
  opt(s, "source", f.source);
  f.list = opt_list<StageFigures>(r, s, "list", "a stages.list[] entry", [&](object o) {
    StageFigures stage;
    opt(o, "stage", stage.stage);
    if (const auto devices = opt_array(o, "devices")) {
      for (element e : *devices) {
        std::int64_t d = 0;
        if (e.get(d) == simdjson::SUCCESS) stage.devices.push_back(static_cast<int>(d));
      }
    }
    // "compute_per_step_ns" and "jobs" come together, for a stage the
    // bottleneck analysis covered.
    const std::optional<object> jobs = opt_object(o, "jobs");
    if (jobs) {
      StageLoadFigures load;
      opt(o, "compute_per_step_ns", load.compute_per_step_ns);
      for (const auto field : *jobs) {
        const object d = r.obj(field.value, "a stages.list[].jobs entry");
        RoleDurationFigures role;
        role.role = std::string(field.key);
        opt(d, "count", role.count);
        opt(d, "total_ns", role.total_ns);
        opt(d, "mean_ns", role.mean_ns);
        opt(d, "median_ns", role.median_ns);
        opt(d, "p95_ns", role.p95_ns);
        opt(d, "max_ns", role.max_ns);
        load.jobs.push_back(std::move(role));
      }
      stage.load = std::move(load);
    }
    return stage;
  });
  return f;
}

BubbleSplitFigures read_split(object o) {
  BubbleSplitFigures f;
  opt(o, "fill_ns", f.fill_ns);
  opt(o, "interior_ns", f.interior_ns);
  opt(o, "drain_ns", f.drain_ns);
  opt(o, "inherent_ns", f.inherent_ns);
  opt(o, "excess_ns", f.excess_ns);
  return f;
}

std::vector<DeviceBubbleFigures> read_device_bubbles(const Reader& r, object o,
                                                     std::string_view where) {
  return opt_list<DeviceBubbleFigures>(r, o, "devices", where, [](object d) {
    DeviceBubbleFigures f;
    opt(d, "device", f.device);
    f.split = read_split(d);
    return f;
  });
}

std::optional<BubbleJobFigures> read_bubble_job(object o, std::string_view name) {
  const std::optional<object> j = opt_object(o, name);
  if (!j) return std::nullopt;
  BubbleJobFigures f;
  opt(*j, "type", f.type);
  opt(*j, "micro_batch", f.micro_batch);
  opt(*j, "start_ns", f.start_ns);
  opt(*j, "end_ns", f.end_ns);
  return f;
}

BubblesFigures read_bubbles(const Reader& r, object b) {
  BubblesFigures f;
  f.total = read_split(b);
  opt(b, "idle_ns", f.idle_ns);
  f.devices = read_device_bubbles(r, b, "a bubbles.devices[] entry");
  f.steps = opt_list<StepBubbleFigures>(r, b, "steps", "a bubbles.steps[] entry", [&](object s) {
    StepBubbleFigures step;
    opt(s, "step", step.step);
    step.devices = read_device_bubbles(r, s, "a bubbles.steps[].devices[] entry");
    return step;
  });
  f.longest =
      opt_list<LongBubbleFigures>(r, b, "longest", "a bubbles.longest[] entry", [](object o) {
        LongBubbleFigures bubble;
        opt(o, "device", bubble.device);
        opt(o, "step", bubble.step);
        opt(o, "start_ns", bubble.start_ns);
        opt(o, "length_ns", bubble.length_ns);
        opt(o, "inherent_ns", bubble.inherent_ns);
        opt(o, "excess_ns", bubble.excess_ns);
        opt(o, "kind", bubble.kind);
        bubble.before = read_bubble_job(o, "before");
        bubble.after = read_bubble_job(o, "after");
        return bubble;
      });
  return f;
}

BottleneckFigures read_bottleneck(object b) {
  BottleneckFigures f;
  opt(b, "slowest_stage", f.slowest_stage);
  opt(b, "slowest_compute_per_step_ns", f.slowest_compute_per_step_ns);
  opt(b, "mean_compute_per_step_ns", f.mean_compute_per_step_ns);
  opt(b, "imbalance", f.imbalance);
  return f;
}

CriticalPathFigures read_critical_path(const Reader& r, object c) {
  CriticalPathFigures f;
  f.steps =
      opt_list<PathStepFigures>(r, c, "steps", "a critical_path.steps[] entry", [&](object s) {
        PathStepFigures step;
        opt(s, "step", step.step);
        opt(s, "duration_ns", step.duration_ns);
        opt(s, "jobs", step.jobs);
        opt(s, "lead_in_ns", step.lead_in_ns);
        opt(s, "wait_ns", step.wait_ns);
        step.stages = opt_list<PathStageFigures>(
            r, s, "stages", "a critical_path.steps[].stages[] entry", [](object o) {
              PathStageFigures stage;
              opt(o, "stage", stage.stage);
              opt(o, "ns", stage.ns);
              opt(o, "share", stage.share);
              return stage;
            });
        return step;
      });
  if (const std::optional<object> longest = opt_object(c, "longest_step")) {
    LongestPathFigures chain;
    opt(*longest, "step", chain.step);
    chain.jobs = opt_list<PathJobFigures>(
        r, *longest, "jobs", "a critical_path.longest_step.jobs[] entry", [](object o) {
          PathJobFigures job;
          opt(o, "device", job.device);
          opt(o, "stage", job.stage);
          opt(o, "type", job.type);
          opt(o, "micro_batch", job.micro_batch);
          opt(o, "start_ns", job.start_ns);
          opt(o, "end_ns", job.end_ns);
          opt(o, "wait_ns", job.wait_ns);
          opt(o, "via_dependency", job.via_dependency);
          return job;
        });
    f.longest_step = std::move(chain);
  }
  return f;
}

ClockFigures read_clock(const Reader& r, object c) {
  ClockFigures f;
  opt(c, "method", f.method);
  opt(c, "applied", f.applied);
  opt(c, "dependencies", f.dependencies);
  opt(c, "violations_before", f.violations_before);
  opt(c, "violations_after", f.violations_after);
  f.machines =
      opt_list<MachineClockFigures>(r, c, "machines", "a clock.machines[] entry", [](object o) {
        MachineClockFigures m;
        opt(o, "machine", m.machine);
        opt(o, "name", m.name);
        opt(o, "estimate_ns", m.estimate_ns);
        opt(o, "offset_ns", m.offset_ns);
        return m;
      });
  f.pairs = opt_list<MachinePairFigures>(r, c, "pairs", "a clock.pairs[] entry", [](object o) {
    MachinePairFigures p;
    if (const auto machines = opt_array(o, "machines")) {
      std::int64_t a = 0;
      std::int64_t b = 0;
      if (machines->at(0).get(a) == simdjson::SUCCESS) p.machine_a = static_cast<int>(a);
      if (machines->at(1).get(b) == simdjson::SUCCESS) p.machine_b = static_cast<int>(b);
    }
    opt(o, "dependencies", p.dependencies);
    opt(o, "violations_before", p.violations_before);
    opt(o, "violations_after", p.violations_after);
    opt(o, "lower_ns", p.lower_ns);
    opt(o, "upper_ns", p.upper_ns);
    return p;
  });
  return f;
}

WarningFigures read_warning(object o) {
  WarningFigures f;
  opt(o, "code", f.code);
  opt(o, "message", f.message);
  opt(o, "device", f.device);
  opt(o, "stage", f.stage);
  opt(o, "count", f.count);
  return f;
}

}  // namespace

SummaryFigures parse_summary_figures(std::string_view json, const std::string& source) {
  Reader r(source);
  simdjson::dom::parser parser;
  element root_element;
  const simdjson::padded_string padded(json);
  if (auto error = parser.parse(padded).get(root_element)) {
    r.fail(fmt::format("not valid JSON ({})", simdjson::error_message(error)));
  }
  object root;
  if (root_element.get(root) != simdjson::SUCCESS)
    r.fail("not a pipescope summary (not a JSON object)");
  std::string_view schema;
  if (root["schema"].get(schema) != simdjson::SUCCESS) {
    r.fail("not a pipescope summary (no \"schema\" field)");
  }
  // Same major version: "pipescope.summary/1" or "pipescope.summary/1.N".
  const bool same_major =
      schema == kSummarySchema || (schema.size() > kSummarySchema.size() &&
                                   schema.substr(0, kSummarySchema.size()) == kSummarySchema &&
                                   schema[kSummarySchema.size()] == '.');
  if (!same_major) {
    r.fail(fmt::format("summary schema '{}' is not supported (this pipescope reads {})", schema,
                       kSummarySchema));
  }

  constexpr std::string_view where = "the summary";
  SummaryFigures f;
  f.jobs = r.int64(root, "jobs", where);
  f.first_step = r.int64(root, "first_step", where);
  f.bubble_ratio = r.number(root, "bubble_ratio", where);
  f.total_window_ns = r.int64(root, "total_window_ns", where);
  opt(root, "time_resolution_ns", f.time_resolution_ns);
  opt(root, "comm_ns", f.comm_ns);
  for (element e : r.list(root, "devices", where)) {
    f.devices.push_back(read_device(r, r.obj(e, "a devices[] entry")));
  }
  for (element e : r.list(root, "steps", where)) {
    f.steps.push_back(read_step(r, r.obj(e, "a steps[] entry")));
  }
  opt(root, "incomplete_steps", f.incomplete_steps);
  f.segments = opt_list<SegmentFigures>(r, root, "segments", "a segments[] entry",
                                        [&](object s) { return read_segment(r, s); });
  f.job_types = opt_list<JobTypeFigures>(r, root, "job_types", "a job_types[] entry",
                                         [&](object t) { return read_job_type(r, t); });
  f.inputs = opt_list<InputFigures>(r, root, "inputs", "an inputs[] entry", read_input);
  f.diagnostics =
      opt_list<DiagnosticFigures>(r, root, "diagnostics", "a diagnostics[] entry", read_diagnostic);
  f.left_out = opt_list<LeftOutFigures>(r, root, "left_out", "a left_out[] entry", read_left_out);

  if (const auto s = opt_object(root, "schedule")) f.schedule = read_schedule(*s);
  if (const auto s = opt_object(root, "stages")) f.stages = read_stages(r, *s);
  if (const auto b = opt_object(root, "bubbles")) f.bubbles = read_bubbles(r, *b);
  if (const auto b = opt_object(root, "bottleneck")) f.bottleneck = read_bottleneck(*b);
  if (const auto c = opt_object(root, "critical_path")) f.critical_path = read_critical_path(r, *c);
  if (const auto c = opt_object(root, "clock")) f.clock = read_clock(r, *c);
  if (opt_array(root, "warnings")) {
    f.warnings = opt_list<WarningFigures>(r, root, "warnings", "a warnings[] entry", read_warning);
  }
  return f;
}

SummaryFigures read_summary_figures(const std::string& path) {
  simdjson::padded_string text;
  if (auto error = simdjson::padded_string::load(path).get(text)) {
    throw InputError(
        fmt::format("{}: cannot read summary ({})", path, simdjson::error_message(error)));
  }
  return parse_summary_figures(std::string_view(text), path);
}

}  // namespace pipescope

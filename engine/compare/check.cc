#include "compare/check.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "compare/figure_format.h"
#include "export/figure_registry.h"
#include "ingest/discovery.h"
#include "load/input_rules.h"
#include "numeric/statistics.h"

namespace pipescope {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

FigureComparison compare(std::vector<double> base, std::vector<double> cur) {
  FigureComparison c;
  c.baseline = spread_of(std::move(base));
  c.current = spread_of(std::move(cur));
  c.delta = c.current.median - c.baseline.median;
  c.beyond_noise = std::abs(c.delta) > std::max(c.baseline.iqr(), c.current.iqr());
  return c;
}

// Per-step utilization of each device over the compared steps, by global index.
std::map<int, std::vector<double>> utilization_by_device(const std::vector<StepFigures>& steps) {
  std::map<int, std::vector<double>> out;
  for (const StepFigures& s : steps) {
    if (s.duration_ns <= 0) continue;
    for (const StepDeviceFigures& d : s.devices) {
      out[d.device].push_back(static_cast<double>(d.busy_ns) / static_cast<double>(s.duration_ns));
    }
  }
  return out;
}

/// The complete steps, less the first `skip` complete steps of each launch
/// segment (a relaunch warms up again).
std::vector<StepFigures> compared_steps(const RunFigures& run, std::int64_t skip,
                                        const OptionWords& words) {
  std::vector<StepFigures> out;
  std::map<int, std::int64_t> seen;  // complete steps met, by segment
  std::size_t complete = 0;
  for (const StepFigures& step : run.steps) {
    if (!step.complete) continue;
    ++complete;
    if (seen[step.segment]++ < skip) continue;
    out.push_back(step);
  }
  if (out.empty()) {
    const std::size_t segments = seen.size();
    throw InputError(fmt::format(
        "{}: {} complete step{}, none left after skipping {} warm-up step{}{} (lower "
        "{})",
        run.source, complete, complete == 1 ? "" : "s", skip, skip == 1 ? "" : "s",
        segments > 1 ? " of each launch segment" : "", words.name(CallerOption::skip_steps)));
  }
  return out;
}

std::vector<double> bubble_ratios(const std::vector<StepFigures>& steps) {
  std::vector<double> v;
  for (const StepFigures& s : steps) v.push_back(s.bubble_ratio);
  return v;
}

std::vector<double> durations(const std::vector<StepFigures>& steps) {
  std::vector<double> v;
  for (const StepFigures& s : steps) v.push_back(static_cast<double>(s.duration_ns));
  return v;
}

// Limits are inclusive; the slack absorbs rounding in ratios of integers
// (0.14 - 0.10 is not exactly 0.04 in doubles).
constexpr double kSlack = 1e-9;
bool within(double value, double limit) { return value <= limit + kSlack; }

std::string noise_note(const FigureComparison& c) {
  return c.beyond_noise ? "beyond noise" : "within noise";
}

}  // namespace

void CheckThresholds::fill_from(const CheckThresholds& other) {
  if (!max_bubble_ratio) max_bubble_ratio = other.max_bubble_ratio;
  if (!max_bubble_increase) max_bubble_increase = other.max_bubble_increase;
  if (!max_step_time_increase) max_step_time_increase = other.max_step_time_increase;
  if (!max_utilization_drop) max_utilization_drop = other.max_utilization_drop;
  if (!skip_steps) skip_steps = other.skip_steps;
  // Entries of the command line first; the file's for the ids it does not name.
  const auto fill = [](auto& mine, const auto& theirs) {
    for (const auto& entry : theirs) {
      const bool given = std::any_of(mine.begin(), mine.end(),
                                     [&](const auto& e) { return e.first == entry.first; });
      if (!given) mine.push_back(entry);
    }
  };
  fill(max_events, other.max_events);
  fill(max_figures, other.max_figures);
}

std::pair<std::string, std::int64_t> parse_max_events(std::string_view text,
                                                      std::string_view what) {
  const std::size_t eq = text.rfind('=');
  const std::string_view id = eq == std::string_view::npos ? text : text.substr(0, eq);
  const std::string_view number = eq == std::string_view::npos ? "" : text.substr(eq + 1);
  std::int64_t limit = -1;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), limit);
  if (id.empty() || number.empty() || error != std::errc() ||
      end != number.data() + number.size() || limit < 0) {
    throw InputError(fmt::format(
        "{}: '{}' is not ID=N (an event id or category of the library, N an integer >= 0, e.g. "
        "nccl=0 or torch_cuda_oom=0)",
        what, text));
  }
  return {std::string(id), limit};
}

std::pair<std::string, double> parse_max_figure(std::string_view text, std::string_view what) {
  const std::size_t eq = text.rfind('=');
  const std::string_view key = eq == std::string_view::npos ? text : text.substr(0, eq);
  const std::string_view number = eq == std::string_view::npos ? "" : text.substr(eq + 1);
  double limit = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), limit);
  if (key.empty() || number.empty() || error != std::errc() ||
      end != number.data() + number.size() || !std::isfinite(limit)) {
    throw InputError(fmt::format(
        "{}: '{}' is not KEY=LIMIT (a registered figure's key and a number, e.g. max_jobs=12)",
        what, text));
  }
  return {std::string(key), limit};
}

std::string_view threshold_scale_name(ThresholdScale scale) {
  switch (scale) {
    case ThresholdScale::ratio:
      return "ratio";
    case ThresholdScale::points:
      return "points";
    case ThresholdScale::relative:
      return "relative";
  }
  return "ratio";
}

double parse_threshold(std::string_view text, ThresholdScale scale, std::string_view what) {
  // The forms accepted, for every error message.
  const std::string forms =
      scale == ThresholdScale::points
          ? "write 2pp, 2% or 0.02 for 2 percentage points"
          : (scale == ThresholdScale::relative
                 ? "write 5% or 0.05 for an increase of 5 percent of the baseline (150% for 1.5x)"
                 : "write 25% or 0.25");
  std::string_view t = trim(text);
  // "+5%": how every report prints a limit on an increase.
  if (t.starts_with('+')) t = trim(t.substr(1));
  enum { bare, percent, pp } unit = bare;
  if (t.ends_with('%')) {
    unit = percent;
    t = trim(t.substr(0, t.size() - 1));
  } else if (t.ends_with("pp")) {
    unit = pp;
    t = trim(t.substr(0, t.size() - 2));
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(value)) {
    throw InputError(fmt::format("{}: '{}' is not a threshold ({})", what, trim(text), forms));
  }
  if (value < 0) {
    throw InputError(fmt::format("{}: '{}' is negative ({})", what, trim(text), forms));
  }
  if (unit == pp && scale != ThresholdScale::points) {
    throw InputError(
        fmt::format("{}: '{}': pp is for thresholds in percentage points; this one "
                    "is a {} ({})",
                    what, trim(text), threshold_scale_name(scale), forms));
  }
  if (unit == bare && value >= 1) {
    // 1 may mean 1% as well as 100% (and above 1 the gate could hardly fail).
    throw InputError(
        fmt::format("{}: '{}' is ambiguous: as a fraction it means {}%, but it may "
                    "mean {}%; {}",
                    what, trim(text), value * 100, value, forms));
  }
  const double fraction = unit == bare ? value : value / 100;
  if (scale != ThresholdScale::relative && fraction > 1) {
    throw InputError(fmt::format("{}: '{}' is over 100{} ({})", what, trim(text),
                                 scale == ThresholdScale::points ? " points" : "%", forms));
  }
  return fraction;
}

CheckThresholds read_check_config(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.load(path).get(root)) {
    throw InputError(
        fmt::format("{}: cannot read config ({})", path, simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (root.get(object) != simdjson::SUCCESS) {
    throw InputError(fmt::format("{}: the config must be a JSON object", path));
  }
  CheckThresholds t;
  for (auto [key, value] : object) {
    const std::string where = fmt::format("{}: \"{}\"", path, key);
    if (key == "max_events") {
      simdjson::dom::object limits;
      if (value.get(limits) != simdjson::SUCCESS) {
        throw InputError(where + " must be an object of ID: N, e.g. {\"nccl\": 0}");
      }
      for (auto [id, n] : limits) {
        std::int64_t limit = -1;
        if (n.get(limit) != simdjson::SUCCESS || limit < 0) {
          throw InputError(fmt::format("{}: \"{}\" must be an integer >= 0", where, id));
        }
        t.max_events.emplace_back(std::string(id), limit);
      }
      continue;
    }
    if (key == "max_figures") {
      simdjson::dom::object limits;
      if (value.get(limits) != simdjson::SUCCESS) {
        throw InputError(where + " must be an object of KEY: N, e.g. {\"max_jobs\": 12}");
      }
      for (auto [figure, n] : limits) {
        double limit = 0;
        std::int64_t integer = 0;
        if (n.get(integer) == simdjson::SUCCESS) {
          limit = static_cast<double>(integer);
        } else if (n.get(limit) != simdjson::SUCCESS) {
          throw InputError(fmt::format("{}: \"{}\" must be a number", where, figure));
        }
        t.max_figures.emplace_back(std::string(figure), limit);
      }
      continue;
    }
    if (key == "skip_steps") {
      std::int64_t n = 0;
      if (value.get(n) != simdjson::SUCCESS || n < 0) {
        throw InputError(where + " must be an integer >= 0");
      }
      t.skip_steps = n;
      continue;
    }
    std::optional<double>* slot = nullptr;
    ThresholdScale scale = ThresholdScale::ratio;
    if (key == "max_bubble_ratio") slot = &t.max_bubble_ratio;
    if (key == "max_bubble_increase") {
      slot = &t.max_bubble_increase;
      scale = ThresholdScale::points;
    }
    if (key == "max_step_time_increase") {
      slot = &t.max_step_time_increase;
      scale = ThresholdScale::relative;
    }
    if (key == "max_utilization_drop") {
      slot = &t.max_utilization_drop;
      scale = ThresholdScale::points;
    }
    if (slot == nullptr) {
      throw InputError(fmt::format(
          "{} is not a known key (max_bubble_ratio, max_bubble_increase, max_step_time_increase, "
          "max_utilization_drop, max_events, max_figures, skip_steps)",
          where));
    }
    double number = 0;
    std::int64_t integer = 0;
    std::string_view text;
    if (value.get(number) == simdjson::SUCCESS) {
      *slot = parse_threshold(fmt::format("{}", number), scale, where);
    } else if (value.get(integer) == simdjson::SUCCESS) {
      *slot = parse_threshold(fmt::format("{}", integer), scale, where);
    } else if (value.get(text) == simdjson::SUCCESS) {
      *slot = parse_threshold(text, scale, where);
    } else {
      throw InputError(where + " must be a number or a string like \"5%\"");
    }
  }
  return t;
}

Spread spread_of(std::vector<double> values) {
  Spread s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.p25 = interpolated_quantile(values, 0.25);
  s.p75 = interpolated_quantile(values, 0.75);
  s.min = values.front();
  s.max = values.back();
  s.median = median(values);  // last: it reorders the values
  return s;
}

bool CheckReport::regression() const {
  return std::any_of(thresholds.begin(), thresholds.end(),
                     [](const ThresholdResult& t) { return !t.passed; });
}

std::int64_t default_skip_steps(const RunFigures& baseline, const RunFigures& current) {
  const auto complete = [](const RunFigures& run) {
    return std::count_if(run.steps.begin(), run.steps.end(),
                         [](const StepFigures& s) { return s.complete; });
  };
  return complete(baseline) > 2 && complete(current) > 2 ? 1 : 0;
}

namespace {

/// The input warnings of one side, one line each (at most 5, then a count).
void input_warning_problems(const RunFigures& run, std::string_view side,
                            std::vector<std::string>& out) {
  if (!run.warnings) return;
  std::size_t shown = 0;
  std::size_t total = 0;
  for (const WarningFigures& w : *run.warnings) {
    if (!is_input_warning(w.code)) continue;
    ++total;
    if (shown < 5) {
      out.push_back(
          fmt::format("{} {}: input warning {}: {}", side, run.source, w.code, w.message));
      ++shown;
    }
  }
  if (total > shown) {
    out.push_back(fmt::format("{} {}: {} more input warnings", side, run.source, total - shown));
  }
}

/// The damaged inputs of one side, one line each (at most 5, then a count):
/// a file that ends inside a line or record (a cut log, a torn .ivl tail)
/// or whose data could not all be decoded (a truncated or corrupt
/// compressed stream, a damaged record). What was read before the damage is
/// in the figures, so the run is not the whole run. An input that could not
/// be read at all is an input warning already.
void damaged_input_problems(const RunFigures& run, std::string_view side,
                            std::vector<std::string>& out) {
  std::size_t shown = 0, total = 0;
  for (const InputFigures& input : run.inputs) {
    const bool unreadable =
        std::any_of(run.left_out.begin(), run.left_out.end(), [&](const LeftOutFigures& d) {
          return d.path == input.path && d.reason == "unreadable_input";
        });
    if (unreadable || (input.error.empty() && input.partial_last_line_bytes == 0)) continue;
    ++total;
    if (shown == 5) continue;
    ++shown;
    out.push_back(fmt::format(
        "{} {}: damaged input {}: {}", side, run.source, input.path,
        !input.error.empty()
            ? input.error
            : fmt::format("it ends inside a line ({} bytes after the last newline, from byte "
                          "{} of its text): the file was cut",
                          input.partial_last_line_bytes,
                          input.bytes - input.partial_last_line_bytes)));
  }
  if (total > shown) {
    out.push_back(fmt::format("{} {}: {} more damaged inputs", side, run.source, total - shown));
  }
}

}  // namespace

std::vector<std::string> comparability_problems(const RunFigures& baseline,
                                                const RunFigures& current) {
  std::vector<std::string> out;
  input_warning_problems(baseline, "baseline", out);
  input_warning_problems(current, "current", out);
  damaged_input_problems(baseline, "baseline", out);
  damaged_input_problems(current, "current", out);
  if (baseline.devices.size() != current.devices.size()) {
    out.push_back(fmt::format("device count differs: baseline {}, current {}",
                              baseline.devices.size(), current.devices.size()));
  }
  if (baseline.schedule && current.schedule) {
    const ScheduleFigures& b = *baseline.schedule;
    const ScheduleFigures& c = *current.schedule;
    auto differs = [&](std::string_view what, int bv, int cv) {
      // 0: not found (schedule not recognised); nothing to compare.
      if (bv > 0 && cv > 0 && bv != cv) {
        out.push_back(fmt::format("{} differs: baseline {}, current {}", what, bv, cv));
      }
    };
    // By family, not by name: a renamed schedule (ZB-H1 is now Paddle's ZBH1)
    // or one list under another framework's name stays comparable.
    if (!b.family.empty() && !c.family.empty() && b.family != c.family) {
      out.push_back(fmt::format("schedule family differs: baseline {} ({}), current {} ({})",
                                b.family, b.name, c.family, c.name));
    }
    differs("stage count (P)", b.stages, c.stages);
    differs("micro-batch count (M)", b.micro_batches, c.micro_batches);
    differs("chunk count (V)", b.chunks, c.chunks);
  }
  return out;
}

/// max-utilization-drop over the devices in both runs: each device's drop
/// of median utilization against the limit (points).
ThresholdResult utilization_threshold(const std::vector<DeviceComparison>& devices, double limit) {
  ThresholdResult t{"max-utilization-drop", true, "", {}};
  double worst = 0;
  int worst_device = -1;
  for (const DeviceComparison& d : devices) {
    const double drop = -d.utilization.delta;
    if (worst_device < 0 || drop > worst) {
      worst = drop;
      worst_device = d.device;
    }
    if (!within(drop, limit)) {
      t.passed = false;
      t.failures.push_back(
          fmt::format("device {}: median utilization {} -> {}: drop {} > limit {} ({})", d.device,
                      format_percent(d.utilization.baseline.median),
                      format_percent(d.utilization.current.median), format_points(drop).substr(1),
                      format_points(limit).substr(1), noise_note(d.utilization)));
    }
  }
  t.detail = worst_device < 0
                 ? "no device in both runs"
                 : fmt::format(
                       "{} of {} device{} over the limit {} (points); largest drop {} on device {}",
                       t.failures.size(), devices.size(), devices.size() == 1 ? "" : "s",
                       format_points(limit).substr(1), format_points(worst), worst_device);
  return t;
}

/// One max-events result per event or category limited, appended to `r`.
/// Throws InputError when the current run has no log events to count.
void event_thresholds(const RunFigures& current,
                      const decltype(CheckThresholds::max_events)& max_events, CheckReport& r,
                      const OptionWords& words) {
  if (!current.events || !current.events->off.empty()) {
    // Nothing to count is no pass: a usage error, whatever else is allowed.
    throw InputError(fmt::format(
        "{}: the current run has no log events to count ({})", words.name(CallerOption::max_events),
        current.events ? current.events->off
                       : std::string("its inputs are no worker logs, or its summary has none")));
  }
  {
    for (const auto& [id, limit] : max_events) {
      std::int64_t count = 0;
      bool category = false;
      for (const EventKindFigures& k : current.events->kinds) {
        if (k.id == id) count += k.count;
      }
      for (const EventCountFigures& c : current.events->categories) {
        if (c.name == id) {
          count += c.count;
          category = true;
        }
      }
      ThresholdResult t{"max-events", count <= limit, "", {}};
      t.detail = fmt::format("{} {}: {} event{} {} limit {}", category ? "category" : "event", id,
                             count, count == 1 ? "" : "s", count <= limit ? "<=" : ">", limit);
      if (count > limit) {
        // Where they are, for the reader: the first few listed.
        for (const EventStepFigures& step : current.events->steps) {
          for (const auto* list : {&step.before, &step.events}) {
            for (const EventFigures& e : *list) {
              if ((e.id != id && e.category != id) || t.failures.size() >= 5) continue;
              t.failures.push_back(fmt::format("step {}{}: device {} {} ({}:{})", step.step,
                                               list == &step.before ? " (before it)" : "", e.device,
                                               e.id, e.path, e.line));
            }
          }
        }
      }
      r.thresholds.push_back(std::move(t));
    }
  }
}

/// One max-figures result per figure limited, appended to `r`: the current
/// run's value against the limit (the baseline's shown beside it).
void figure_thresholds(const RunFigures& baseline, const RunFigures& current,
                       const decltype(CheckThresholds::max_figures)& max_figures, CheckReport& r) {
  const auto value_of = [](const RunFigures& run,
                           const std::string& key) -> std::optional<FigureNumber> {
    for (const NamedFigure& f : run.figures) {
      if (f.key == key) return f.value;
    }
    return std::nullopt;
  };
  for (const auto& [key, limit] : max_figures) {
    const FigureSpec* spec = find_figure(key);
    if (spec != nullptr && !spec->threshold) {
      throw InputError(fmt::format("max_figures: the figure {} takes no limit", key));
    }
    const std::optional<FigureNumber> value = value_of(current, key);
    if (!value) {
      throw InputError(
          fmt::format("max_figures: the current run {} has no figure {}", current.source, key));
    }
    const FigureUnit unit = spec != nullptr ? spec->unit : FigureUnit::count;
    const std::optional<FigureNumber> base = value_of(baseline, key);
    const double v = figure_double(*value);
    ThresholdResult t{"max-figure", within(v, limit), "", {}};
    t.detail =
        fmt::format("figure {}: {} {} limit {} (baseline {})", key, figure_text(*value, unit),
                    t.passed ? "<=" : ">", figure_text(FigureNumber(limit), unit),
                    base ? figure_text(*base, unit) : std::string("n/a"));
    r.thresholds.push_back(std::move(t));
  }
}

CheckReport evaluate_check(const RunFigures& baseline, const RunFigures& current,
                           const CheckThresholds& thresholds, bool allow_incomparable,
                           const OptionWords& words) {
  CheckReport r;
  r.refusals = comparability_problems(baseline, current);
  r.refusals_allowed = allow_incomparable;
  r.baseline_source = baseline.source;
  r.current_source = current.source;
  r.skip_defaulted = !thresholds.skip_steps.has_value();
  r.skip_steps = thresholds.skip_steps.value_or(default_skip_steps(baseline, current));

  const std::vector<StepFigures> base_steps = compared_steps(baseline, r.skip_steps, words);
  const std::vector<StepFigures> cur_steps = compared_steps(current, r.skip_steps, words);
  r.baseline_steps = base_steps.size();
  r.current_steps = cur_steps.size();
  for (const RunFigures* run : {&baseline, &current}) {
    std::set<int> segments;
    for (const StepFigures& step : run->steps) {
      segments.insert(step.segment);
      r.incomplete_steps += !step.complete;
    }
    r.segments = std::max(r.segments, segments.size());
  }

  r.bubble_ratio = compare(bubble_ratios(base_steps), bubble_ratios(cur_steps));
  r.step_time_ns = compare(durations(base_steps), durations(cur_steps));

  auto base_util = utilization_by_device(base_steps);
  auto cur_util = utilization_by_device(cur_steps);
  for (const DeviceFigures& d : baseline.devices) {
    if (cur_util.count(d.device) == 0 && base_util.count(d.device) != 0) {
      r.only_in_baseline.push_back(d.device);
    }
  }
  for (auto& [device, values] : cur_util) {
    auto it = base_util.find(device);
    if (it == base_util.end()) {
      r.only_in_current.push_back(device);
      continue;
    }
    r.devices.push_back({device, compare(std::move(it->second), std::move(values))});
  }

  if (thresholds.max_bubble_ratio) {
    const double limit = *thresholds.max_bubble_ratio;
    ThresholdResult t{"max-bubble-ratio", within(r.bubble_ratio.current.median, limit), "", {}};
    t.detail = fmt::format("median bubble ratio {} {} limit {} (a ratio; baseline {})",
                           format_percent(r.bubble_ratio.current.median), t.passed ? "<=" : ">",
                           format_percent(limit), format_percent(r.bubble_ratio.baseline.median));
    r.thresholds.push_back(std::move(t));
  }
  if (thresholds.max_bubble_increase) {
    const double limit = *thresholds.max_bubble_increase;
    ThresholdResult t{"max-bubble-increase", within(r.bubble_ratio.delta, limit), "", {}};
    t.detail = fmt::format("median bubble ratio {} -> {}: {} {} limit {} (points; {}; IQR {} / {})",
                           format_percent(r.bubble_ratio.baseline.median),
                           format_percent(r.bubble_ratio.current.median),
                           format_points(r.bubble_ratio.delta), t.passed ? "<=" : ">",
                           format_points(limit), noise_note(r.bubble_ratio),
                           format_points(r.bubble_ratio.baseline.iqr()).substr(1),
                           format_points(r.bubble_ratio.current.iqr()).substr(1));
    r.thresholds.push_back(std::move(t));
  }
  if (thresholds.max_step_time_increase) {
    const double limit = *thresholds.max_step_time_increase;
    const double base = r.step_time_ns.baseline.median;
    // A baseline with empty windows has no step time to grow from.
    const double change = base > 0 ? r.step_time_ns.delta / base : 0;
    ThresholdResult t{"max-step-time-increase", within(change, limit), "", {}};
    t.detail =
        fmt::format("median step time {} -> {}: {} {} limit {} (relative; {}; IQR {} / {})",
                    format_duration_ns(base), format_duration_ns(r.step_time_ns.current.median),
                    format_relative(change), t.passed ? "<=" : ">", format_relative(limit),
                    noise_note(r.step_time_ns), format_duration_ns(r.step_time_ns.baseline.iqr()),
                    format_duration_ns(r.step_time_ns.current.iqr()));
    r.thresholds.push_back(std::move(t));
  }
  if (thresholds.max_utilization_drop) {
    r.thresholds.push_back(utilization_threshold(r.devices, *thresholds.max_utilization_drop));
  }
  if (!thresholds.max_events.empty()) event_thresholds(current, thresholds.max_events, r, words);
  if (!thresholds.max_figures.empty()) {
    figure_thresholds(baseline, current, thresholds.max_figures, r);
  }

  // The largest idle stretches of the current run, as device-steps.
  for (const StepFigures& s : cur_steps) {
    for (const StepDeviceFigures& d : s.devices) {
      r.worst_bubbles.push_back({s.step, d.device, d.idle_ns, s.duration_ns});
    }
  }
  std::stable_sort(
      r.worst_bubbles.begin(), r.worst_bubbles.end(),
      [](const WorstBubble& a, const WorstBubble& b) { return a.idle_ns > b.idle_ns; });
  if (r.worst_bubbles.size() > 5) r.worst_bubbles.resize(5);
  return r;
}

}  // namespace pipescope

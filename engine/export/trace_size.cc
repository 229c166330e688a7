#include "export/trace_size.h"

#include <fmt/core.h>

#include <cstdlib>
#include <stdexcept>

#include "export/perfetto_trace.h"

namespace pipescope {

namespace {

constexpr std::string_view kGuideSection = "docs/guide.md, \"Traces of big runs\"";

// "1518 MiB": sizes and limits alike in binary megabytes, the unit of the
// limits; "20000 bytes" below one (a test's limits).
std::string mib(std::uint64_t bytes) {
  if (bytes < (std::uint64_t{1} << 20)) return fmt::format("{} bytes", bytes);
  return fmt::format("{} MiB", (bytes + (std::uint64_t{1} << 19)) >> 20);
}

// "a", "a and b", "a, b and c".
std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  }
  return out;
}

std::uint64_t parse_bytes(std::string_view text, std::string_view whole) {
  std::uint64_t value = 0;
  bool ok = !text.empty();
  for (const char c : text) {
    if (c < '0' || c > '9' || value > (UINT64_MAX - 9) / 10) {
      ok = false;
      break;
    }
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!ok) {
    throw std::invalid_argument(
        fmt::format("{}='{}': expected two byte counts, JSON,PFTRACE (e.g. 1000,500)",
                    kTraceLimitVariable, whole));
  }
  return value;
}

}  // namespace

std::string_view trace_file_name(TraceFormat format) {
  return format == TraceFormat::json ? "trace.json" : "trace.pftrace";
}

TraceLimits trace_limits_from_environment() {
  TraceLimits limits;
  const char* value = std::getenv(kTraceLimitVariable);
  if (value == nullptr) return limits;
  const std::string_view text(value);
  const std::size_t comma = text.find(',');
  limits.json = parse_bytes(text.substr(0, comma), text);
  limits.perfetto = parse_bytes(
      comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1), text);
  return limits;
}

std::uint64_t estimate_trace_bytes(const Run& run, const Metrics& metrics,
                                   const TraceOptions& options, TraceFormat format,
                                   TraceSampleSize sample) {
  return estimate_whole_trace(run, metrics, options, sample, trace_measure(format));
}

TraceMeasure trace_measure(TraceFormat format) {
  return format == TraceFormat::json
             ? TraceMeasure{measure_chrome_trace_frame, measure_chrome_trace_part}
             : TraceMeasure{measure_perfetto_trace_frame, measure_perfetto_trace_part};
}

TracePlan plan_trace(const Run& run, const Metrics& metrics, const TraceOptions& options,
                     bool steps_given, TraceFormat format, std::uint64_t limit) {
  return plan_trace_with(metrics, options, steps_given, format, limit, [&] {
    TraceOptions whole = options;
    whole.steps = StepSelection();
    return estimate_trace_bytes(run, metrics, whole, format);
  });
}

TracePlan plan_trace_with(const Metrics& metrics, const TraceOptions& options, bool steps_given,
                          TraceFormat format, std::uint64_t limit,
                          const std::function<std::uint64_t()>& estimate_whole) {
  TracePlan plan;
  plan.format = format;
  plan.limit_bytes = limit;
  if (steps_given) {
    plan.steps = options.steps;
    if (!plan.steps.everything()) {
      TraceFileFigures figures;
      figures.file = std::string(trace_file_name(format));
      figures.reason = "steps_option";
      figures.steps = step_list_text(metrics, plan.steps.indices());
      plan.figures = std::move(figures);
    }
    return plan;
  }
  plan.estimated_full_bytes = estimate_whole();
  if (plan.estimated_full_bytes <= limit) return plan;

  const std::vector<std::size_t> chosen = median_and_slowest_steps(metrics);
  const std::vector<std::size_t> kept = with_neighbours(metrics, chosen);
  if (kept.size() == metrics.steps.size()) {  // no step at all, or none left out
    plan.whole_over_limit = true;
    return plan;
  }
  plan.steps = StepSelection::of(kept, metrics);
  TraceFileFigures figures;
  figures.file = std::string(trace_file_name(format));
  figures.reason = "size_limit";
  figures.steps = step_list_text(metrics, kept);
  figures.median_step = step_label(metrics, chosen.front());
  figures.slowest_step = step_label(metrics, chosen.back());
  figures.estimated_full_bytes = static_cast<std::int64_t>(plan.estimated_full_bytes);
  figures.limit_bytes = static_cast<std::int64_t>(limit);
  plan.figures = std::move(figures);
  return plan;
}

std::vector<std::string> trace_plan_notes(const Metrics& metrics,
                                          const std::vector<TracePlan>& plans,
                                          const OptionWords& words) {
  std::vector<std::string> notes;
  std::vector<std::string> files, sizes, limits;
  const TraceFileFigures* cut = nullptr;
  for (const TracePlan& plan : plans) {
    if (!plan.figures || plan.figures->reason != "size_limit") continue;
    cut = &*plan.figures;
    files.emplace_back(trace_file_name(plan.format));
    sizes.push_back(mib(plan.estimated_full_bytes));
    limits.push_back(mib(plan.limit_bytes));
  }
  if (cut != nullptr) {
    // The default selection does not depend on the format: one list of steps.
    const std::string which =
        cut->median_step == cut->slowest_step
            ? fmt::format("the median and slowest step {}, with a step on each side",
                          cut->median_step)
            : fmt::format("the median step {} and the slowest {}, each with a step on each side",
                          cut->median_step, cut->slowest_step);
    notes.push_back(fmt::format(
        "{} {} steps {} only ({}): the whole run's would be about {}, past {} {} ({}); {}",
        joined(files), files.size() == 1 ? "holds" : "hold", cut->steps, which, joined(sizes),
        files.size() == 1 ? "the limit of" : "their limits of", joined(limits), kGuideSection,
        words.advice(CallerOption::steps)));
  }
  std::vector<std::string> whole_files, whole_sizes, whole_limits;
  for (const TracePlan& plan : plans) {
    if (!plan.whole_over_limit) continue;
    whole_files.emplace_back(trace_file_name(plan.format));
    whole_sizes.push_back(mib(plan.estimated_full_bytes));
    whole_limits.push_back(mib(plan.limit_bytes));
  }
  if (!whole_files.empty()) {
    const std::string why =
        metrics.steps.empty()
            ? std::string("the run has no steps to choose from")
            : fmt::format(
                  "the median and the slowest step with their neighbours are all of "
                  "its {} step{}",
                  metrics.steps.size(), metrics.steps.size() == 1 ? "" : "s");
    notes.push_back(
        fmt::format("warning: {} will be about {}, past {} {} ({}), and {} written whole: {}; {}",
                    joined(whole_files), joined(whole_sizes),
                    whole_files.size() == 1 ? "the limit of" : "their limits of",
                    joined(whole_limits), kGuideSection, whole_files.size() == 1 ? "is" : "are",
                    why, words.advice(CallerOption::devices)));
  }
  return notes;
}

std::string chrome_trace_size_advice(const std::string& path, std::uintmax_t bytes,
                                     bool perfetto_written, const OptionWords& words) {
  if (bytes <= kChromeTracingLimitBytes) return {};
  return fmt::format(
      "{} is {:.0f} MB: chrome://tracing opens about 256 MB{}; select what to draw with "
      "{} A-B (and {}){}",
      path, static_cast<double>(bytes) / 1e6,
      bytes > kPerfettoUiJsonLimitBytes ? " and the Perfetto UI struggles above about 1 GB" : "",
      words.name(CallerOption::steps), words.name(CallerOption::devices),
      perfetto_written
          ? std::string(", or open trace.pftrace (written beside it) instead")
          : ", or write the compact trace.pftrace with " + words.name(CallerOption::perfetto));
}

}  // namespace pipescope

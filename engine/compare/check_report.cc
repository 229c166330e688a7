#include "compare/check_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "compare/figure_format.h"
#include "export/html_report.h"

namespace pipescope {

namespace {

// Markdown table cells must not break the table.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string spread_ratio(const Spread& s) {
  return fmt::format("{} – {}", format_percent(s.p25), format_percent(s.p75));
}

std::string spread_duration(const Spread& s) {
  return fmt::format("{} – {}", format_duration_ns(s.p25), format_duration_ns(s.p75));
}

std::string skip_line(const CheckReport& r, const OptionWords& words) {
  return fmt::format(
      "{} warm-up step{} {}left out of both runs{}; {}comparing {} baseline and {} "
      "current step{}",
      r.skip_steps, r.skip_steps == 1 ? "" : "s", r.segments > 1 ? "of each launch segment " : "",
      r.skip_defaulted ? fmt::format(" (default: 1 when both runs have more than 2 complete "
                                     "steps; change with {})",
                                     words.name(CallerOption::skip_steps))
                       : std::string(),
      r.incomplete_steps == 0 ? std::string()
                              : fmt::format("{} incomplete step{} never compared; ",
                                            r.incomplete_steps, r.incomplete_steps == 1 ? "" : "s"),
      r.baseline_steps, r.current_steps, r.current_steps == 1 ? "" : "s");
}

}  // namespace

std::string format_check_verdict(const CheckReport& r, const OptionWords& words) {
  std::string out;
  auto it = std::back_inserter(out);
  const std::size_t failed =
      static_cast<std::size_t>(std::count_if(r.thresholds.begin(), r.thresholds.end(),
                                             [](const ThresholdResult& t) { return !t.passed; }));
  if (r.refused()) {
    fmt::format_to(it,
                   "pipescope check: REFUSED (the runs are not comparable; "
                   "{} compares them anyway)\n",
                   words.name(CallerOption::allow_input_warnings));
  } else if (failed > 0) {
    fmt::format_to(it, "pipescope check: REGRESSION ({} of {} threshold{} failed)\n", failed,
                   r.thresholds.size(), r.thresholds.size() == 1 ? "" : "s");
  } else {
    fmt::format_to(it, "pipescope check: PASS ({} threshold{})\n", r.thresholds.size(),
                   r.thresholds.size() == 1 ? "" : "s");
  }
  fmt::format_to(it, "  baseline {}\n  current  {}\n", r.baseline_source, r.current_source);
  for (const std::string& reason : r.refusals) {
    fmt::format_to(it, "  {} {}\n",
                   r.refused() ? "not comparable:" : "note: compared anyway:", reason);
  }
  fmt::format_to(it, "  {}\n", skip_line(r, words));
  for (const ThresholdResult& t : r.thresholds) {
    fmt::format_to(it, "  {} {}: {}\n", t.passed ? "ok  " : "FAIL", t.name, t.detail);
    for (const std::string& f : t.failures) fmt::format_to(it, "         {}\n", f);
  }
  if (!r.only_in_baseline.empty() || !r.only_in_current.empty()) {
    fmt::format_to(it,
                   "  note: devices only in the baseline: [{}]; only in the current run: [{}]\n",
                   fmt::join(r.only_in_baseline, ", "), fmt::join(r.only_in_current, ", "));
  }
  return out;
}

std::string format_check_markdown(const CheckReport& r, const OptionWords& words) {
  std::string out;
  auto it = std::back_inserter(out);
  const bool regression = r.regression();
  fmt::format_to(it, "## pipescope check: {}\n\n",
                 r.refused()  ? "⛔ refused (the runs are not comparable)"
                 : regression ? "❌ regression"
                              : "✅ pass");
  if (!r.refusals.empty()) {
    const std::string& allow = words.name(CallerOption::allow_input_warnings);
    fmt::format_to(
        it, "{}\n\n",
        r.refused() ? fmt::format("The runs are not comparable (`{}` compares them anyway):", allow)
                    : fmt::format("Compared despite (`{}`):", allow));
    for (const std::string& reason : r.refusals) fmt::format_to(it, "- {}\n", cell(reason));
    fmt::format_to(it, "\n");
  }
  fmt::format_to(it,
                 "Baseline `{}`, current `{}`.  \n{}. Figures are medians over steps; the "
                 "spread is the interquartile range (p25 – p75) over those steps, and a change "
                 "larger than the wider spread is marked *beyond noise*.\n\n",
                 cell(r.baseline_source), cell(r.current_source), skip_line(r, words));

  if (!r.thresholds.empty()) {
    fmt::format_to(it, "### Thresholds\n\n| threshold | result | numbers |\n| --- | --- | --- |\n");
    for (const ThresholdResult& t : r.thresholds) {
      std::string numbers = cell(t.detail);
      for (const std::string& f : t.failures) numbers += "<br>" + cell(f);
      fmt::format_to(it, "| `{}` | {} | {} |\n",
                     fmt::format(fmt::runtime(words.name(CallerOption::threshold)), t.name),
                     t.passed ? "✅ pass" : "❌ fail", numbers);
    }
    fmt::format_to(it, "\n");
  }

  fmt::format_to(it,
                 "### Metrics\n\n| metric | baseline | current | delta | spread baseline | "
                 "spread current | noise |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
  const auto& b = r.bubble_ratio;
  fmt::format_to(it, "| bubble ratio | {} | {} | {} | {} | {} | {} |\n",
                 format_percent(b.baseline.median), format_percent(b.current.median),
                 format_points(b.delta), spread_ratio(b.baseline), spread_ratio(b.current),
                 b.beyond_noise ? "**beyond noise**" : "within noise");
  const auto& s = r.step_time_ns;
  const double rel = s.baseline.median > 0 ? s.delta / s.baseline.median : 0;
  fmt::format_to(it, "| step time | {} | {} | {} ({}) | {} | {} | {} |\n",
                 format_duration_ns(s.baseline.median), format_duration_ns(s.current.median),
                 format_signed_duration_ns(s.delta), format_relative(rel),
                 spread_duration(s.baseline), spread_duration(s.current),
                 s.beyond_noise ? "**beyond noise**" : "within noise");
  fmt::format_to(it, "\n");

  if (!r.devices.empty()) {
    fmt::format_to(it,
                   "### Utilization per device\n\n| device | baseline | current | delta | spread "
                   "baseline | spread current | noise |\n| ---: | ---: | ---: | ---: | ---: | ---: "
                   "| --- |\n");
    for (const DeviceComparison& d : r.devices) {
      const auto& u = d.utilization;
      fmt::format_to(it, "| {} | {} | {} | {} | {} | {} | {} |\n", d.device,
                     format_percent(u.baseline.median), format_percent(u.current.median),
                     format_points(u.delta), spread_ratio(u.baseline), spread_ratio(u.current),
                     u.beyond_noise ? "**beyond noise**" : "within noise");
    }
    fmt::format_to(it, "\n");
  }
  if (!r.only_in_baseline.empty() || !r.only_in_current.empty()) {
    fmt::format_to(
        it, "Devices only in the baseline: {}; only in the current run: {}.\n\n",
        r.only_in_baseline.empty() ? "none"
                                   : fmt::format("{}", fmt::join(r.only_in_baseline, ", ")),
        r.only_in_current.empty() ? "none" : fmt::format("{}", fmt::join(r.only_in_current, ", ")));
  }

  if (!r.worst_bubbles.empty()) {
    fmt::format_to(it,
                   "### Worst bubbles (current run)\n\n| step | device | idle | share of step |\n"
                   "| ---: | ---: | ---: | ---: |\n");
    for (const WorstBubble& w : r.worst_bubbles) {
      const double share =
          w.window_ns > 0 ? static_cast<double>(w.idle_ns) / static_cast<double>(w.window_ns) : 0;
      fmt::format_to(it, "| {} | {} | {} | {} |\n", w.step, w.device,
                     format_duration_ns(static_cast<double>(w.idle_ns)), format_percent(share));
    }
    fmt::format_to(it, "\n");
  }
  return out;
}

std::string format_check_error_markdown(const std::string& error, const std::string& baseline,
                                        const std::string& current) {
  return fmt::format(
      "## pipescope check: ⛔ error, nothing was compared\n\n"
      "Baseline `{}`, current `{}`.\n\n"
      "The check stopped before comparing the runs (exit status 2):\n\n"
      "```\n{}\n```\n",
      cell(baseline.empty() ? "-" : baseline), cell(current.empty() ? "-" : current), error);
}

std::string format_check_error_junit(const std::string& error, const std::string& baseline,
                                     const std::string& current) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fmt::format_to(it,
                 "<testsuites name=\"pipescope\" tests=\"1\" failures=\"0\" errors=\"1\" "
                 "time=\"0\">\n");
  fmt::format_to(it,
                 "  <testsuite name=\"pipescope check\" tests=\"1\" failures=\"0\" "
                 "errors=\"1\" skipped=\"0\" time=\"0\">\n");
  fmt::format_to(it, "    <properties>\n");
  fmt::format_to(it, "      <property name=\"baseline\" value=\"{}\"/>\n", markup_escape(baseline));
  fmt::format_to(it, "      <property name=\"current\" value=\"{}\"/>\n", markup_escape(current));
  fmt::format_to(it, "    </properties>\n");
  fmt::format_to(it,
                 "    <testcase classname=\"pipescope.check\" name=\"check\" time=\"0\">\n"
                 "      <error message=\"{}\" type=\"error\">{}</error>\n    </testcase>\n",
                 markup_escape(fmt::format("nothing was compared: {}", error)),
                 markup_escape(error));
  fmt::format_to(it, "  </testsuite>\n</testsuites>\n");
  return out;
}

std::string format_check_junit(const CheckReport& r, const OptionWords& words) {
  std::string out;
  auto it = std::back_inserter(out);
  std::size_t failures = 0;
  for (const ThresholdResult& t : r.thresholds) failures += t.passed ? 0 : 1;
  const std::size_t errors = r.refused() ? 1 : 0;
  const std::size_t tests = r.thresholds.size() + (r.refusals.empty() ? 0 : 1);
  std::string reasons;
  for (const std::string& reason : r.refusals) {
    if (!reasons.empty()) reasons += '\n';
    reasons += reason;
  }
  fmt::format_to(it, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fmt::format_to(it,
                 "<testsuites name=\"pipescope\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
                 "time=\"0\">\n",
                 tests, failures, errors);
  fmt::format_to(it,
                 "  <testsuite name=\"pipescope check\" tests=\"{}\" failures=\"{}\" "
                 "errors=\"{}\" skipped=\"0\" time=\"0\">\n",
                 tests, failures, errors);
  fmt::format_to(it, "    <properties>\n");
  fmt::format_to(it, "      <property name=\"baseline\" value=\"{}\"/>\n",
                 markup_escape(r.baseline_source));
  fmt::format_to(it, "      <property name=\"current\" value=\"{}\"/>\n",
                 markup_escape(r.current_source));
  fmt::format_to(it, "      <property name=\"skip_steps\" value=\"{}\"/>\n", r.skip_steps);
  fmt::format_to(it, "    </properties>\n");
  if (!r.refusals.empty()) {
    fmt::format_to(
        it, "    <testcase classname=\"pipescope.check\" name=\"comparable-inputs\" time=\"0\"");
    if (r.refused()) {
      fmt::format_to(
          it, ">\n      <error message=\"{}\" type=\"refused\">{}</error>\n    </testcase>\n",
          markup_escape(fmt::format("the runs are not comparable: {}", r.refusals.front())),
          markup_escape(reasons));
    } else {
      fmt::format_to(
          it, ">\n      <system-out>{}</system-out>\n    </testcase>\n",
          markup_escape(fmt::format("compared anyway ({}):\n{}",
                                    words.name(CallerOption::allow_input_warnings), reasons)));
    }
  }
  for (const ThresholdResult& t : r.thresholds) {
    fmt::format_to(it, "    <testcase classname=\"pipescope.check\" name=\"{}\" time=\"0\"",
                   markup_escape(t.name));
    if (t.passed) {
      fmt::format_to(it, ">\n      <system-out>{}</system-out>\n    </testcase>\n",
                     markup_escape(t.detail));
      continue;
    }
    std::string body = t.detail;
    for (const std::string& f : t.failures) body += "\n" + f;
    fmt::format_to(
        it, ">\n      <failure message=\"{}\" type=\"regression\">{}</failure>\n    </testcase>\n",
        markup_escape(t.detail), markup_escape(body));
  }
  fmt::format_to(it, "  </testsuite>\n</testsuites>\n");
  return out;
}

}  // namespace pipescope

#include "export/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <utility>

#include "analysis/bubble_split.h"
#include "analysis/bubbles.h"
#include "analysis/explanation.h"
#include "analysis/job_kind.h"
#include "analysis/job_role.h"
#include "analysis/step_events.h"
#include "analysis/step_selection.h"
#include "export/atomic_file.h"
#include "export/figure_registry.h"
#include "export/html_report_data.h"
#include "export/summary_figures.h"
#include "numeric/statistics.h"
#include "numeric/units.h"

namespace pipescope {

namespace {

constexpr std::size_t kMaxDrawnSteps = 8;
constexpr std::size_t kMaxStepBars = 400;
// Timeline geometry (SVG user units = CSS pixels at 100%).
constexpr double kLabelWidth = 120;
constexpr double kPlotWidth = 1000;
// Room right of the plot so that the last axis label is never clipped.
constexpr double kRightMargin = 48;
constexpr double kRowHeight = 20;
constexpr double kAxisHeight = 22;
// A box needs this many pixels to carry its micro-batch number.
constexpr double kMinLabelWidth = 16;
// Log-event marks drawn per device row of a step (the rest are counted).
constexpr std::size_t kMaxEventMarksPerRow = 100;
// Outlier steps listed (the rest are counted; summary.json lists them all).
constexpr std::size_t kMaxOutliersListed = 10;

using Out = std::back_insert_iterator<std::string>;

// An axis label in the unit of the tick spacing, with only the decimals the
// spacing needs, in the largest unit not above the label or the spacing:
// "0", "200 ms", "1.2 s", "50 us".
std::string axis_label(std::int64_t t, std::int64_t tick) {
  if (t == 0) return "0";
  struct Unit {
    std::int64_t ns;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1'000'000'000, "s"}, {1'000'000, "ms"}, {1'000, "us"}};
  for (const Unit& u : kUnits) {
    if (tick >= u.ns || t >= u.ns) {
      int decimals = 0;
      for (std::int64_t step = u.ns; decimals < 3 && tick % step != 0; step /= 10) ++decimals;
      return fmt::format("{:.{}f} {}", static_cast<double>(t) / static_cast<double>(u.ns), decimals,
                         u.name);
    }
  }
  return fmt::format("{} ns", t);
}

// A tick spacing of 1, 2 or 5 × 10^k ns giving about `target` ticks.
std::int64_t tick_step(std::int64_t span, int target) {
  if (span <= 0) return 1;
  const double raw = static_cast<double>(span) / target;
  double base = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (base * m >= raw) return std::max<std::int64_t>(1, static_cast<std::int64_t>(base * m));
  }
  return static_cast<std::int64_t>(base * 10);
}

// One box in the making: consecutive jobs of one kind narrower than a pixel
// are merged so that a step of a million jobs still draws ~1000 boxes a row.
struct Box {
  JobKind kind = JobKind::other;
  double x0 = 0;
  double x1 = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::size_t jobs = 0;
  std::string type;
  std::int64_t micro_batch = 0;
  JobRole role;
};

// "F3·c1" for a job of a chunked type, else the micro-batch number.
std::string box_label(const Box& b) {
  if (!b.role.chunked || !b.role.compute()) return std::to_string(b.micro_batch);
  const char letter = b.role.role == PipelineRole::forward    ? 'F'
                      : b.role.role == PipelineRole::backward ? 'B'
                                                              : 'W';
  return fmt::format("{}{}\u00b7c{}", letter, b.micro_batch, b.role.chunk);
}

void write_box(Out it, const Box& b, double y) {
  const double w = std::max(b.x1 - b.x0, 0.5);
  const char* shade = html_compute_color(b.role.role, b.role.chunk);
  fmt::format_to(it,
                 "<rect class=\"job\" data-kind=\"{}\"{} x=\"{:.1f}\" y=\"{:.1f}\" "
                 "width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>",
                 job_kind_name(b.kind),
                 b.role.chunked ? fmt::format(" data-chunk=\"{}\"", b.role.chunk) : std::string(),
                 kLabelWidth + b.x0, y + 2, w, kRowHeight - 4,
                 shade != nullptr ? shade : html_kind_color(b.kind));
  if (b.jobs == 1) {
    fmt::format_to(it, "{} mb{}: {}", markup_escape(b.type), b.micro_batch,
                   format_duration(b.end_ns - b.start_ns));
  } else {
    fmt::format_to(it, "{} {} jobs over {}", b.jobs, job_kind_name(b.kind),
                   format_duration(b.end_ns - b.start_ns));
  }
  fmt::format_to(it, "</title></rect>");
  const std::string label = box_label(b);
  // About 6 px per character (the middle dot counts as one).
  const double needed = std::max(kMinLabelWidth, 6.0 * static_cast<double>(label.size() - 1));
  if (b.jobs == 1 && w >= (b.role.chunked ? needed : kMinLabelWidth)) {
    fmt::format_to(it, "<text class=\"mb\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                   kLabelWidth + b.x0 + w / 2, y + kRowHeight / 2 + 4, label);
  }
}

// The severities marks are coloured by (CSS classes of the same names); any
// other is drawn in the info colour.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kSeverityColours = {
    {{"info", "#4a4a4a"}, {"warning", "#e8a200"}, {"error", "#d62728"}}};

std::string_view severity_class(std::string_view severity) {
  for (const auto& [name, colour] : kSeverityColours) {
    if (severity == name) return name;
  }
  return "info";
}

// One log event of the step's window on device row `y`: a line across the
// row under a small triangle, titled with what it is, when and where.
void write_event_mark(Out it, const Run& run, const Device& device, const LogEvent& event,
                      const StepWindow& w, double x, double y) {
  static const EventKind kUnknown{"?", "?", "?", ""};
  const EventKind& kind =
      event.kind < run.event_kinds.size() ? run.event_kinds[event.kind] : kUnknown;
  std::string title = fmt::format("{} ({}, {}) at +{}{} in the step: {}:{}", kind.id, kind.category,
                                  kind.severity, format_duration(event.time_ns - w.start_ns),
                                  event.time_kind == EventTime::approximate ? " (about)" : "",
                                  device.path, event.line);
  for (const auto& [name, value] : event.captures) title += fmt::format("; {}={}", name, value);
  fmt::format_to(it,
                 "<g class=\"event {}\" data-event=\"{}\" data-severity=\"{}\"><title>{}</title>"
                 "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
                 "<path d=\"M{:.1f} {:.1f}h10l-5 8z\"/></g>",
                 severity_class(kind.severity), markup_escape(kind.id),
                 markup_escape(kind.severity), markup_escape(title), x, x, y, y + kRowHeight, x - 5,
                 y);
}

void write_idle(Out it, double x0, double x1, std::int64_t ns, double y, const std::string& parts) {
  if (x1 - x0 < 0.5) return;
  fmt::format_to(
      it,
      "<rect class=\"idle\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
      "<title>idle {}{}</title></rect>",
      kLabelWidth + x0, y + 2, x1 - x0, kRowHeight - 4, format_duration(ns), parts);
}

// The bubbles of the drawn steps, by index into Metrics::steps (empty for the
// others): the bubble pass's idle time (analysis/bubbles.h), so the report
// shades exactly what the summary counts. Each step's list runs device by
// device, in time order.
std::vector<std::vector<Bubble>> drawn_bubbles(const Run& run, const Metrics& metrics,
                                               const std::vector<std::size_t>& steps,
                                               const HtmlDeviceRows& rows) {
  std::vector<bool> drawn(metrics.steps.size(), false);
  for (const std::size_t k : steps) {
    if (k < drawn.size()) drawn[k] = true;
  }
  std::vector<std::vector<Bubble>> bubbles(metrics.steps.size());
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!rows.drawn_device[d]) continue;
    for_each_device_bubble(run, metrics, d, [&](const Bubble& bubble) {
      if (drawn[bubble.step]) bubbles[bubble.step].push_back(bubble);
    });
  }
  return bubbles;
}

// Orders records and device positions by a record's device, for
// std::equal_range over a list sorted by device.
template <class Key>
struct Less {
  Key key;
  template <class T>
  bool operator()(const T& a, std::size_t d) const {
    return key(a) < d;
  }
  template <class T>
  bool operator()(std::size_t d, const T& a) const {
    return d < key(a);
  }
};
// Spelled out: clang before 17 deduces no aggregate's template arguments.
template <class Key>
Less(Key) -> Less<Key>;

// The first job of `jobs` (sorted by start) to draw as a box from `start` on:
// jobs starting before `start` are included when they still run at `start`
// (looking back a bounded number of jobs).
std::size_t first_overlapping(const JobVector& jobs, std::int64_t start) {
  auto it = std::lower_bound(jobs.begin(), jobs.end(), start,
                             [](const Job& j, std::int64_t t) { return j.start_ns < t; });
  std::size_t i = static_cast<std::size_t>(it - jobs.begin());
  std::size_t first = i;
  for (std::size_t back = 0; back < 64 && i > 0; ++back) {
    --i;
    if (jobs[i].end_ns > start) first = i;
  }
  return first;
}

// `bubbles`: the step's, from drawn_bubbles().
// `highlight[d]`: device d's row belongs to the bottleneck stage.
// `events`: the log events in the step's window (StepEvents::in_step).
// `rows`: the drawn rows, each with its first device's jobs.
void write_timeline(Out it, const Run& run, const Metrics& metrics, std::size_t k,
                    const std::vector<Bubble>& bubbles, const std::vector<JobRole>& roles,
                    const std::vector<bool>& highlight, const BubbleSplit* split,
                    std::vector<EventRef> events, const HtmlDeviceRows& rows) {
  // Device by device, each device's in time order (as placed).
  std::stable_sort(events.begin(), events.end(),
                   [](const EventRef& a, const EventRef& b) { return a.device < b.device; });
  std::size_t unmarked = 0;
  const StepWindow& w = metrics.steps[k];
  const std::int64_t span = std::max<std::int64_t>(w.window_ns(), 1);
  const double scale = kPlotWidth / static_cast<double>(span);
  const auto x_of = [&](std::int64_t t) {
    return static_cast<double>(std::clamp(t, w.start_ns, w.end_ns) - w.start_ns) * scale;
  };
  const double height = kAxisHeight + kRowHeight * static_cast<double>(rows.drawn) + 4;

  fmt::format_to(it, "<section class=\"step\"><h3>Step {} — {}, bubble ratio {}{}</h3>\n",
                 step_label(metrics, k), format_duration(w.window_ns()), percent(w.bubble_ratio),
                 w.complete ? "" : " (incomplete: not in the totals)");
  fmt::format_to(it,
                 "<svg class=\"timeline\" data-step=\"{}\" width=\"{:.0f}\" height=\"{:.0f}\" "
                 "viewBox=\"0 0 {:.0f} {:.0f}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
                 w.step, kLabelWidth + kPlotWidth + kRightMargin, height,
                 kLabelWidth + kPlotWidth + kRightMargin, height);
  // Time axis: ticks relative to the window start.
  const std::int64_t tick = tick_step(span, 8);
  for (std::int64_t t = 0; t <= span; t += tick) {
    const double x = kLabelWidth + static_cast<double>(t) * scale;
    fmt::format_to(
        it,
        "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"14\">{3}</text>\n",
        x, kAxisHeight - 4, height, axis_label(t, tick));
  }

  for (std::size_t r = 0; r < rows.drawn; ++r) {
    const std::vector<std::size_t>& row = rows.rows[r];
    const std::size_t d = row.front();
    const Device& device = run.devices[d];
    const double y = kAxisHeight + kRowHeight * static_cast<double>(r);
    const bool slow = d < highlight.size() && highlight[d];
    fmt::format_to(it, "<g class=\"device-row{}\" data-device=\"{}\"", slow ? " bottleneck" : "",
                   device.index);
    if (row.size() > 1) {
      fmt::format_to(it, " data-devices=\"{}\"><title>{}</title>", row.size(),
                     markup_escape("drawn for " + html_row_alike(run, metrics, row)));
    } else {
      fmt::format_to(it, ">");
    }
    if (slow) {
      fmt::format_to(it,
                     "<rect class=\"bottleneck-band\" x=\"0\" y=\"{:.1f}\" width=\"{:.1f}\" "
                     "height=\"{:.1f}\"><title>bottleneck stage</title></rect>",
                     y, kLabelWidth + kPlotWidth, kRowHeight);
    }
    fmt::format_to(it, "<text class=\"row-label\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                   kLabelWidth - 6, y + kRowHeight / 2 + 4,
                   markup_escape(html_row_label(run, row) + (slow ? " \u25b2" : "")));

    const auto [first_bubble, last_bubble] = std::equal_range(
        bubbles.begin(), bubbles.end(), d, Less{[](const Bubble& b) { return b.device; }});
    for (auto bubble = first_bubble; bubble != last_bubble; ++bubble) {
      std::string parts;
      if (split != nullptr) {
        if (const auto inherent = bubble_inherent_ns(*split, metrics, *bubble)) {
          parts = fmt::format(": inherent {}, excess {}", format_duration(*inherent),
                              format_duration(bubble->length_ns() - *inherent));
        }
      }
      write_idle(it, x_of(bubble->start_ns), x_of(bubble->end_ns), bubble->length_ns(), y, parts);
    }

    const JobVector& jobs = device.jobs;
    Box pending;
    bool has_pending = false;
    for (std::size_t i = first_overlapping(jobs, w.start_ns);
         i < jobs.size() && jobs[i].start_ns < w.end_ns; ++i) {
      const Job& job = jobs[i];
      if (job.end_ns <= w.start_ns) continue;
      const JobKind kind = classify_job_type(run.types.name(job.type));
      const JobRole role = job.type < roles.size() ? roles[job.type] : JobRole{};
      const double x0 = x_of(job.start_ns);
      const double x1 = x_of(job.end_ns);
      const bool tiny = x1 - x0 < 1.0;
      if (has_pending && tiny && pending.kind == kind && pending.role.role == role.role &&
          pending.role.chunk == role.chunk && x0 - pending.x1 < 1.0 &&
          (pending.x1 - pending.x0 < 1.0 || pending.jobs > 1)) {
        pending.x1 = std::max(pending.x1, x1);
        pending.end_ns = std::max(pending.end_ns, job.end_ns);
        ++pending.jobs;
        continue;
      }
      if (has_pending) write_box(it, pending, y);
      pending = Box{kind,
                    x0,
                    x1,
                    std::max(job.start_ns, w.start_ns),
                    std::min(job.end_ns, w.end_ns),
                    1,
                    run.types.name(job.type),
                    job.micro_batch,
                    role};
      has_pending = true;
    }
    if (has_pending) write_box(it, pending, y);

    // Log events over the jobs.
    std::size_t marks = 0;
    const auto [first_event, last_event] = std::equal_range(
        events.begin(), events.end(), d,
        Less{[](const EventRef& e) { return static_cast<std::size_t>(e.device); }});
    for (auto event = first_event; event != last_event; ++event) {
      if (marks == kMaxEventMarksPerRow) {
        ++unmarked;
        continue;
      }
      const LogEvent& log = device.events[event->event];
      write_event_mark(it, run, device, log, w, kLabelWidth + x_of(log.time_ns), y);
      ++marks;
    }
    fmt::format_to(it, "</g>\n");
  }
  fmt::format_to(it, "</svg>");
  if (unmarked > 0) {
    fmt::format_to(it,
                   "\n<p class=\"note\">{} more log event{} in this step, not marked (at most {} "
                   "a device; summary.json lists them).</p>\n",
                   unmarked, unmarked == 1 ? "" : "s", kMaxEventMarksPerRow);
  }
  fmt::format_to(it, "</section>\n");
}

// The interactive timeline's frame (html_report_script.js fills it; hidden
// until it does): the step picker, the highlights, the canvas and its
// tooltip, and which steps are embedded.
void write_explorer(Out it, const Metrics& metrics, const std::vector<std::size_t>& embedded,
                    const HtmlOptions& options) {
  fmt::format_to(
      it,
      "<div id=\"explorer\" class=\"explorer\" hidden>\n<div class=\"controls\">"
      "<label>Step <select id=\"step-pick\"></select></label>"
      "<button type=\"button\" id=\"step-prev\" title=\"previous step (\u2190)\">\u25c0</button>"
      "<button type=\"button\" id=\"step-next\" title=\"next step (\u2192)\">\u25b6</button>"
      "<label><input type=\"checkbox\" id=\"show-bottleneck\" checked> bottleneck stage</label>"
      "<label><input type=\"checkbox\" id=\"show-critical\"> critical path</label>"
      "<button type=\"button\" id=\"zoom-reset\">whole step</button>"
      "<span id=\"range\" class=\"range\"></span></div>\n");
  if (embedded.size() == metrics.steps.size()) {
    fmt::format_to(it,
                   "<p class=\"note\" id=\"embedded-note\">Every step can be picked ({}).</p>\n",
                   embedded.size());
  } else {
    const OptionWords& words = *options.words;
    fmt::format_to(it,
                   "<p class=\"note\" id=\"embedded-note\">{} of the {} steps can be picked: "
                   "steps {}. The report {} at most {} jobs; summary.json and trace.json "
                   "cover every step, and {} writes a trace of the steps you choose.</p>\n",
                   embedded.size(), metrics.steps.size(),
                   markup_escape(describe_step_indices(metrics, embedded)),
                   options.embed_drawn_only
                       ? markup_escape(fmt::format(
                             "of a run analysed with {} embeds only the steps it "
                             "draws ({}),",
                             words.name(CallerOption::mpi), words.name(CallerOption::html_steps)))
                       : std::string("embeds"),
                   options.max_embedded_jobs, markup_escape(words.name(CallerOption::trace_steps)));
  }
  fmt::format_to(it,
                 "<div class=\"canvas-wrap\"><canvas id=\"timeline-canvas\"></canvas>"
                 "<div id=\"tip\" class=\"tip\" hidden></div></div>\n"
                 "<p class=\"note\">Hover a job, a bubble or a NCCL kernel for its figures. Wheel: "
                 "zoom; drag: zoom to a range; shift+drag, drag on the time axis or shift+wheel: "
                 "pan; double-click or 0: the whole step; \u2190 \u2192: the previous or next "
                 "step. Jobs of another step that overlap the window are drawn faded.</p>\n"
                 "</div>\n");
}

void write_utilization(Out it, const Run& run, const Metrics& metrics, const HtmlDeviceRows& rows,
                       const PipelineAnalysis* a) {
  const auto stage_text = [&](std::size_t d) {
    return a != nullptr && d < a->stages.stage_of.size() && a->stages.stage_of[d] >= 0
               ? std::to_string(a->stages.stage_of[d])
               : std::string("-");
  };
  constexpr double kBarWidth = 600;
  const double height = kRowHeight * static_cast<double>(rows.drawn) + 4;
  fmt::format_to(it, "<h2>Utilization per device</h2>\n");
  if (rows.drawn < run.devices.size()) {
    fmt::format_to(it,
                   "<p class=\"note\" id=\"rows-note\">{} devices in {} rows: devices of a stage "
                   "whose busy and idle time agree within 1% share a row (drawn with the first "
                   "one's jobs; the bar spans their utilization, min to max){}.</p>\n",
                   run.devices.size(), rows.rows.size(),
                   rows.drawn < rows.rows.size()
                       ? fmt::format("; the first {} rows are drawn, the other {} listed below",
                                     rows.drawn, rows.rows.size() - rows.drawn)
                       : std::string());
  }
  fmt::format_to(it,
                 "<svg class=\"utilization\" width=\"{0:.0f}\" "
                 "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\">\n",
                 kLabelWidth + kBarWidth + 100, height);
  // (the percentage right of each bar fits in the 100 units left for it)
  for (std::size_t r = 0; r < rows.drawn; ++r) {
    const std::vector<std::size_t>& row = rows.rows[r];
    const std::size_t d = row.front();
    const double y = kRowHeight * static_cast<double>(r);
    double lo = 1, hi = 0;
    for (const std::size_t p : row) {
      const double u = p < metrics.devices.size() ? metrics.devices[p].utilization : 0.0;
      lo = std::min(lo, u);
      hi = std::max(hi, u);
    }
    const DeviceTotals totals = d < metrics.devices.size() ? metrics.devices[d] : DeviceTotals{};
    fmt::format_to(
        it,
        "<text class=\"row-label\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>"
        "<rect class=\"util-track\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>"
        "<rect class=\"util-bar\" data-device=\"{}\"{} x=\"{:.1f}\" y=\"{:.1f}\" "
        "width=\"{:.1f}\" height=\"{:.1f}\"><title>{}</title></rect>",
        kLabelWidth - 6, y + kRowHeight / 2 + 4, markup_escape(html_row_label(run, row)),
        kLabelWidth, y + 3, kBarWidth, kRowHeight - 6, run.devices[d].index,
        row.size() > 1 ? fmt::format(" data-devices=\"{}\"", row.size()) : std::string(),
        kLabelWidth, y + 3, kBarWidth * std::clamp(lo, 0.0, 1.0), kRowHeight - 6,
        markup_escape(row.size() > 1
                          ? html_row_alike(run, metrics, row)
                          : fmt::format("busy {}, idle {}", format_duration(totals.busy_ns),
                                        format_duration(totals.idle_ns))));
    if (row.size() > 1 && hi > lo) {
      fmt::format_to(it,
                     "<rect class=\"util-range\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                     "height=\"{:.1f}\"/>",
                     kLabelWidth + kBarWidth * std::clamp(lo, 0.0, 1.0), y + 3,
                     kBarWidth * (std::clamp(hi, 0.0, 1.0) - std::clamp(lo, 0.0, 1.0)),
                     kRowHeight - 6);
    }
    fmt::format_to(it, "<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                   kLabelWidth + kBarWidth + 6, y + kRowHeight / 2 + 4,
                   row.size() > 1 && percent(lo) != percent(hi)
                       ? fmt::format("{}\u2013{}", percent(lo), percent(hi))
                       : percent(lo));
  }
  fmt::format_to(it, "</svg>\n");
  if (rows.drawn < rows.rows.size()) {
    // The rows past the limit, listed.
    fmt::format_to(it,
                   "<h3>Devices not drawn ({} rows past the first {})</h3>\n<div "
                   "class=\"step-table-box\"><table class=\"undrawn\"><tr><th>devices</th>"
                   "<th>stage</th><th>utilization</th><th>busy</th><th>idle</th></tr>\n",
                   rows.rows.size() - rows.drawn, rows.drawn);
    for (std::size_t r = rows.drawn; r < rows.rows.size(); ++r) {
      const std::vector<std::size_t>& row = rows.rows[r];
      std::vector<std::int64_t> indices;
      double lo = 1, hi = 0;
      std::int64_t busy_lo = INT64_MAX, busy_hi = 0, idle_lo = INT64_MAX, idle_hi = 0;
      for (const std::size_t p : row) {
        indices.push_back(run.devices[p].index);
        const DeviceTotals t = p < metrics.devices.size() ? metrics.devices[p] : DeviceTotals{};
        lo = std::min(lo, t.utilization);
        hi = std::max(hi, t.utilization);
        busy_lo = std::min(busy_lo, t.busy_ns);
        busy_hi = std::max(busy_hi, t.busy_ns);
        idle_lo = std::min(idle_lo, t.idle_ns);
        idle_hi = std::max(idle_hi, t.idle_ns);
      }
      std::sort(indices.begin(), indices.end());
      const auto range = [](const std::string& a, const std::string& b) {
        return a == b ? a : a + "\u2013" + b;
      };
      fmt::format_to(it, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     describe_number_ranges(indices), stage_text(row.front()),
                     range(percent(lo), percent(hi)),
                     range(format_duration(busy_lo), format_duration(busy_hi)),
                     range(format_duration(idle_lo), format_duration(idle_hi)));
    }
    fmt::format_to(it, "</table></div>\n");
  }
}

void write_step_chart(Out it, const Metrics& metrics, const std::vector<std::size_t>& chosen) {
  constexpr double kHeight = 160;
  constexpr double kTop = 10;
  const std::size_t n = metrics.steps.size();
  const std::size_t bars = std::min(n, kMaxStepBars);
  const std::size_t per_bar = (n + bars - 1) / std::max<std::size_t>(bars, 1);
  const double bar_width = kPlotWidth / static_cast<double>(std::max<std::size_t>(bars, 1));
  fmt::format_to(it, "<h2>Bubble ratio per step</h2>\n");
  if (per_bar > 1) {
    fmt::format_to(it, "<p class=\"note\">{} steps, {} per bar: bar = mean, tick = max.</p>\n", n,
                   per_bar);
  }
  fmt::format_to(it,
                 "<svg class=\"steps\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} "
                 "{1:.0f}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
                 kLabelWidth + kPlotWidth + kRightMargin, kHeight + kTop + 24);
  for (int pct = 0; pct <= 100; pct += 25) {
    const double y = kTop + kHeight * (1 - pct / 100.0);
    fmt::format_to(
        it,
        "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/>"
        "<text class=\"row-label\" x=\"{3:.1f}\" y=\"{4:.1f}\">{5}%</text>\n",
        kLabelWidth, kLabelWidth + kPlotWidth, y, kLabelWidth - 6, y + 4, pct);
  }
  for (std::size_t b = 0; b * per_bar < n; ++b) {
    const std::size_t first = b * per_bar;
    const std::size_t last = std::min(n, first + per_bar);
    double sum = 0, max = 0;
    bool selected = false;
    for (std::size_t k = first; k < last; ++k) {
      sum += metrics.steps[k].bubble_ratio;
      max = std::max(max, metrics.steps[k].bubble_ratio);
      selected = selected || std::find(chosen.begin(), chosen.end(), k) != chosen.end();
    }
    const double mean = sum / static_cast<double>(last - first);
    const double x = kLabelWidth + bar_width * static_cast<double>(b);
    const double h = kHeight * std::clamp(mean, 0.0, 1.0);
    const std::string label =
        last - first == 1
            ? fmt::format("step {}", step_label(metrics, first))
            : fmt::format("steps {}-{}", step_label(metrics, first), step_label(metrics, last - 1));
    fmt::format_to(it,
                   "<rect class=\"step-bar{}\" data-first=\"{}\" data-last=\"{}\" x=\"{:.1f}\" "
                   "y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{}: bubble ratio "
                   "{}</title></rect>",
                   selected ? " selected" : "", first, last - 1, x + bar_width * 0.1,
                   kTop + kHeight - h, std::max(bar_width * 0.8, 0.5), h, label, percent(mean));
    if (last - first > 1) {
      const double ym = kTop + kHeight * (1 - std::clamp(max, 0.0, 1.0));
      fmt::format_to(
          it, "<line class=\"max-tick\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>",
          x, x + bar_width, ym, ym);
    }
    fmt::format_to(it, "\n");
  }
  if (n > 0) {
    fmt::format_to(it,
                   "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">step {}</text>"
                   "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">step {}</text>\n",
                   kLabelWidth + 20, kTop + kHeight + 18, step_label(metrics, 0),
                   kLabelWidth + kPlotWidth - 20, kTop + kHeight + 18,
                   step_label(metrics, metrics.steps.size() - 1));
  }
  fmt::format_to(it, "</svg>\n");
}

/// The median window of the complete steps (median_ns: the middle one, or
/// the mean of the two middle ones rounded half up).
std::int64_t median_step_ns(const Metrics& metrics) {
  std::vector<std::int64_t> d;
  for (const StepWindow& s : metrics.steps) {
    if (s.complete) d.push_back(s.window_ns());
  }
  return median_ns(d);
}

constexpr std::string_view kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 12px}h2{font-size:16px;margin:24px 0 8px}h3{font-size:14px;margin:16px 0 4px;font-weight:600}
dl.figures{display:grid;grid-template-columns:repeat(6,auto);gap:4px 24px;justify-content:start;margin:0}
dl.figures dt{color:#666;font-size:12px}dl.figures dd{margin:0;font-size:18px;font-weight:600}
.figures div{display:flex;flex-direction:column}
svg text{font-size:11px;fill:#333}svg .row-label{text-anchor:end}svg .tick{text-anchor:middle;fill:#666}
svg .mb{text-anchor:middle;fill:#fff;font-size:10px;font-weight:600}
svg .grid{stroke:#e4e4e4;stroke-width:1}svg .bottleneck-band{fill:#fff3c4}
.bottleneck .row-label{font-weight:700;fill:#8a5a00}
p.why{font-size:15px;background:#f4f7fb;border-left:4px solid #4e79a7;padding:8px 12px;margin:0 0 16px;max-width:1100px}
ul.warnings{color:#8a5a00;margin:4px 0;padding-left:20px}
table.bubbles td:nth-child(6),table.bubbles td:nth-child(9),table.bubbles td:nth-child(10){text-align:left}svg .job{stroke:#fff;stroke-width:0.6}svg .idle{fill:#f6c9c4}
svg .util-track{fill:#f6c9c4}svg .util-bar{fill:#4e79a7}svg .util-range{fill:#9bb5d3}
svg .step-bar{fill:#e15759}svg .step-bar.selected{fill:#8b1e1f}svg .max-tick{stroke:#8b1e1f;stroke-width:1}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px;border-radius:2px}
table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}
.note{color:#666;font-size:12px}
svg .event line{stroke-width:2}svg .event path{stroke:#fff;stroke-width:0.5}
svg .event.info line{stroke:#4a4a4a}svg .event.info path{fill:#4a4a4a}
svg .event.warning line{stroke:#e8a200}svg .event.warning path{fill:#e8a200}
svg .event.error line{stroke:#d62728}svg .event.error path{fill:#d62728}
ul.outliers{margin:4px 0;padding-left:20px}
.js-only{display:none}html.js span.js-only{display:inline-block}html.js p.js-only{display:block}
.explorer .controls{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;margin:8px 0 4px;font-size:13px}
.explorer .range{color:#555;font-variant-numeric:tabular-nums}
.canvas-wrap{position:relative;max-width:1400px}.canvas-wrap canvas{display:block;cursor:crosshair;outline:none}
.tip{position:absolute;z-index:2;background:#fff;border:1px solid #999;border-radius:4px;padding:6px 8px;font-size:12px;line-height:1.45;box-shadow:0 2px 8px rgba(0,0,0,.15);pointer-events:none;max-width:460px}
.step-table-box{max-height:320px;overflow:auto;display:inline-block;position:relative}
html.js table.step-table tr[data-e]{cursor:pointer}html.js table.step-table tr[data-e]:hover{background:#f4f7fb}
table.step-table tr.selected{background:#dde8f4}
)";

}  // namespace

std::string markup_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            out += "\xEF\xBF\xBD";
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence is copied; anything else becomes U+FFFD.
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= n;
    for (std::size_t j = 1; ok && j < len; ++j) {
      if ((s[i + j] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (s[i + j] & 0x3F);
    }
    if (ok) {
      // Overlong forms, surrogates and values past U+10FFFF are not UTF-8;
      // U+FFFE/U+FFFF are not XML characters.
      ok = !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) &&
           !(cp >= 0xD800 && cp <= 0xDFFF) && cp != 0xFFFE && cp != 0xFFFF;
    }
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::vector<std::size_t> choose_html_steps(const Metrics& metrics, std::string_view spec,
                                           const OptionWords& words) {
  std::vector<std::size_t> chosen;
  const std::size_t n = metrics.steps.size();
  if (n == 0) return chosen;
  const auto trimmed = [](std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
  };
  // The median-duration complete step and the slowest, as a trace past its
  // size limit holds them (analysis/step_selection.h).
  if (trimmed(spec).empty()) return median_and_slowest_steps(metrics);
  const std::string& option = words.name(CallerOption::html_steps);
  chosen = parse_step_list(spec, metrics, option);
  if (chosen.size() > kMaxDrawnSteps) {
    throw std::invalid_argument(
        fmt::format("{}: at most {} steps can be drawn", option, kMaxDrawnSteps));
  }
  return chosen;
}

namespace {

/// The figures at the top (devices, jobs, steps, bubble ratio, the
/// pipeline's, the registered ones: id fig-KEY), then the warnings; returns
/// the devices of the bottleneck stage, highlighted in the timelines.
std::vector<bool> write_figures(std::back_insert_iterator<std::string> it, const Run& run,
                                const Metrics& metrics, const PipelineAnalysis* a,
                                const SummaryJobFacts& facts) {
  std::size_t machines = 0;
  for (const Device& d : run.devices) machines = std::max<std::size_t>(machines, d.machine + 1);
  fmt::format_to(it, "<dl class=\"figures\">\n");
  const auto figure = [&](std::string_view id, std::string_view name, const std::string& value) {
    fmt::format_to(it, "<div><dt>{}</dt><dd id=\"{}\">{}</dd></div>\n", name, id, value);
  };
  figure("fig-devices", "devices",
         fmt::format("{} on {} machine{}", run.devices.size(), machines, machines == 1 ? "" : "s"));
  figure("fig-jobs", "jobs", std::to_string(facts.jobs()));
  figure("fig-steps", "steps", std::to_string(metrics.steps.size()));
  figure("fig-bubble-ratio", "bubble ratio", percent(metrics.bubble_ratio));
  figure("fig-window", "total step time", format_duration(metrics.total_window_ns));
  figure("fig-median-step", "median step", format_duration(median_step_ns(metrics)));
  std::vector<bool> highlight(run.devices.size(), false);
  if (a != nullptr) {
    const ScheduleDetection& d = a->schedule.detection;
    figure("fig-schedule", "schedule",
           fmt::format("{}{} P={} M={}{}", detection_name(d), d.exact || !d.family ? "" : "-like",
                       d.stages, d.micro_batches,
                       d.chunks > 1 ? fmt::format(" V={}", d.chunks) : std::string()));
    figure("fig-layout", "layout",
           a->layout.method == LayoutMethod::none ? std::string("none fits")
                                                  : describe_layout_shape(a->layout.shape));
    if (a->replicas.slowest >= 0) {
      const auto& all = a->replicas.replicas;
      const ReplicaStats& slow = all[static_cast<std::size_t>(a->replicas.slowest)];
      std::int64_t fastest = slow.total_window_ns;
      for (const ReplicaStats& r : all) fastest = std::min(fastest, r.total_window_ns);
      figure("fig-slowest-replica", "slowest replica",
             fmt::format("{} of {} ({} per step; the fastest {:.1f}% faster)", slow.replica,
                         all.size(), format_duration(slow.step_ns),
                         slow.total_window_ns > 0
                             ? 100.0 * (1.0 - static_cast<double>(fastest) /
                                                  static_cast<double>(slow.total_window_ns))
                             : 0.0));
    }
    figure("fig-ideal", "its ideal bubble",
           a->schedule.ideal_bubble_ratio ? percent(*a->schedule.ideal_bubble_ratio) : "unknown");
    const std::int64_t all =
        static_cast<std::int64_t>(run.devices.size()) * metrics.total_window_ns;
    const auto points = [&](std::int64_t ns) {
      return fmt::format(
          "{:.1f} points",
          all > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(all) : 0.0);
    };
    figure("fig-inherent", "inherent", a->split.known ? points(a->split.inherent_ns) : "unknown");
    figure("fig-excess", "excess", a->split.known ? points(a->split.excess_ns) : "unknown");
    if (metrics.comm_ns > 0) figure("fig-comm", "inside comm jobs", points(metrics.comm_ns));
    const BottleneckReport& b = a->bottleneck;
    figure("fig-bottleneck", "bottleneck",
           has_bottleneck(b) ? fmt::format("stage {} ({:.2f}x)", b.slowest_stage, b.imbalance)
                             : std::string("balanced"));
    if (has_bottleneck(b)) {
      for (std::size_t d = 0; d < a->stages.stage_of.size() && d < highlight.size(); ++d) {
        highlight[d] = a->stages.stage_of[d] == b.slowest_stage;
      }
    }
  }
  // The figures registered without a section of their own
  // (figure_registry.h), as summary.json and the text report have them.
  SummaryFigures registered;
  place_figures(facts.figures, run, registered);
  for (const NamedFigure& f : registered.figures) {
    const FigureSpec* spec = find_figure(f.key);
    figure(markup_escape("fig-" + f.key), markup_escape(spec ? spec->label : f.key),
           markup_escape(figure_text(f.value, spec ? spec->unit : FigureUnit::count)));
  }
  fmt::format_to(it, "</dl>\n");
  if (a != nullptr && !a->warnings.empty()) {
    fmt::format_to(it, "<h2>Warnings ({})</h2>\n<ul class=\"warnings\">\n", a->warnings.size());
    for (const Warning& w : a->warnings) {
      fmt::format_to(it, "<li>{}</li>\n", markup_escape(w.message));
    }
    fmt::format_to(it, "</ul>\n");
  }

  return highlight;
}

/// The longest bubbles, one row per stage and time (peers folded).
void write_longest_bubbles(std::back_insert_iterator<std::string> it, const Run& run,
                           const Metrics& metrics, const PipelineAnalysis* a,
                           const SummaryJobFacts& facts) {
  const std::vector<FoldedBubble> folded =
      a == nullptr ? std::vector<FoldedBubble>{} : report_longest_bubbles(*a);
  if (!folded.empty() && !metrics.steps.empty()) {
    fmt::format_to(it,
                   "<h2>Longest bubbles</h2>\n<p class=\"note\">One row per stage and time: the "
                   "devices of a stage idle at the same time (tensor-parallel peers, replicas) "
                   "are folded into the longest one's row, their count under peers.</p>\n"
                   "<table class=\"bubbles\"><tr><th>device</th><th>peers</th>"
                   "<th>step</th><th>start</th><th>length</th><th>kind</th><th>inherent</th>"
                   "<th>excess</th><th>after</th><th>waits for</th></tr>\n");
    const std::int64_t origin = metrics.steps.front().start_ns;
    const auto job_text = [&](const std::optional<Job>& job) {
      if (!job) return std::string("-");
      return markup_escape(
          fmt::format("{} mb{}", job->type < run.types.size() ? run.types.name(job->type) : "?",
                      job->micro_batch));
    };
    for (const FoldedBubble& group : folded) {
      const Bubble& bubble = group.bubble;
      const Device& device = run.devices[bubble.device];
      const SummaryJobFacts::LongBubble named = long_bubble_facts(run, metrics, facts, *a, bubble);
      const std::optional<std::int64_t>& inherent = named.inherent_ns;
      std::vector<std::int64_t> indices;
      for (const std::size_t d : group.devices) indices.push_back(run.devices[d].index);
      std::sort(indices.begin(), indices.end());
      fmt::format_to(it,
                     "<tr data-peers=\"{}\"><td>{}</td><td title=\"devices {}; the shortest "
                     "{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     group.devices.size(), device.index,
                     markup_escape(describe_number_ranges(indices)),
                     format_duration(group.shortest_ns), group.devices.size(),
                     markup_escape(step_label(metrics, bubble.step)),
                     format_duration(bubble.start_ns - origin), format_duration(bubble.length_ns()),
                     bubble_kind_name(bubble.kind), inherent ? format_duration(*inherent) : "-",
                     inherent ? format_duration(bubble.length_ns() - *inherent) : "-",
                     job_text(named.before), job_text(named.after));
    }
    fmt::format_to(it, "</table>\n");
  }
}

/// The drawn steps' figures, and the rest summarised.
void write_step_table(std::back_insert_iterator<std::string> it, const Metrics& metrics,
                      const std::vector<std::size_t>& drawn) {
  // The drawn steps in figures, and the rest summarised.
  fmt::format_to(it,
                 "<h2>Steps</h2>\n<p class=\"note js-only\" id=\"step-table-note\"></p>\n"
                 "<div class=\"step-table-box\"><table class=\"step-table\" id=\"step-table\">"
                 "<tr><th>step</th><th>duration</th><th>bubble ratio</th></tr>\n");
  for (std::size_t k : drawn) {
    if (k >= metrics.steps.size()) continue;
    const StepWindow& s = metrics.steps[k];
    fmt::format_to(it, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", s.step,
                   format_duration(s.window_ns()), percent(s.bubble_ratio));
  }
  fmt::format_to(it, "</table></div>\n");
  if (metrics.steps.size() > drawn.size()) {
    std::int64_t lo = INT64_MAX, hi = 0;
    for (const StepWindow& s : metrics.steps) {
      lo = std::min(lo, s.window_ns());
      hi = std::max(hi, s.window_ns());
    }
    fmt::format_to(it,
                   "<p class=\"note\">All {} steps: duration {} – {} (median {}); overall bubble "
                   "ratio {}.</p>\n",
                   metrics.steps.size(), format_duration(lo), format_duration(hi),
                   format_duration(median_step_ns(metrics)), percent(metrics.bubble_ratio));
  }
}

/// The outlier steps and the log events that coincide with them (as in the
/// text report).
void write_outliers(std::back_insert_iterator<std::string> it, const Run& run,
                    const Metrics& metrics, const StepEvents& placed) {
  // The outlier steps and the log events that coincide with them (as in the
  // text report), when events were looked for.
  if (!placed.outliers.empty()) {
    fmt::format_to(it,
                   "<h3>Outlier steps</h3>\n<p class=\"note\">Steps whose time or bubble ratio "
                   "lies far above the median (median step {}), with the log events in their "
                   "window or just before it.</p>\n<ul class=\"outliers\">\n",
                   format_duration(placed.median_window_ns));
    for (std::size_t i = 0; i < placed.outliers.size() && i < kMaxOutliersListed; ++i) {
      fmt::format_to(it, "<li>{}</li>\n",
                     markup_escape(describe_outlier(run, metrics, placed.outliers[i])));
    }
    fmt::format_to(it, "</ul>\n");
    if (placed.outliers.size() > kMaxOutliersListed) {
      fmt::format_to(it,
                     "<p class=\"note\">and {} more outlier steps (summary.json "
                     "events.outliers).</p>\n",
                     placed.outliers.size() - kMaxOutliersListed);
    }
  }
}

/// The legend's marks of the severities among the log events of the drawn
/// steps' windows.
void write_event_legend(std::back_insert_iterator<std::string> it, const Run& run,
                        const StepEvents& placed, const std::vector<std::size_t>& steps) {
  std::vector<bool> severities(kSeverityColours.size(), false);
  for (const std::size_t k : steps) {
    if (k >= placed.in_step.size()) continue;
    for (const EventRef& ref : placed.in_step[k]) {
      const LogEvent& event = run.devices[ref.device].events[ref.event];
      const std::string_view severity =
          severity_class(event.kind < run.event_kinds.size() ? run.event_kinds[event.kind].severity
                                                             : std::string_view());
      for (std::size_t s = 0; s < kSeverityColours.size(); ++s) {
        severities[s] = severities[s] || kSeverityColours[s].first == severity;
      }
    }
  }
  for (std::size_t s = 0; s < kSeverityColours.size(); ++s) {
    if (!severities[s]) continue;
    fmt::format_to(it, "<span><b style=\"color:{}\">\u25bc</b> log event ({})</span>",
                   kSeverityColours[s].second, kSeverityColours[s].first);
  }
}

}  // namespace

std::string render_html_report(const Run& run, const Metrics& metrics, const HtmlOptions& options) {
  std::string out;
  auto it = std::back_inserter(out);

  fmt::format_to(it,
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                 "<meta name=\"viewport\" content=\"width=device-width\">\n"
                 "<title>{}</title>\n<style>{}</style></head>\n<body>\n",
                 markup_escape(options.title), kStyle);
  fmt::format_to(it, "<h1>{}</h1>\n", markup_escape(options.title));
  const PipelineAnalysis* a = options.pipeline;
  if (a != nullptr && !a->explanation.empty()) {
    fmt::format_to(it, "<p class=\"why\" id=\"why\">{}</p>\n", markup_escape(a->explanation));
  }
  // What the report reads of the jobs beyond the drawn steps', in one
  // place (as summary.json reads it).
  const SummaryJobFacts own =
      options.facts != nullptr ? SummaryJobFacts() : summary_job_facts(run, metrics, a);
  const SummaryJobFacts& facts = options.facts != nullptr ? *options.facts : own;
  const HtmlDeviceRows rows = html_device_rows(run, metrics, a, options.max_rows);
  const std::vector<bool> highlight = write_figures(it, run, metrics, a, facts);
  // Timelines of the chosen steps.
  fmt::format_to(it, "<h2>Timeline</h2>\n<div class=\"legend\">");
  // `lr` only for a run that has lr jobs.
  bool has_lr = false;
  for (TypeId t = 0; t < run.types.size(); ++t) {
    has_lr |= classify_job_type(run.types.name(t)) == JobKind::lr;
  }
  for (JobKind k : {JobKind::forward, JobKind::backward, JobKind::optimizer, JobKind::comm,
                    JobKind::other, JobKind::lr}) {
    if (k == JobKind::lr && !has_lr) continue;
    fmt::format_to(it, "<span><i style=\"background:{}\"></i>{}</span>", html_kind_color(k),
                   job_kind_name(k));
  }
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  std::int32_t max_chunk = 0;
  bool has_weight = false;
  for (const JobRole& role : roles) {
    if (role.chunked) max_chunk = std::max(max_chunk, role.chunk);
    has_weight |= role.role == PipelineRole::weight;
  }
  if (has_weight) {
    fmt::format_to(it, "<span><i style=\"background:{}\"></i>weight (backward_w)</span>",
                   html_compute_color(PipelineRole::weight, 0));
  }
  for (std::int32_t c = 1; c <= max_chunk; ++c) {
    fmt::format_to(it, "<span><i style=\"background:{}\"></i>forward chunk {}</span>",
                   html_compute_color(PipelineRole::forward, c), c);
  }
  if (std::find(highlight.begin(), highlight.end(), true) != highlight.end()) {
    fmt::format_to(it, "<span><i style=\"background:#fff3c4\"></i>bottleneck stage \u25b2</span>");
  }
  fmt::format_to(it, "<span><i style=\"background:#f6c9c4\"></i>idle (bubble)</span>");
  // The log events of the drawn steps' windows, and the severities among them.
  const bool with_events = !run.event_kinds.empty();
  const StepEvents own_events =
      with_events && options.events == nullptr ? place_step_events(run, metrics) : StepEvents{};
  const StepEvents& placed = options.events != nullptr ? *options.events : own_events;
  write_event_legend(it, run, placed, options.steps);
  // The interactive timeline's data: the steps that fit in the bound.
  const std::vector<std::size_t> embedded =
      choose_embedded_steps(html_step_costs(run, metrics, options), options.steps,
                            options.max_embedded_jobs, !options.embed_drawn_only);
  const bool interactive = !embedded.empty();
  if (interactive) {
    const bool any_comm = std::any_of(
        roles.begin(), roles.end(), [](const JobRole& r) { return r.role == PipelineRole::comm; });
    if (any_comm && a != nullptr) {
      fmt::format_to(it,
                     "<span class=\"js-only\"><i style=\"background:#cfcfcf\"></i>comm job "
                     "waiting (then transferring, darker)</span>");
    }
    if (options.kernels != nullptr && options.kernels->available) {
      fmt::format_to(it,
                     "<span class=\"js-only\"><i style=\"background:#f1a340\"></i>NCCL wait</span>"
                     "<span class=\"js-only\"><i style=\"background:#7b3294\"></i>NCCL "
                     "transfer</span>");
    }
  }
  fmt::format_to(it, "</div>\n");
  const std::string static_note = fmt::format(
      "<p class=\"note\">Numbers on the boxes are micro-batch ids ({}). Only the steps below "
      "are drawn; the chart further down covers every step.</p>\n",
      max_chunk > 0 ? "F3\u00b7c1: forward of micro-batch 3, chunk 1; chunks are shaded"
                    : "hover a box or a bubble for its times");
  const std::vector<std::vector<Bubble>> bubbles = drawn_bubbles(run, metrics, options.steps, rows);
  const auto timeline = [&](std::size_t k) {
    write_timeline(it, run, metrics, k, bubbles[k], roles, highlight,
                   a != nullptr ? &a->split : nullptr,
                   k < placed.in_step.size() ? placed.in_step[k] : std::vector<EventRef>{}, rows);
  };
  const auto is_embedded = [&](std::size_t k) {
    return std::binary_search(embedded.begin(), embedded.end(), k);
  };
  if (interactive) {
    write_explorer(it, metrics, embedded, options);
    // Without scripts: the drawn steps as static timelines.
    fmt::format_to(it, "<noscript>\n{}", static_note);
    for (const std::size_t k : options.steps) {
      if (k < metrics.steps.size() && is_embedded(k)) timeline(k);
    }
    fmt::format_to(it, "</noscript>\n");
    // A drawn step too big to embed stays static with scripts too.
    for (const std::size_t k : options.steps) {
      if (k < metrics.steps.size() && !is_embedded(k)) timeline(k);
    }
  } else {
    fmt::format_to(it, "{}", static_note);
    for (const std::size_t k : options.steps) {
      if (k < metrics.steps.size()) timeline(k);
    }
  }
  if (options.steps.empty()) fmt::format_to(it, "<p class=\"note\">No step to draw.</p>\n");

  write_longest_bubbles(it, run, metrics, a, facts);
  write_utilization(it, run, metrics, rows, a);
  write_step_chart(it, metrics, options.steps);

  write_step_table(it, metrics, options.steps);
  if (with_events) write_outliers(it, run, metrics, placed);
  fmt::format_to(it,
                 "<p class=\"note\">Written by pipescope; self-contained, no network "
                 "access.</p>\n");
  if (interactive) {
    fmt::format_to(it, "<script type=\"application/json\" id=\"pipescope-data\">{}</script>\n",
                   html_timeline_json(run, metrics, options, embedded));
    fmt::format_to(it, "<script>{}</script>\n", html_report_script());
  }
  fmt::format_to(it, "</body></html>\n");
  return out;
}

void write_html_report(const Run& run, const Metrics& metrics, const HtmlOptions& options,
                       const std::string& path) {
  AtomicFile file(path);
  file.append(render_html_report(run, metrics, options));
  file.commit();
}

}  // namespace pipescope

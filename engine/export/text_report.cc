#include "export/text_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "analysis/bubble_split.h"
#include "analysis/step_events.h"
#include "export/figure_registry.h"
#include "export/table_rows.h"
#include "model/events_off.h"
#include "numeric/units.h"

namespace pipescope {

namespace {

constexpr std::size_t kStepsListedInFull = 20;
constexpr std::size_t kStepsHead = 10;
constexpr std::size_t kStepsTail = 5;
constexpr std::size_t kDiagnosticsShown = 20;
// A cell without a number (table_rows.h).
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

double num(std::int64_t v) { return static_cast<double>(v); }

std::string count(std::uint64_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// Start of a step relative to the first window, in milliseconds.
std::string relative_ms(std::int64_t ns, std::int64_t origin) {
  const auto diff = static_cast<std::int64_t>(static_cast<std::uint64_t>(ns) -
                                              static_cast<std::uint64_t>(origin));
  return format_ms(diff);
}

// Terminal-safe text: paths and messages may hold arbitrary log bytes, and a
// stray escape sequence must not repaint the user's terminal.
std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) c = '?';
  }
  return out;
}

// Columns are measured in code points so UTF-8 paths still line up.
std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

class Style {
 public:
  explicit Style(bool enabled) : enabled_(enabled) {}
  std::string bold(std::string_view s) const { return wrap("\x1b[1m", s); }
  std::string red(std::string_view s) const { return wrap("\x1b[31m", s); }
  std::string yellow(std::string_view s) const { return wrap("\x1b[33m", s); }

 private:
  std::string wrap(std::string_view code, std::string_view s) const {
    if (!enabled_) return std::string(s);
    return fmt::format("{}{}\x1b[0m", code, s);
  }
  bool enabled_;
};

class Table {
 public:
  enum Align { left, right };
  struct Column {
    std::string header;
    Align align;
  };

  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void add_row(std::vector<std::string> cells) { rows_.push_back({std::move(cells), {}, {}}); }
  /// A row with the numbers its cells show, one per column (NaN: none), by
  /// which a folded table finds the rows that stand out (table_rows.h).
  void add_row(std::vector<std::string> cells, std::vector<double> values) {
    rows_.push_back({std::move(cells), {}, std::move(values)});
  }
  /// A line of text between rows (e.g. "... 80 steps not shown ...").
  void add_note(std::string text) { rows_.push_back({{}, std::move(text), {}}); }

  /// Renders every row.
  void render(fmt::memory_buffer& out, const Style& style) const {
    std::vector<std::size_t> all(rows_.size());
    for (std::size_t r = 0; r < all.size(); ++r) all[r] = r;
    render_rows(out, style, all, {}, "", *OptionWords::engine());  // no gap, no note
  }

  /// Renders the rows select_table_rows() picks (every one with
  /// `listing.all`), a line saying how many `noun` were left out at the first
  /// gap and "..." at the others. Notes are not folded tables' rows.
  void render_folded(fmt::memory_buffer& out, const Style& style, std::string_view noun,
                     const RowListing& listing) const {
    std::vector<std::vector<double>> columns(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      columns[c].reserve(rows_.size());
      for (const Row& row : rows_)
        columns[c].push_back(c < row.values.size() ? row.values[c] : kNone);
    }
    const RowSelection shown = select_table_rows(rows_.size(), columns, listing.all);
    render_rows(out, style, shown.rows, shown, noun, *listing.words);
  }

 private:
  struct Row {
    std::vector<std::string> cells;
    std::string note;
    std::vector<double> values;
  };

  void render_rows(fmt::memory_buffer& out, const Style& style,
                   const std::vector<std::size_t>& shown, const RowSelection& selection,
                   std::string_view noun, const OptionWords& words) const {
    std::vector<std::size_t> widths(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) widths[c] = display_width(columns_[c].header);
    for (const std::size_t r : shown) {
      const Row& row = rows_[r];
      for (std::size_t c = 0; c < row.cells.size() && c < widths.size(); ++c) {
        widths[c] = std::max(widths[c], display_width(row.cells[c]));
      }
    }
    std::vector<std::string> header;
    for (const Column& column : columns_) header.push_back(column.header);
    out_line(out, style.bold(line(header, widths)));
    bool noted = false;
    for (std::size_t i = 0; i < shown.size(); ++i) {
      if (i > 0 && shown[i] != shown[i - 1] + 1) {
        out_line(out,
                 noted ? std::string("  ...") : "  " + folded_rows_note(selection, noun, words));
        noted = true;
      }
      const Row& row = rows_[shown[i]];
      out_line(out, row.cells.empty() ? fmt::format("  {}", row.note) : line(row.cells, widths));
    }
  }

  std::string line(const std::vector<std::string>& cells,
                   const std::vector<std::size_t>& widths) const {
    std::string text = " ";
    for (std::size_t c = 0; c < cells.size() && c < widths.size(); ++c) {
      const std::size_t pad = widths[c] - display_width(cells[c]);
      text += ' ';
      if (columns_[c].align == right) text.append(pad, ' ');
      text += cells[c];
      if (columns_[c].align == left) text.append(pad, ' ');
      if (c + 1 < cells.size()) text += ' ';
    }
    // No trailing blanks (an empty last cell would leave some).
    text.erase(text.find_last_not_of(' ') + 1);
    return text;
  }

  static void out_line(fmt::memory_buffer& out, std::string_view text) {
    out.append(text.data(), text.data() + text.size());
    out.push_back('\n');
  }

  std::vector<Column> columns_;
  std::vector<Row> rows_;
};

void append_line(fmt::memory_buffer& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
  out.push_back('\n');
}

void write_devices(fmt::memory_buffer& out, const Run& run, const Metrics& metrics,
                   const SummaryJobFacts& facts, const Style& style, const RowListing& listing) {
  append_line(out, style.bold("Devices"));
  Table table({{"device", Table::right},
               {"machine", Table::left},
               {"rank", Table::right},
               {"jobs", Table::right},
               {"steps", Table::right},
               {"busy", Table::right},
               {"idle", Table::right},
               {"utilization", Table::right}});
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    const DeviceTotals totals = d < metrics.devices.size() ? metrics.devices[d] : DeviceTotals{};
    const std::uint64_t jobs = d < facts.device_jobs.size() ? facts.device_jobs[d] : 0;
    table.add_row(
        {std::to_string(device.index),
         device.machine_name.empty() ? std::to_string(device.machine)
                                     : printable(device.machine_name),
         std::to_string(device.rank), std::to_string(jobs), std::to_string(totals.steps),
         format_duration(totals.busy_ns), format_duration(totals.idle_ns),
         percent(totals.utilization)},
        {kNone, kNone, kNone, static_cast<double>(jobs), static_cast<double>(totals.steps),
         num(totals.busy_ns), num(totals.idle_ns), totals.utilization});
  }
  table.render_folded(out, style, "devices", listing);
}

void write_steps(fmt::memory_buffer& out, const Metrics& metrics, const Style& style,
                 const RowListing& listing) {
  append_line(out, style.bold("Steps"));
  if (metrics.steps.empty()) {
    append_line(out, "  no steps found");
    return;
  }
  const bool any_incomplete = metrics.incomplete_steps > 0;
  std::vector<Table::Column> columns = {
      {metrics.segments.size() > 1 ? "seg:step" : "step", Table::right},
      {"start ms", Table::right},
      {"duration", Table::right},
      {"bubble", Table::right}};
  if (any_incomplete) columns.push_back({"", Table::left});
  Table table(std::move(columns));
  const std::int64_t origin = metrics.steps.front().start_ns;
  const auto add = [&](std::size_t k) {
    const StepWindow& step = metrics.steps[k];
    std::vector<std::string> cells = {step_label(metrics, k), relative_ms(step.start_ns, origin),
                                      format_duration(step.window_ns()),
                                      percent(step.bubble_ratio)};
    if (any_incomplete) cells.push_back(step.complete ? "" : "incomplete (not in the totals)");
    table.add_row(std::move(cells));
  };
  const std::size_t n = metrics.steps.size();
  // Incomplete steps are always listed: they are where a launch was cut.
  const auto shown = [&](std::size_t k) {
    return listing.all || n <= kStepsListedInFull || k < kStepsHead || k + kStepsTail >= n ||
           !metrics.steps[k].complete;
  };
  std::size_t hidden = 0;
  for (std::size_t k = 0; k < n; ++k) hidden += !shown(k);
  bool noted = false;
  for (std::size_t k = 0; k < n; ++k) {
    if (shown(k)) {
      add(k);
    } else if (!noted) {
      noted = true;
      table.add_note(fmt::format(
          "... {} steps not shown (first {} and last {} of {} listed{}; {}) ...", hidden,
          kStepsHead, kStepsTail, n, any_incomplete ? ", and every incomplete one" : "",
          listing.words->advice(CallerOption::all_rows)));
    }
  }
  table.render(out, style);
}

void write_inputs(fmt::memory_buffer& out, const Run& run, const Style& style,
                  const RowListing& listing) {
  append_line(out, style.bold("Inputs"));
  const bool any_error = std::any_of(run.inputs.begin(), run.inputs.end(),
                                     [](const InputStats& input) { return !input.error.empty(); });
  std::vector<Table::Column> columns = {{"path", Table::left},
                                        {"lines", Table::right},
                                        {"matched", Table::right},
                                        {"malformed", Table::right},
                                        {"oversized", Table::right}};
  if (any_error) columns.push_back({"error", Table::left});
  Table table(std::move(columns));
  for (const InputStats& input : run.inputs) {
    std::vector<std::string> cells = {
        printable(input.path), std::to_string(input.lines), std::to_string(input.matched),
        std::to_string(input.malformed), std::to_string(input.oversized)};
    if (any_error) cells.push_back(input.error.empty() ? "" : printable(input.error));
    // An input with an error always stands out (a value no other row has).
    table.add_row(std::move(cells),
                  {kNone, static_cast<double>(input.lines), static_cast<double>(input.matched),
                   static_cast<double>(input.malformed), static_cast<double>(input.oversized),
                   any_error ? (input.error.empty() ? 0.0 : 1.0) : kNone});
  }
  table.render_folded(out, style, "inputs", listing);
}

void write_diagnostics(fmt::memory_buffer& out, const Run& run, const Style& style) {
  const std::size_t n = run.diagnostics.size();
  const std::size_t shown = std::min(n, kDiagnosticsShown);
  append_line(out, style.bold(shown == n ? fmt::format("Diagnostics ({})", n)
                                         : fmt::format("Diagnostics (first {} of {})", shown, n)));
  for (std::size_t i = 0; i < shown; ++i) {
    const Diagnostic& diagnostic = run.diagnostics[i];
    append_line(out, fmt::format("  {}: {}", printable(diagnostic.location()),
                                 printable(diagnostic.message)));
  }
}

// --- pipeline section (analysis/pipeline.h) ---------------------------------

std::string job_name(const Run& run, const std::optional<Job>& job) {
  if (!job) return "-";
  const Job& j = *job;
  return printable(fmt::format("{} mb{}", j.type < run.types.size() ? run.types.name(j.type) : "?",
                               j.micro_batch));
}

std::string share(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? percent(static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

/// The pipeline's summary lines: schedule, layout, replicas, bubble and
/// idle splits, bottleneck, clocks.
void write_pipeline_summary(fmt::memory_buffer& out, const Run& run, const Metrics& metrics,
                            const PipelineAnalysis& a, const Style& style) {
  append_line(out, style.bold("Pipeline"));
  const ScheduleReport& sr = a.schedule;
  const ScheduleDetection& d = sr.detection;
  append_line(out, fmt::format("  schedule: {}{} (P={} stages, M={} micro-batches, V={} chunk{}; "
                               "{} of {} steps agree)",
                               detection_name(d), d.exact || !d.family ? "" : "-like", d.stages,
                               d.micro_batches, d.chunks, d.chunks == 1 ? "" : "s",
                               sr.steps_agreeing, sr.steps_examined));
  if (const std::string frameworks = detection_frameworks(d); !frameworks.empty()) {
    append_line(out, fmt::format("  job list of: {}", frameworks));
  }
  const Layout& layout = a.layout;
  if (layout.method == LayoutMethod::none) {
    append_line(out, "  layout: none fits (each device is its own stage; see the warnings)");
  } else {
    // The order tells something only when two axes have more than one rank.
    const LayoutShape& shape = layout.shape;
    const bool ordered = (shape.pp > 1) + (shape.dp > 1) + (shape.tp > 1) >= 2;
    append_line(out,
                fmt::format("  layout: {}{}, {}", describe_layout_shape(shape),
                            ordered ? fmt::format(" (order {})", layout_order_name(shape.order))
                                    : std::string(),
                            layout.method == LayoutMethod::detected
                                ? "from job order and dependencies"
                                : fmt::format("as given ({})", printable(layout.evidence))));
  }
  if (a.replicas.slowest >= 0) {
    const auto& all = a.replicas.replicas;
    const ReplicaStats& slow = all[static_cast<std::size_t>(a.replicas.slowest)];
    std::int64_t fastest = slow.total_window_ns, nearest = 0;
    bool first = true;
    for (const ReplicaStats& r : all) {
      if (&r == &slow) continue;
      fastest = std::min(fastest, r.total_window_ns);
      nearest = first ? r.total_window_ns : std::max(nearest, r.total_window_ns);
      first = false;
    }
    const std::size_t steps = std::max<std::size_t>(1, slow.complete_steps);
    const auto shorter = [&](std::int64_t total) {
      const std::int64_t per_step =
          (slow.total_window_ns - total) / static_cast<std::int64_t>(steps);
      return fmt::format("{} ({:.2f}%)", format_duration(per_step),
                         slow.total_window_ns > 0
                             ? 100.0 * static_cast<double>(slow.total_window_ns - total) /
                                   static_cast<double>(slow.total_window_ns)
                             : 0.0);
    };
    const std::string others =
        all.size() == 2
            ? fmt::format("the other's steps {} shorter", shorter(fastest))
            : fmt::format("the others' steps {} to {} shorter", shorter(nearest), shorter(fastest));
    append_line(out, fmt::format("  replicas: {}, slowest replica {} (step {}, bubble {}); {}",
                                 all.size(), slow.replica, format_duration(slow.step_ns),
                                 percent(slow.bubble_ratio), others));
  }
  if (sr.ideal_bubble_ratio) {
    append_line(out, fmt::format("  bubble: measured {}, ideal {} for this schedule under uniform "
                                 "costs, excess {:+.1f} points",
                                 percent(sr.measured_bubble_ratio), percent(*sr.ideal_bubble_ratio),
                                 *sr.excess * 100.0));
  }
  const std::int64_t all = static_cast<std::int64_t>(run.devices.size()) * metrics.total_window_ns;
  const auto points = [&](std::int64_t ns) {
    return fmt::format("{:.1f}",
                       all > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(all) : 0.0);
  };
  if (a.split.known) {
    append_line(out, fmt::format("  idle split: inherent {} ({} points), excess {} ({} points)",
                                 format_duration(a.split.inherent_ns), points(a.split.inherent_ns),
                                 format_duration(a.split.excess_ns), points(a.split.excess_ns)));
  } else {
    append_line(out, "  idle split: unknown (no job list for this schedule to simulate)");
  }
  if (metrics.comm_ns > 0) {
    append_line(out, fmt::format("  inside comm jobs (idle): {} ({} points)",
                                 format_duration(metrics.comm_ns), points(metrics.comm_ns)));
  }
  const BubbleTotals& t = a.bubbles.total;
  append_line(out, fmt::format("  idle by kind: fill {} ({}), interior {} ({}), drain {} ({})",
                               format_duration(t.of(BubbleKind::fill)),
                               share(t.of(BubbleKind::fill), t.idle_ns()),
                               format_duration(t.of(BubbleKind::interior)),
                               share(t.of(BubbleKind::interior), t.idle_ns()),
                               format_duration(t.of(BubbleKind::drain)),
                               share(t.of(BubbleKind::drain), t.idle_ns())));
  const BottleneckReport& b = a.bottleneck;
  const bool bottleneck = has_bottleneck(b);
  if (b.slowest_stage >= 0 && !bottleneck) {
    append_line(out, fmt::format("  stages: balanced (the slowest, stage {}, computes {:.2f}x the "
                                 "mean of the stages)",
                                 b.slowest_stage, b.imbalance));
  } else if (b.slowest_stage >= 0) {
    const auto slowest = static_cast<std::size_t>(b.slowest_stage);
    append_line(out,
                fmt::format("  bottleneck: stage {} (device {}), {} of compute per device "
                            "and step, {:.2f}x the mean of the stages",
                            b.slowest_stage, describe_stage_devices(run, a.stages, slowest),
                            format_duration(b.stages[slowest].compute_per_step_ns), b.imbalance));
  }
  const ClockReport& c = a.clock;
  if (c.method != ClockMethod::single_machine) {
    std::string offsets;
    for (const MachineClock& m : c.machines) {
      if (m.offset_ns == 0 && m.estimate_ns == 0) continue;
      offsets += fmt::format("{}{} {}{}", offsets.empty() ? "" : ", ", printable(m.name),
                             m.offset_ns != 0 ? (m.offset_ns > 0 ? "+" : "")
                                              : (m.estimate_ns > 0 ? "estimate +" : "estimate "),
                             format_duration(m.offset_ns != 0 ? m.offset_ns : m.estimate_ns));
    }
    append_line(out, fmt::format("  clocks: {}{}{}; dependency violations {} before, {} after",
                                 clock_method_name(c.method), offsets.empty() ? "" : ": ", offsets,
                                 c.violations_before, c.violations_after));
    if (!c.reason.empty()) append_line(out, fmt::format("  clocks left as read: {}", c.reason));
  }
}

/// The per-stage table of job durations (* = bottleneck).
void write_stage_table(fmt::memory_buffer& out, const Run& run, const PipelineAnalysis& a,
                       const Style& style, const RowListing& listing) {
  const BottleneckReport& b = a.bottleneck;
  const bool bottleneck = has_bottleneck(b);
  Table stages({{"stage", Table::right},
                {"devices", Table::left},
                {"forward mean", Table::right},
                {"p95", Table::right},
                {"backward mean", Table::right},
                {"p95", Table::right},
                {"weight mean", Table::right},
                {"compute/step", Table::right}});
  for (std::size_t s = 0; s < b.stages.size(); ++s) {
    const auto& r = b.stages[s].by_role;
    auto mean = [&](PipelineRole role) {
      const DurationStats& st = r[static_cast<std::size_t>(role)];
      return st.count == 0 ? std::string("-") : format_duration(st.mean_ns);
    };
    auto p95 = [&](PipelineRole role) {
      const DurationStats& st = r[static_cast<std::size_t>(role)];
      return st.count == 0 ? std::string("-") : format_duration(st.p95_ns);
    };
    auto value = [&](PipelineRole role, bool tail) {
      const DurationStats& st = r[static_cast<std::size_t>(role)];
      return st.count == 0 ? kNone : num(tail ? st.p95_ns : st.mean_ns);
    };
    stages.add_row(
        {std::to_string(s) + (bottleneck && static_cast<int>(s) == b.slowest_stage ? " *" : ""),
         describe_stage_devices(run, a.stages, s), mean(PipelineRole::forward),
         p95(PipelineRole::forward), mean(PipelineRole::backward), p95(PipelineRole::backward),
         mean(PipelineRole::weight), format_duration(b.stages[s].compute_per_step_ns)},
        {kNone, kNone, value(PipelineRole::forward, false), value(PipelineRole::forward, true),
         value(PipelineRole::backward, false), value(PipelineRole::backward, true),
         value(PipelineRole::weight, false), num(b.stages[s].compute_per_step_ns)});
  }
  append_line(out, style.bold("Stages (* = bottleneck)"));
  stages.render_folded(out, style, "stages", listing);
}

/// The longest bubbles, peers folded, with the jobs around each.
void write_longest_bubbles(fmt::memory_buffer& out, const Run& run, const Metrics& metrics,
                           const SummaryJobFacts& facts, const PipelineAnalysis& a,
                           const Style& style) {
  const std::vector<FoldedBubble> folded = report_longest_bubbles(a);
  if (!folded.empty() && !metrics.steps.empty()) {
    append_line(out, "");
    const bool any_peers = std::any_of(folded.begin(), folded.end(),
                                       [](const FoldedBubble& f) { return f.devices.size() > 1; });
    append_line(out, style.bold(fmt::format(
                         "Longest bubbles ({}{})", folded.size(),
                         any_peers ? "; peers, the devices of the stage idle at the same time, "
                                     "folded: the longest one shown"
                                   : "")));
    std::vector<Table::Column> columns = {{"device", Table::right}};
    if (any_peers) columns.push_back({"peers", Table::right});
    for (Table::Column c : std::initializer_list<Table::Column>{{"step", Table::right},
                                                                {"start ms", Table::right},
                                                                {"length", Table::right},
                                                                {"kind", Table::left},
                                                                {"inherent", Table::right},
                                                                {"excess", Table::right},
                                                                {"job before", Table::left},
                                                                {"job after", Table::left}}) {
      columns.push_back(std::move(c));
    }
    if (any_peers) columns.push_back({"shortest peer", Table::right});
    Table longest(std::move(columns));
    const std::int64_t origin = metrics.steps.front().start_ns;
    for (const FoldedBubble& group : folded) {
      const Bubble& bubble = group.bubble;
      const Device& device = run.devices[bubble.device];
      const SummaryJobFacts::LongBubble named = long_bubble_facts(run, metrics, facts, a, bubble);
      const std::optional<std::int64_t> inherent = named.inherent_ns;
      std::vector<std::string> cells = {std::to_string(device.index)};
      if (any_peers) cells.push_back(std::to_string(group.devices.size()));
      for (std::string& cell : std::vector<std::string>{
               step_label(metrics, bubble.step), relative_ms(bubble.start_ns, origin),
               format_duration(bubble.length_ns()), std::string(bubble_kind_name(bubble.kind)),
               inherent ? format_duration(*inherent) : "-",
               inherent ? format_duration(bubble.length_ns() - *inherent) : "-",
               job_name(run, named.before), job_name(run, named.after)}) {
        cells.push_back(std::move(cell));
      }
      if (any_peers) {
        cells.push_back(group.devices.size() > 1 ? format_duration(group.shortest_ns) : "-");
      }
      longest.add_row(std::move(cells));
    }
    longest.render(out, style);
  }
}

/// The critical path of the longest complete step, by stage.
void write_critical_path(fmt::memory_buffer& out, const Metrics& metrics, const PipelineAnalysis& a,
                         const Style& style, const RowListing& listing) {
  const CriticalPath* path = nullptr;
  for (const CriticalPath& p : a.critical_paths) {
    if (!metrics.steps[p.step].complete) continue;
    if (path == nullptr ||
        metrics.steps[p.step].window_ns() > metrics.steps[path->step].window_ns()) {
      path = &p;
    }
  }
  if (path != nullptr) {
    const std::int64_t window = metrics.steps[path->step].window_ns();
    append_line(out, "");
    append_line(
        out, style.bold(fmt::format("Critical path of step {} (the longest, {}): {} jobs, waits {}",
                                    step_label(metrics, path->step), format_duration(window),
                                    path->job_count, format_duration(path->wait_ns))));
    Table table({{"stage", Table::right}, {"time on path", Table::right}, {"share", Table::right}});
    for (std::size_t s = 0; s < path->stage_ns.size(); ++s) {
      table.add_row(
          {std::to_string(s), format_duration(path->stage_ns[s]), share(path->stage_ns[s], window)},
          {kNone, num(path->stage_ns[s]), kNone});
    }
    table.render_folded(out, style, "stages", listing);
  }
}

void write_pipeline(fmt::memory_buffer& out, const Run& run, const Metrics& metrics,
                    const SummaryJobFacts& facts, const PipelineAnalysis& a, const Style& style,
                    const RowListing& listing) {
  write_pipeline_summary(out, run, metrics, a, style);
  append_line(out, "");
  write_stage_table(out, run, a, style, listing);
  write_longest_bubbles(out, run, metrics, facts, a, style);
  write_critical_path(out, metrics, a, style, listing);
  if (!a.warnings.empty()) {
    append_line(out, "");
    append_line(out, style.yellow(fmt::format("Warnings ({})", a.warnings.size())));
    for (const Warning& warning : a.warnings) {
      append_line(out, fmt::format("  {}", printable(warning.message)));
    }
  }
}

/// "Log events: 12 (nccl 5, checkpoint 7)", then one line per outlier step
/// with the events that coincide with it (analysis/step_events.h).
void write_events(fmt::memory_buffer& out, const Run& run, const Metrics& metrics) {
  if (!run.events_off.empty()) {
    // "log events are off (NAME)" reads "Log events: off (NAME)".
    const std::string_view lead = kEventsOffLead;
    std::string_view why = run.events_off;
    if (why.starts_with(lead)) why.remove_prefix(lead.size());
    append_line(out, fmt::format("Log events: off{}", why));
    append_line(out, "");
    return;
  }
  if (run.event_kinds.empty()) return;
  const StepEvents placed = place_step_events(run, metrics);
  std::map<std::string, std::uint64_t> categories;
  for (std::size_t k = 0; k < placed.per_kind.size(); ++k) {
    if (placed.per_kind[k] > 0) categories[run.event_kinds[k].category] += placed.per_kind[k];
  }
  std::string by_category;
  for (const auto& [name, n] : categories) {
    by_category += fmt::format("{}{} {}", by_category.empty() ? "" : ", ", name, n);
  }
  append_line(out, fmt::format("Log events: {}{}{}", placed.total,
                               by_category.empty() ? "" : fmt::format(" ({})", by_category),
                               placed.unplaced.empty()
                                   ? ""
                                   : fmt::format("; {} without a time", placed.unplaced.size())));
  const std::size_t kShown = 10;
  for (std::size_t i = 0; i < placed.outliers.size() && i < kShown; ++i) {
    append_line(out,
                fmt::format("  {}", printable(describe_outlier(run, metrics, placed.outliers[i]))));
  }
  if (placed.outliers.size() > kShown) {
    append_line(out, fmt::format("  and {} more outlier steps (summary.json events.outliers)",
                                 placed.outliers.size() - kShown));
  }
  append_line(out, "");
}

/// The figures registered without a section of their own, one line each
/// ("label: value"); nothing when there are none.
void write_registered_figures(fmt::memory_buffer& out, const std::vector<NamedFigure>& figures,
                              const Style& style) {
  if (figures.empty()) return;
  append_line(out, style.bold("Figures"));
  for (const NamedFigure& figure : figures) {
    const FigureSpec* spec = find_figure(figure.key);
    append_line(out, fmt::format("  {}: {}", printable(spec ? spec->label : figure.key),
                                 figure_text(figure.value, spec ? spec->unit : FigureUnit::count)));
  }
  append_line(out, "");
}

}  // namespace

void write_text_report(const Run& run, const Metrics& metrics, std::FILE* out,
                       const ReportOptions& options) {
  const Style style(options.color);
  fmt::memory_buffer text;
  // What the report reads of the jobs, in one place (as summary.json reads it).
  const SummaryJobFacts own = options.facts != nullptr
                                  ? SummaryJobFacts()
                                  : summary_job_facts(run, metrics, options.pipeline);
  const SummaryJobFacts& facts = options.facts != nullptr ? *options.facts : own;
  // The registered figures' values (figure_registry.h), as summary.json has them.
  SummaryFigures registered;
  place_figures(facts.figures, run, registered);

  std::set<int> machines;
  for (const Device& device : run.devices) machines.insert(device.machine);
  append_line(text,
              style.bold(fmt::format(
                  "pipescope: {} on {}, {}, {}{} (first step {}), {}",
                  count(run.devices.size(), "device"), count(machines.size(), "machine"),
                  count(static_cast<std::size_t>(registered.jobs), "job"),
                  count(metrics.steps.size(), "step"),
                  metrics.segments.size() > 1
                      ? fmt::format(" in {} launch segments", metrics.segments.size())
                      : std::string(),
                  metrics.steps.empty() ? run.first_step.value_or(0) : metrics.steps.front().step,
                  count(run.inputs.size(), "input"))));
  if (options.pipeline != nullptr && !options.pipeline->explanation.empty()) {
    append_line(text, fmt::format("Why: {}", printable(options.pipeline->explanation)));
  }

  // The headline first: the bubble ratio, and why, before any table.
  const std::string overall = percent(metrics.bubble_ratio);
  append_line(text,
              fmt::format("Bubble ratio: {} (idle share of {} devices over {} of step windows{})",
                          metrics.bubble_ratio >= 0.5   ? style.red(overall)
                          : metrics.bubble_ratio >= 0.2 ? style.yellow(overall)
                                                        : style.bold(overall),
                          run.devices.size(), format_duration(metrics.total_window_ns),
                          metrics.incomplete_steps == 0
                              ? std::string()
                              : fmt::format("; {} left out",
                                            count(metrics.incomplete_steps, "incomplete step"))));
  if (run.time_resolution_ns > 1) {
    append_line(text,
                fmt::format("Time resolution: {} (the inputs record whole units of it): a job "
                            "shorter than a few times that is quantised, its busy and idle time "
                            "off by up to one unit at each end",
                            format_duration(run.time_resolution_ns)));
  }
  append_line(text, "");

  const RowListing listing{options.all_rows, options.words.get()};
  write_devices(text, run, metrics, facts, style, listing);
  append_line(text, "");
  write_steps(text, metrics, style, listing);
  append_line(text, "");
  if (options.pipeline != nullptr) {
    write_pipeline(text, run, metrics, facts, *options.pipeline, style, listing);
    append_line(text, "");
  }
  write_registered_figures(text, registered.figures, style);
  write_events(text, run, metrics);

  write_inputs(text, run, style, listing);
  if (!run.diagnostics.empty()) {
    append_line(text, "");
    write_diagnostics(text, run, style);
  }
  std::fwrite(text.data(), 1, text.size(), out);
}

}  // namespace pipescope

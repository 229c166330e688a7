// A self-contained HTML report of one run (`analyze --html FILE`): one file
// with inline CSS, SVG, data and script, nothing fetched, that opens in any
// browser. It holds the summary figures, an interactive timeline
// (export/html_report_script.js drawing the data of html_report_data.h on a
// canvas: a step picker over every embedded step, zoom and pan, hovers on
// jobs, bubbles, comm jobs and NCCL kernels, the bottleneck stage and the
// critical path highlighted), per-device utilization bars and a
// bubble-ratio-per-step chart, the step table, and the outlier steps with the
// log events that coincide with them (analysis/step_events.h).
//
// Without scripts (and for a drawn step too big to embed) it shows static
// SVG timelines of a few chosen steps instead (in <noscript>): devices as
// rows, jobs as boxes coloured by kind with the micro-batch number when it
// fits, the bubbles of analysis/bubbles.h shaded, the log events of the
// step's window marked on their device's row, coloured by severity.
//
// Devices whose figures agree within 1% (the same stage, busy and idle time
// each within 1%: tensor-parallel peers, data-parallel replicas) are drawn as
// one row, labelled with their count and their utilization's min–max
// (html_device_rows); at most HtmlOptions::max_rows rows are drawn, the rest
// listed in a table (<table class="undrawn">).
//
// It stays small and fast for big runs: the timeline embeds the jobs of the
// steps that fit in HtmlOptions::max_embedded_jobs (200,000 by default; the
// drawn steps first, and the page says which steps can be picked); the static
// timelines draw only the chosen steps, jobs narrower than a pixel merged into
// one box per run of same-kind jobs; the step chart groups steps into at most
// 400 bars (each bar the mean, with the max as a tick).
//
// With the pipeline analysis it leads with the plain explanation
// (<p id="why">), then the schedule, its ideal, the inherent/excess split and
// the comm time among the figures, the bottleneck stage's rows highlighted
// (<g class="device-row bottleneck">, only when a stage is slower than the
// others beyond noise), the warnings (<ul class="warnings">) and the longest
// bubbles with the jobs they sit between (<table class="bubbles">). Boxes of
// chunked (VPP) types are shaded by chunk and labelled "F3·c1".
//
// Stable hooks for tests and scripts: the figures are <dd> elements with ids
// (fig-devices, fig-jobs, fig-steps, fig-bubble-ratio, fig-window,
// fig-median-step; with the analysis fig-schedule, fig-ideal, fig-inherent,
// fig-excess, fig-comm); each static timeline is <svg class="timeline"
// data-step="N"> with one <g class="device-row" data-device="D"> per device
// holding <rect class="job" data-kind="K"> boxes, <rect class="idle"> bubbles
// and <g class="event SEVERITY" data-event="ID" data-severity="SEVERITY"> log
// event marks (at most 100 a row); utilization bars are <rect
// class="util-bar" data-device="D">; step bars are <rect class="step-bar"
// data-first="K" data-last="K">; the outlier steps are the <li> of <ul
// class="outliers">. The interactive timeline: <div id="explorer">, the
// picker #step-pick, <canvas id="timeline-canvas" data-step data-t0 data-t1>
// (the visible range, ns from the step's start), the tooltip #tip (its
// data-* attributes: the figures shown), the table #step-table, and
// window.pipescopeReport (view(), pick(), xOf(), yOf()); the page sets the
// performance mark `pipescope-drawn` after its first draw.
//
// Usage:
//   HtmlOptions o; o.steps = choose_html_steps(metrics, "");  // default choice
//   write_html_report(run, metrics, o, "out/report.html");
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/kernel_view.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "model/option_words.h"
#include "model/run.h"

namespace pipescope {

struct StepEvents;
struct SummaryJobFacts;

/// Jobs (and NCCL kernels) the interactive timeline embeds at most, by default.
inline constexpr std::size_t kHtmlMaxEmbeddedJobs = 200'000;
/// Device rows the report draws at most, by default.
inline constexpr std::size_t kHtmlMaxRows = 512;

struct HtmlOptions {
  /// Indices into Metrics::steps of the steps drawn as timelines.
  std::vector<std::size_t> steps;
  /// Title shown at the top (e.g. the input path).
  std::string title = "pipescope report";
  /// When set, the report leads with its explanation and shows the schedule
  /// and its ideal, the inherent/excess split, the bottleneck stage's rows
  /// highlighted, the warnings and the longest bubbles with what they wait for.
  const PipelineAnalysis* pipeline = nullptr;
  /// The kernel view of the run's PyTorch traces (analysis/kernel_view.h),
  /// computed from Run::kernels: when available, each device's NCCL kernels
  /// are drawn under its jobs, split into wait and transfer.
  const KernelView* kernels = nullptr;
  /// The interactive timeline embeds the jobs of as many steps as fit in
  /// this many jobs (html_report_data.h).
  std::size_t max_embedded_jobs = kHtmlMaxEmbeddedJobs;
  /// Device rows drawn at most (timelines, utilization); the devices past
  /// it are listed in a table instead (html_device_rows).
  std::size_t max_rows = kHtmlMaxRows;
  /// The interactive timeline embeds the drawn `steps` only (those that fit
  /// in max_embedded_jobs), not the others after them, and the page says
  /// so: the report of a partitioned (--mpi) run, whose rank 0 receives the
  /// drawn steps' jobs only (distributed/partitioned_html.h).
  bool embed_drawn_only = false;
  /// What the report reads of the run's jobs beyond the drawn steps' (the
  /// job count, the registered figures, the jobs the longest bubbles sit
  /// between: summary_figures.h); null: read from `run` itself. Set where
  /// `run` holds only the drawn steps' jobs, with `pipeline` holding the
  /// whole run's figures.
  const SummaryJobFacts* facts = nullptr;
  /// The run's log events placed on the steps (analysis/step_events.h);
  /// null: placed from `run` and the metrics. Set with `facts`.
  const StepEvents* events = nullptr;
  /// How the report names the caller's options (CallerOption::trace_steps,
  /// where it says how to write a trace of other steps). Never null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
};

/// The steps to draw: `spec` lists step numbers ("5", "3-4", "3,7"); empty
/// picks the slowest step and the median-duration step (one step when they
/// coincide). At most 8 steps. Throws std::invalid_argument naming a step
/// that the run does not have, or a malformed spec, and the option
/// (CallerOption::html_steps) in `words`.
std::vector<std::size_t> choose_html_steps(const Metrics& metrics, std::string_view spec,
                                           const OptionWords& words = *OptionWords::engine());

/// Renders the report into a string.
std::string render_html_report(const Run& run, const Metrics& metrics, const HtmlOptions& options);

/// Writes render_html_report() to `path` atomically. The folder must exist.
void write_html_report(const Run& run, const Metrics& metrics, const HtmlOptions& options,
                       const std::string& path);

/// Escapes text for HTML/XML content and attribute values (& < > " '), with
/// invalid UTF-8 and control characters XML 1.0 forbids replaced by U+FFFD.
std::string markup_escape(std::string_view text);

}  // namespace pipescope

// The data the HTML report's interactive timeline draws (html_report.h): one
// JSON document embedded in the page as <script type="application/json"
// id="pipescope-data">, read by the page's script (html_report_script.h).
//
// What it holds, per embedded step (docs/guide.md, "HTML report"): per
// device the jobs to draw (the step's own and any other job that overlaps its
// window) as parallel arrays of integers (start and duration in ns from the
// step's window start, type id, micro-batch, input line), the bubbles with
// their kind, inherent part and the job they wait for (and that job's input
// on another stage), the comm jobs' wait and transfer (analysis/comm_jobs.h),
// the NCCL kernels of the kernel view (wait, transfer, the rank waited on),
// and the step's critical path. Times are integers: offsets from the step's
// start (and step starts from the first step's) are exact in a JavaScript
// number up to 2^53 ns (104 days). Strings are JSON-escaped, and every '<'
// is written \u003c so that no "</script" or "<!--" can appear.
//
// The embedded jobs are bounded (kHtmlMaxEmbeddedJobs, a job counted once
// per step it is embedded in, a NCCL kernel as a job): the drawn steps come
// first, then the other steps in step order, each that fits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/job_kind.h"
#include "analysis/job_role.h"
#include "export/html_report.h"

namespace pipescope {

/// The report's device rows: devices of one stage whose busy and idle time
/// over the run each agree within 1% (max <= min x 1.01) are one row, drawn
/// with the jobs of its first device (the lowest position); devices without
/// a stage (no pipeline analysis) are a row each. Rows are ordered by their
/// first device; the first `max_rows` are drawn.
struct HtmlDeviceRows {
  /// Each row's devices (positions in Run::devices, ascending).
  std::vector<std::vector<std::size_t>> rows;
  /// How many of `rows` are drawn (the first ones).
  std::size_t drawn = 0;
  /// drawn_device[d]: device d's jobs are drawn (the first of a drawn row).
  std::vector<bool> drawn_device;
};

/// Devices' figures agree when each of busy and idle has max <= min x this.
inline constexpr double kHtmlFoldTolerance = 1.01;

HtmlDeviceRows html_device_rows(const Run& run, const Metrics& metrics,
                                const PipelineAnalysis* pipeline, std::size_t max_rows);

/// A row's label: its device's ("GPU 3 (m0)"), "GPU 0 (m0) ×8" for 8 devices.
std::string html_row_label(const Run& run, const std::vector<std::size_t>& row);

/// What a row of several devices stands for: "8 devices (0-7), utilization
/// 46.9%-47.1%".
std::string html_row_alike(const Run& run, const Metrics& metrics,
                           const std::vector<std::size_t>& row);

/// "0-7, 16, 18-20": ascending numbers, consecutive ones as ranges.
std::string describe_number_ranges(const std::vector<std::int64_t>& numbers);

/// Per step (index into Metrics::steps): how many jobs embedding it costs:
/// its own jobs, the other jobs that overlap its window, and with
/// `options.kernels` the NCCL kernels that start in its window, of the devices
/// whose jobs are drawn (html_device_rows) only.
std::vector<std::uint64_t> html_step_costs(const Run& run, const Metrics& metrics,
                                           const HtmlOptions& options);

/// The steps to embed, sorted: the `drawn` steps first, then (with
/// `others`) the others in step order, each while the total cost stays
/// within `max_jobs` (a step that does not fit is skipped, later ones may
/// still fit).
std::vector<std::size_t> choose_embedded_steps(const std::vector<std::uint64_t>& costs,
                                               const std::vector<std::size_t>& drawn,
                                               std::uint64_t max_jobs, bool others = true);

/// Whether embedding window `w` draws `job` for its time (it overlaps a
/// window that is not empty), whatever its own step: with the job's own
/// step, the jobs a step's timeline draws.
inline bool html_draws_in_window(const StepWindow& w, const Job& job) {
  return w.window_ns() > 0 && w.end_ns > job.start_ns && w.start_ns < job.end_ns;
}

/// The JSON document of `embedded` (from choose_embedded_steps); `drawn` are
/// the steps the page shows first (the first embedded one of them).
std::string html_timeline_json(const Run& run, const Metrics& metrics, const HtmlOptions& options,
                               const std::vector<std::size_t>& embedded);

/// The colours of the report (static SVG and canvas alike): a job kind's,
/// and a compute role's shade by chunk (VPP: chunk c takes shade c mod 4,
/// all dark enough for white labels; nullptr for a role that is not compute).
const char* html_kind_color(JobKind kind);
const char* html_compute_color(PipelineRole role, std::int32_t chunk);

/// A device row's label: "GPU 3 (m0)".
std::string html_device_label(const Device& device);

/// The page's script (export/html_report_script.js, compiled in).
std::string_view html_report_script();

/// "5, 7-9, 12": steps by their labels, consecutive indices as ranges.
std::string describe_step_indices(const Metrics& metrics, const std::vector<std::size_t>& steps);

}  // namespace pipescope

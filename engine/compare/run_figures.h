// The figures of one run that `check` and `diff` compare, whatever they were
// read from: worker logs or record files (through the same scan and metrics as
// `analyze`) or a summary.json written earlier. Everything here is what
// summary.json schema "pipescope.summary/1" holds, plus optional figures that
// only some sources carry (job durations, the detected schedule); a missing
// optional figure is reported as "not available", never guessed.
//
// Usage:
//   RunFigures base = load_run_figures("base/summary.json");   // compare/run_loader.h
//   RunFigures cur  = figures_from_run(run, metrics, "logs/");
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "model/run.h"

namespace pipescope {

struct DeviceFigures {
  int device = 0;  ///< global device index (the key runs are matched on)
  int machine = 0;
  std::string machine_name;
  int rank = 0;
  std::int64_t jobs = 0;
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  double utilization = 0;
};

struct StepDeviceFigures {
  int device = 0;  ///< global device index
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
};

struct StepFigures {
  std::int64_t step = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t duration_ns = 0;
  double bubble_ratio = 0;
  std::vector<StepDeviceFigures> devices;
};

struct JobTypeFigures {
  std::string type;
  std::string kind;  ///< forward, backward, optimizer, comm, other
  std::int64_t jobs = 0;
  /// Σ job durations; known from logs, from a summary only if it has the field.
  std::optional<std::int64_t> total_ns;
};

/// The pipeline schedule, when the source says (a newer summary's "schedule"
/// object, or detection on the jobs of a log run).
struct ScheduleFigures {
  std::string name;                           ///< "1F1B", "VPP", ... or "unknown"
  std::optional<std::int64_t> stages;         ///< P
  std::optional<std::int64_t> micro_batches;  ///< M
  std::optional<std::int64_t> chunks;         ///< V
  std::optional<bool> exact;
};

struct RunFigures {
  /// The path given, and what it was: "logs" or "summary".
  std::string source;
  std::string origin;
  std::int64_t jobs = 0;
  std::int64_t first_step = 0;
  double bubble_ratio = 0;
  std::int64_t total_window_ns = 0;
  std::vector<DeviceFigures> devices;
  std::vector<StepFigures> steps;
  std::vector<JobTypeFigures> job_types;
  std::optional<ScheduleFigures> schedule;
};

/// The figures of an analysed run (the same values write_summary_json writes),
/// plus job durations per type and the detected schedule.
RunFigures figures_from_run(const Run& run, const Metrics& metrics, std::string source);

}  // namespace pipescope

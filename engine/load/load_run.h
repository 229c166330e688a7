// The one way from input paths to an analysed run, used by every command that
// reads a run (analyze, check, diff, convert): discovery and the device
// selection, the ingest layer, then clock correction, the metric contract and
// the pipeline analysis, always in that order.
//
// Usage:
//   std::vector<InputFile> inputs = find_inputs({"logs/"}, "0-3");
//   LoadedRun loaded = load_run(inputs, options);
//   if (loaded.run.job_count() == 0) ...  // nothing to analyse: say so
//   use(loaded.metrics, loaded.pipeline);
#pragma once

#include <string>
#include <vector>

#include "analysis/pipeline.h"
#include "ingest/ingest.h"

namespace pipescope {

struct LoadOptions {
  IngestOptions ingest;
  PipelineOptions pipeline;
  /// The metric contract only, on the times as logged: no clock correction
  /// and no pipeline analysis (`convert` writes records with the logged
  /// times; reading them back corrects the clocks as for the logs).
  bool metrics_only = false;
};

struct LoadedRun {
  Run run;
  /// The contract's figures (on corrected times unless metrics_only).
  Metrics metrics;
  /// Empty when metrics_only.
  PipelineAnalysis pipeline;
};

/// discover_inputs() and, when `devices` is not empty, select_devices().
/// Throws InputError.
std::vector<InputFile> find_inputs(const std::vector<std::string>& paths,
                                   const std::string& devices = {});

/// Reads `inputs` and analyses them. A run without a single job is returned
/// as read, with no figures: the caller says so in its own words. Throws
/// std::invalid_argument for a bad stage map or imposed clock offset.
LoadedRun load_run(const std::vector<InputFile>& inputs, const LoadOptions& options);

/// The analysis of a run read elsewhere (rank 0 of `analyze --mpi`), exactly
/// as load_run does it.
LoadedRun analyse_run(Run run, const LoadOptions& options);

}  // namespace pipescope

// Writes a simulated run as Paddle dygraph pipeline profiler records
// (docs/formats.md, "Paddle dygraph pipeline records"): one file
// `profile_record_tmp_file_for_rank_<R>` per device in one folder (as the
// records are gathered for Paddle's helper), a "B" and an "E" record per
// forward and backward job, whole milliseconds, the micro-batch counter of the
// step in the name (`F3`, or `F3_VP1` with cat "virtual pipeline timeline"
// for chunk 1 of an interleaved run), `tid` = stage + 1. The optimizer,
// communication and lr jobs are not recorded by Paddle and not written.
// Optionally also `pipeline_profile.json`, the helper's concatenation, in a
// folder of its own.
//
// expected.json holds the figures of pipeline 0 (the first device of each
// stage: several devices per stage are the data-parallel replicas of the
// records), computed by the independent builder (expected_metrics.h) from
// the written jobs.
//
// Usage:
//   SimConfig config;  config.shape = {ScheduleKind::one_f_one_b, 4, 8};
//   config.resolution_ns = 1'000'000;  // whole ms: required
//   WriteReport report = write_simulated_dygraph(config, {.dir = "out"});
#pragma once

#include <filesystem>

#include "simulate/log_writer.h"

namespace pipescope::sim {

struct DygraphWriterOptions {
  std::filesystem::path dir;
  bool force = false;
  /// When not empty, also write the concatenation `pipeline_profile.json`
  /// of every file (ranks in the helper's order: by file name) here.
  std::filesystem::path concatenation_dir;
};

/// Throws std::invalid_argument for a config the records cannot describe
/// (a resolution that is not whole ms, comm or lr jobs, clock skews, a
/// schedule with split backwards), or for a non-empty folder without force;
/// std::system_error (naming the file) for I/O failures, as model/errors.h
/// says system calls do.
WriteReport write_simulated_dygraph(const SimConfig& config, const DygraphWriterOptions& options);

}  // namespace pipescope::sim

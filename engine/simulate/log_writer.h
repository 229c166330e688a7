// Writes a simulated run as PaddlePaddle worker logs in the discovery layout
// (DIR/workerlog.R, or DIR/machineK/workerlog.R for several machines), one
// GLOG job line per job:
//   I1020 09:15:07.265326 22317 standalone_executor.cc:217] Profiler Info: Job (3),
//   type = forward, micro_batch_id = 2, job_start_time = 1697793307213.760986, job_end_time = ...
// plus DIR/expected.json: the metrics the metric contract implies, computed
// independently of the analysis engine (see expected_metrics.h), and
// DIR/simulation.json: the configuration, for people reading the folder.
//
// Every file is written through io::AtomicOutput (a temporary name renamed
// when complete), so a failed run never leaves a truncated workerlog behind.
//
// Usage:
//   LogWriterOptions options;  options.dir = "out";  options.noise_per_job = 49;
//   WriteReport report = write_simulated_logs(config, options);  // throws on error
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "simulate/expected_metrics.h"
#include "simulate/simulator.h"

namespace pipescope::sim {

/// What the number in `Job (ID)` is (it differs between Paddle versions).
enum class JobIdStyle {
  index,        ///< running index of the job on its device
  counter,      ///< running count of jobs of the same type on the device
  micro_batch,  ///< the job's micro-batch id
};

struct LogWriterOptions {
  std::filesystem::path dir;
  /// Replace the worker logs of a non-empty folder instead of refusing.
  bool force = false;
  /// Print `Schedule Profiler start at step N` at the top of every file.
  std::optional<std::int64_t> first_step;
  /// Average number of noise lines after each job line (0: none); 49 gives
  /// one job line per 50 lines.
  int noise_per_job = 0;
  /// Write each file's job lines in random order instead of time order.
  bool shuffle = false;
  /// Wrap some lines (or their GLOG prefix) in ANSI colour codes.
  bool ansi = false;
  /// End lines with "\r\n".
  bool crlf = false;
  ChunkNaming chunk_naming = ChunkNaming::digit;
  JobIdStyle job_id = JobIdStyle::index;
  /// Fraction digits of the millisecond times: 3, 6 or 9 (see log_format.h).
  int time_decimals = 6;
  /// When non-zero, keep simulating steps past SimConfig::steps until the
  /// folder holds at least this many bytes (stops at a step boundary).
  std::uint64_t target_bytes = 0;
  /// When not empty, also write the same run as .ivl records into this folder
  /// (same layout, `workerlog.R.ivl`; one block per step) through the job
  /// timer's record writer (records/ivl_writer.h). Must differ from dir.
  std::filesystem::path ivl_dir;
  /// Local time − UTC of every printed stamp (GLOG and Python prefixes); a
  /// multiple of 15 minutes within ±14 h.
  std::int64_t utc_offset_ns = 0;
  /// Also write log events (log_events.h) beside the job lines, and where
  /// they must be placed into expected.json's `events`.
  bool events = false;
};

struct WrittenFile {
  std::filesystem::path path;
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t jobs = 0;
};

struct WriteReport {
  std::vector<WrittenFile> files;
  std::filesystem::path expected_path;
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t jobs = 0;
  int steps = 0;
  int devices = 0;
  int machines = 0;
  ExpectedMetrics expected;

  /// Lists a file written and adds it to the totals.
  void add(WrittenFile file) {
    bytes += file.bytes;
    lines += file.lines;
    jobs += file.jobs;
    files.push_back(std::move(file));
  }

  /// Keeps `metrics` as `expected` and writes the two files every writer
  /// leaves beside the run: DIR/expected.json (`expected_path`) and
  /// DIR/simulation.json, holding `simulation` (the configuration). Both go
  /// through io::write_file_atomically; throws std::system_error.
  void write_description(const std::filesystem::path& dir, ExpectedMetrics metrics,
                         std::string_view simulation);
};

/// The fields every simulation.json holds first (after its "format"), as
/// `"key": value` pairs separated by ", ", without braces: "schedule",
/// "stages", "micro_batches", "chunks", "steps" (`steps`, those simulated)
/// and "devices_per_stage".
std::string simulation_shape_fields(const SimConfig& config, int steps);

/// Simulates config and writes the logs, expected.json and simulation.json into options.dir
/// (created when missing). Throws std::invalid_argument for bad options or a
/// non-empty folder without force, std::system_error (naming the file) for I/O
/// failures, as model/errors.h says system calls do.
WriteReport write_simulated_logs(const SimConfig& config, const LogWriterOptions& options);

}  // namespace pipescope::sim

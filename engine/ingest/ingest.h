// Reads a run's input files into the model. The layer between the readers of
// each format and everything above: it picks each file's reader from the
// format table (input_formats.h), runs the readers side by side on the oneTBB
// scheduler, and hands their per-file results to the one merge
// (run_merge.h) that builds the Run.
//
// Usage:
//   std::vector<InputFile> inputs = discover_inputs({"logs/"});  // discovery.h
//   Run run = ingest_inputs(inputs, {});
// or, where the results travel before they are merged (analyze --mpi):
//   std::vector<FileResult> mine = read_input_files(my_inputs, options);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "model/option_words.h"
#include "model/run.h"
#include "source/line_chunker.h"

namespace pipescope {

class EventMatcher;
class JobLineRegex;
class JobPattern;

struct IngestProgress {
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;  ///< sum of the file sizes at discovery
  std::size_t files_done = 0;
  std::size_t files_total = 0;
};

struct IngestOptions {
  /// Worker threads; 0 means one per core.
  unsigned threads = 0;
  ReadLimits limits;
  /// Diagnostics kept per input file (the counts are always complete).
  std::size_t diagnostics_per_file = 5;
  /// Paddle dygraph records or PyTorch traces of several pipelines
  /// (data-parallel replicas): which one to analyse (dygraph_reader.h,
  /// torch_trace_reader.h); unset: pipeline 0.
  std::optional<int> pipeline;
  /// How messages name the caller's options (model/option_words.h): the
  /// note that lists the other pipelines (CallerOption::pipeline), a job
  /// line lost in an over-long line (max_line), the job lines looked for
  /// (job_line). Never null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
  /// Called as files are read (from reader threads, one call at a time;
  /// keep it cheap).
  std::function<void(const IngestProgress&)> on_progress;
  /// Chrome-trace JSON: user-annotation names to jobs instead of PyTorch
  /// pipelining's `PP:` labels (job_pattern.h), compiled once by the caller
  /// and shared by every file's reader; null: the `PP:` labels.
  std::shared_ptr<const JobPattern> job_pattern;
  /// PyTorch traces whose spans come after the launches they hold: the
  /// most bytes of joined kernels (24 each) held until the end of the file;
  /// past it, the trace's kernels are read a second time
  /// (torch_trace_file_reader.h).
  std::size_t trace_held_bytes = std::size_t{64} << 20;
  /// The event library's matcher (scan/event_matcher.h) for text logs; null:
  /// events are off. Owned by the caller, alive while the inputs are read.
  const EventMatcher* events = nullptr;
  /// Why `events` is null, when it is (reported for runs of text logs; ""
  /// with no library: the run then says nothing of events).
  std::string events_off;
  /// Text logs: the lines this regex matches are the jobs, instead of
  /// PaddlePaddle's job lines (scan/job_line_regex.h); null: Paddle's.
  /// Owned by the caller, alive while the inputs are read.
  const JobLineRegex* job_line = nullptr;
};

/// The job lines a text log's reader looks for, for a message that none was
/// found: "lines containing 'Profiler Info: Job'", or "lines matching " and
/// the name of CallerOption::job_line.
std::string job_lines_looked_for(const IngestOptions& options);

/// Throws the InputError for IngestOptions::pipeline naming a pipeline the
/// inputs (`what`: "the traces", ...) do not hold, if it does.
void check_pipeline_choice(const IngestOptions& options, std::size_t pipelines,
                           std::string_view what);

/// Progress shared by the readers running side by side: each reports what it
/// read, the callback sees the sums.
class ProgressMeter {
 public:
  ProgressMeter(const std::vector<InputFile>& inputs, const IngestOptions& options);
  /// Thread-safe.
  void advance(std::uint64_t bytes, std::size_t files);

 private:
  std::mutex mutex_;
  IngestProgress progress_;
  const std::function<void(const IngestProgress&)>& callback_;
};

/// Reads every input with its format's reader. One result per input, in
/// input order. A file that cannot be read is described in its result
/// (InputStats::error and a diagnostic); the others are still read.
std::vector<FileResult> read_input_files(const std::vector<InputFile>& inputs,
                                         const IngestOptions& options);

/// Makes the event library the run's (Run::event_kinds) when a reader looked
/// for events in one of `inputs` (InputFormatSpec::log_events) with
/// `options.events`; ingest_inputs does it, a run assembled elsewhere
/// (`analyze --mpi`) calls it.
void adopt_event_library(Run& run, const std::vector<InputFile>& inputs,
                         const IngestOptions& options);
/// Whether any of `inputs` is of a format log events are looked for in.
bool looks_for_log_events(const std::vector<InputFile>& inputs);
/// The same, told whether the run's inputs were looked at for events (a rank
/// of a partitioned run, which holds only its own files' list).
void adopt_event_library(Run& run, bool looked, const IngestOptions& options);

/// read_input_files() and merge_file_results(): the finalized Run, one
/// Device per input, in input order.
Run ingest_inputs(const std::vector<InputFile>& inputs, const IngestOptions& options);

}  // namespace pipescope

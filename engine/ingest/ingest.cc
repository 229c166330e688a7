#include "ingest/ingest.h"

#include <fmt/core.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <utility>

#include "ingest/input_formats.h"
#include "ingest/run_merge.h"
#include "model/errors.h"
#include "scan/event_matcher.h"
#include "scan/job_line_parser.h"

namespace pipescope {

std::string job_lines_looked_for(const IngestOptions& options) {
  if (options.job_line != nullptr) {
    return fmt::format("lines matching {}", options.words->name(CallerOption::job_line));
  }
  return fmt::format("lines containing '{}'", kJobLineLiteral);
}

void check_pipeline_choice(const IngestOptions& options, std::size_t pipelines,
                           std::string_view what) {
  if (!options.pipeline) return;
  const auto chosen = static_cast<std::size_t>(std::max(*options.pipeline, 0));
  if (chosen < std::max<std::size_t>(pipelines, 1)) return;
  throw InputError(
      fmt::format("pipeline {} asked for, but {} hold {} pipeline{} ({})", chosen, what, pipelines,
                  pipelines == 1 ? "" : "s",
                  pipelines <= 1 ? std::string("0") : fmt::format("0-{}", pipelines - 1)));
}

ProgressMeter::ProgressMeter(const std::vector<InputFile>& inputs, const IngestOptions& options)
    : callback_(options.on_progress) {
  progress_.files_total = inputs.size();
  for (const InputFile& input : inputs) progress_.bytes_total += input.size_bytes;
}

void ProgressMeter::advance(std::uint64_t bytes, std::size_t files) {
  std::lock_guard lock(mutex_);
  progress_.bytes_done += bytes;
  progress_.files_done += files;
  if (callback_) callback_(progress_);
}

std::vector<FileResult> read_input_files(const std::vector<InputFile>& inputs,
                                         const IngestOptions& options) {
  const unsigned threads = options.threads > 0
                               ? options.threads
                               : static_cast<unsigned>(tbb::info::default_concurrency());
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);
  ProgressMeter progress(inputs, options);

  // Each format's files, in input order, with their places in the input list.
  struct Batch {
    const InputFormatSpec* format;
    std::vector<InputFile> files;
    std::vector<std::size_t> index;
    std::vector<FileResult> results;
  };
  std::vector<Batch> batches;
  for (const InputFormatSpec& format : input_formats()) batches.push_back({&format, {}, {}, {}});
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (Batch& batch : batches) {
      if (batch.format->format != inputs[i].format) continue;
      batch.files.push_back(inputs[i]);
      batch.index.push_back(i);
    }
  }

  // The readers run side by side; each spreads its own work over the threads.
  tbb::task_group readers;
  for (Batch& batch : batches) {
    if (batch.files.empty()) continue;
    readers.run([&batch, &options, &progress] {
      batch.results = batch.format->read(batch.files, options, progress);
    });
  }
  readers.wait();

  std::vector<FileResult> results(inputs.size());
  for (Batch& batch : batches) {
    for (std::size_t k = 0; k < batch.results.size(); ++k) {
      results[batch.index[k]] = std::move(batch.results[k]);
    }
  }
  return results;
}

Run ingest_inputs(const std::vector<InputFile>& inputs, const IngestOptions& options) {
  Run run = merge_file_results(read_input_files(inputs, options));
  adopt_event_library(run, inputs, options);
  return run;
}

bool looks_for_log_events(const std::vector<InputFile>& inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](const InputFile& input) {
    return input_format_spec(input.format).log_events;
  });
}

void adopt_event_library(Run& run, const std::vector<InputFile>& inputs,
                         const IngestOptions& options) {
  adopt_event_library(run, looks_for_log_events(inputs), options);
}

void adopt_event_library(Run& run, bool looked, const IngestOptions& options) {
  if (!looked) return;
  if (options.events != nullptr) {
    run.event_kinds = options.events->kinds();
  } else {
    run.events_off = options.events_off;  // "": no library was given, nothing to say
  }
}

}  // namespace pipescope

#include "ingest/ingest.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "ingest/input_formats.h"
#include "ingest/reading_loop.h"
#include "ingest/run_merge.h"
#include "model/events_off.h"
#include "model/option_words.h"
#include "scan/event_matcher.h"

namespace pipescope {

namespace {

/// One format's files through its reader: the reading loop's, or its own.
std::vector<FileResult> read_format(const std::vector<InputFile>& files,
                                    const InputFormatSpec& format, const IngestOptions& options,
                                    ProgressMeter& progress) {
  std::vector<FileResult> results;
  if (format.read) {
    results = format.read(files, options, progress);
  } else {
    const std::unique_ptr<ChunkedFormat> reading = format.chunked(files, options);
    results = read_files_in_chunks(files, *reading, progress);
  }
  for (FileResult& result : results) result.stats.job_annotations = format.takes_job_pattern;
  return results;
}

}  // namespace

std::vector<FileResult> read_input_files(const std::vector<InputFile>& inputs,
                                         const IngestOptions& options) {
  const unsigned threads = options.threads > 0
                               ? options.threads
                               : static_cast<unsigned>(tbb::info::default_concurrency());
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);
  ProgressMeter progress(inputs, options.on_progress);

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

  // The formats run side by side; each spreads its files over the threads.
  tbb::task_group readers;
  for (Batch& batch : batches) {
    if (batch.files.empty()) continue;
    readers.run([&batch, &options, &progress] {
      batch.results = read_format(batch.files, *batch.format, options, progress);
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

void join_file_results(std::vector<FileResult>& results, const std::vector<InputFile>& inputs,
                       const IngestOptions& options) {
  if (results.size() != inputs.size()) {
    throw std::invalid_argument("join_file_results: one result per input expected");
  }
  for (const InputFormatSpec& format : input_formats()) {
    if (format.join == nullptr) continue;
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].format == format.format) index.push_back(i);
    }
    if (index.empty()) continue;
    std::vector<InputFile> files;
    std::vector<FileResult> mine;
    for (const std::size_t i : index) {
      files.push_back(inputs[i]);
      mine.push_back(std::move(results[i]));
    }
    format.join(mine, files, options);
    for (std::size_t k = 0; k < index.size(); ++k) results[index[k]] = std::move(mine[k]);
  }
}

bool joins_files(const std::vector<InputFile>& inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](const InputFile& input) {
    return input_format_spec(input.format).join != nullptr;
  });
}

Run ingest_inputs(const std::vector<InputFile>& inputs, const IngestOptions& options) {
  std::vector<FileResult> results = read_input_files(inputs, options);
  join_file_results(results, inputs, options);
  Run run = merge_file_results(std::move(results));
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
    // EventsOff::none, "": no library was given, nothing to say.
    run.events_off = events_off_reason(options.events_off, *options.words);
  }
}

}  // namespace pipescope

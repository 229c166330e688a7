// The reading of one PyTorch profiler trace into jobs (torch_trace_reader.h
// says what a trace's jobs are; this is how one file becomes them).
//
//  1. Events: the file is pushed chunk by chunk by the reading loop
//     (reading_loop.h: this is the format's ChunkedFileReader): the trace
//     event tokenizer cuts each chunk into events (trace_event_batches.h),
//     each event read alone (torch_trace_event.h: launches and plain kernels by one pass
//     over their bytes, the rest by simdjson) and applied in file order:
//     user annotations naming jobs, `ProfilerStep#N` spans, GPU activities
//     (to the kernel collector: the kernel view's record of the rank, with
//     or without jobs) and the launches they are joined to by correlation id
//     (launch_join.h), whatever their order.
//  2. Each match (a launch's time, its activity's interval) is placed once
//     the spans it needs are known: in the CPU span of a job and in the step
//     span that hold the launch. Kineto writes every CPU event first, so in
//     its order the spans are all in before the first launch, and the matches
//     are placed after each batch. A span read after the first launch (a
//     trace in another order) stops that: the matches are then held (24
//     bytes each, at most IngestOptions::trace_held_bytes) and placed at the
//     end of the file, one pass. Only a span that would move matches already
//     placed, or more matches than that, makes the kernels be read again
//     (a second pass of the loop over the whole file, every span known).
//  3. Jobs are assembled (annotation_jobs.h, the rule an Nsight export's
//     NVTX ranges share): each CPU span's interval chosen (GPU span, else
//     its kernels' span, else the host's), an OVERLAP_F_B range cut into its
//     forward and backward where its kernels show the boundary (else one
//     F+B job), chunks and micro-batches numbered, the steps found.
#pragma once

#include <tbb/enumerable_thread_specific.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ingest/annotation_jobs.h"
#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/job_pattern.h"
#include "ingest/kernel_collector.h"
#include "ingest/launch_join.h"
#include "ingest/read_options.h"
#include "ingest/reading_loop.h"
#include "ingest/torch_trace_options.h"
#include "ingest/trace_event_batches.h"

namespace pipescope {

class TraceEventTokenizer;

/// Reads one trace file, pushed to it by the reading loop once:
/// read_in_chunks(input, reader, progress).
class TorchTraceFileReader final : public ChunkedFileReader {
 public:
  /// `lowest_stage`, when given, receives the lowest pipeline stage the
  /// labels name (at result()), if any.
  TorchTraceFileReader(const InputFile& input, const ReadOptions& read,
                       const TorchTraceOptions& options,
                       std::optional<std::int64_t>* lowest_stage = nullptr);
  ~TorchTraceFileReader() override;

  std::unique_ptr<ChunkState> make_state() override { return std::make_unique<EventBatch>(); }
  /// The chunk's events, cut by the trace event tokenizer.
  bool tokenize(ReadChunk& chunk) override;
  /// Each event read alone (read_plain_event, else parse_event).
  void parse(ReadChunk& chunk) override;
  /// What the events hold, in file order (and the matches placed, step 2).
  void apply(ReadChunk& chunk) override;
  /// A second pass when the held kernels overflowed (step 2).
  bool end_pass(const PassEnd& end) override;
  /// The file's jobs, steps, statistics and diagnostics. The file's content
  /// and I/O never throw (they become `stats.error` and diagnostics);
  /// throws InputError when a job pattern without `mb` meets a trace with
  /// jobs but no ProfilerStep spans.
  FileResult result() override;

 private:
  void note(std::uint64_t offset, std::string message);
  void malformed(std::uint64_t offset, std::string message);
  void on_base_time(std::string_view value);

  // Reading events.
  void first_pass_end(const PassEnd& end);
  void start_second_pass();
  void apply(ParsedEvent& e);
  void apply(const PlainRecord& r);

  // Joining kernels to the CPU spans that launched them.
  void on_span(std::int64_t start, bool step);
  void place_pairs();
  // (the second pass: start_second_pass, under "Reading events")

  // Assembling jobs (annotation_jobs.h), and what a cut trace lost.
  void note_cut(const AnnotationJobs::Timed& timed);

  const InputFile& input_;
  const ReadOptions& read_;
  const TorchTraceOptions& options_;
  std::optional<std::int64_t>* lowest_stage_;
  FileResult out_;
  // The options' job pattern; null: `PP:` labels name the jobs.
  const JobPattern* pattern_;
  // The pass's tokenizer, and the batch its callbacks fill (tokenize).
  std::unique_ptr<TraceEventTokenizer> tokenizer_;
  EventBatch* filling_ = nullptr;
  tbb::enumerable_thread_specific<simdjson::ondemand::parser> parsers_;
  std::int64_t base_ns_ = 0;
  bool base_given_ = false;
  // Byte offset where the file ended inside its events (cut short), if so.
  std::optional<std::uint64_t> cut_offset_;
  // The latest start of a kernel (copy, set) read: how far the GPU's record
  // reaches in a cut trace.
  std::int64_t gpu_latest_start_ = std::numeric_limits<std::int64_t>::min();
  // The job annotations, step spans and the kernels placed in them.
  AnnotationJobs jobs_;
  // Every GPU activity, for the kernel view (FileResult::kernels).
  KernelCollector kernels_;
  // The activities joined to their launches, and how their matches are
  // placed (step 2 above).
  LaunchJoin join_;
  bool late_span_ = false;  // a span read after the first launch
  bool placed_ = false;     // some matches placed before the end
  std::int64_t latest_placed_ = std::numeric_limits<std::int64_t>::min();  // their latest launch
  std::int64_t earliest_step_ = std::numeric_limits<std::int64_t>::max();  // step spans' first
  bool read_again_ = false;   // the kernels are read again (second_pass)
  bool second_pass_ = false;  // reading them again now
};

}  // namespace pipescope

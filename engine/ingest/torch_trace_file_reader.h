// The reading of one PyTorch profiler trace into jobs (torch_trace_reader.h
// says what a trace's jobs are; this is how one file becomes them).
//
//  1. Events: the file is read in batches (trace_event_batches.h), each event
//     parsed alone (torch_trace_event.h) and applied in file order: user
//     annotations naming jobs, `ProfilerStep#N` spans, and kernels joined to
//     the CPU span that launched them (by correlation id) as they come.
//  2. A CPU annotation after the first runtime call breaks Kineto's order
//     (CPU events first, then runtime calls and kernels): the kernels are
//     then joined a second time, every span known: the events before that
//     annotation read again, those from it on replayed from compact copies
//     kept since (at most kReplayBytes, 64 MiB; past that, the whole file is
//     read again).
//     Every GPU activity also goes to the kernel collector (the kernel
//     view's record of the rank, with or without jobs).
//  3. Jobs are assembled: each CPU span's interval chosen (GPU span, else
//     its kernels' span, else the host's), an OVERLAP_F_B range cut into its
//     forward and backward where its kernels show the boundary (else one
//     F+B job), chunks and micro-batches numbered, the steps found.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/job_pattern.h"
#include "ingest/kernel_collector.h"
#include "ingest/trace_event_batches.h"

namespace pipescope {

struct IngestOptions;
class TraceEventTokenizer;

/// Reads one trace file; read() once.
class TorchTraceFileReader {
 public:
  /// Throws std::invalid_argument for a bad job pattern in `options`.
  TorchTraceFileReader(const InputFile& input, const IngestOptions& options);

  /// The file's jobs, steps, statistics and diagnostics. Never throws for the
  /// file's content or I/O (they become `stats.error` and diagnostics);
  /// throws InputError when a job pattern without `mb` meets a trace with
  /// jobs but no ProfilerStep spans.
  FileResult read();

  /// The lowest pipeline stage the labels name (after read()), if any.
  std::optional<std::int64_t> lowest_stage() const { return lowest_stage_; }

 private:
  /// A kernel launched from inside an OVERLAP_F_B span: what tells its
  /// forward's kernels from its backward's.
  struct LaunchedKernel {
    std::int64_t launch = 0;   // the launch's host time
    std::int64_t thread = -1;  // the launch's host thread
    std::int64_t start = 0, end = 0;
  };
  /// An annotation span as kept.
  struct Annotation {
    std::string name;
    std::int64_t start = 0;  // ns after the base
    std::int64_t end = 0;
    std::int64_t external_id = -1;
    std::uint64_t ordinal = 0;  // 1-based event index
    std::uint64_t offset = 0;   // byte offset
    // The kernels launched from inside the span (CPU annotations only).
    std::int64_t kernel_start = std::numeric_limits<std::int64_t>::max();
    std::int64_t kernel_end = std::numeric_limits<std::int64_t>::min();
    std::int64_t thread = -1;  // host thread (`tid`), -1 when not an integer
    // An OVERLAP_F_B range (PP labels): its kernels, each with its launch.
    bool overlap = false;
    std::vector<LaunchedKernel> launched;
  };
  struct KernelSpan {
    std::int64_t start = 0;
    std::int64_t end = 0;
  };
  struct StepSpan {
    std::int64_t start = 0;
    std::int64_t end = 0;
    std::int64_t step = 0;
  };
  /// A job found, before its chunk and micro-batch are numbered.
  struct Pending {
    TraceAction action;
    std::int64_t start, end, host_start;
    std::uint64_t ordinal;
    /// 1 and 2: the first and second sub-action of an OVERLAP_F_B range
    /// (one interval for both until split_overlaps); 0 otherwise.
    int overlap = 0;
    /// The range's index in cpu_ (overlap != 0), and whether split_overlaps
    /// found no boundary in it: one F+B job, both jobs over the whole range.
    std::size_t span = 0;
    bool joined = false;
  };

  void split_overlaps(std::vector<Pending>& pending);
  void note(std::uint64_t offset, std::string message);
  void malformed(std::uint64_t offset, std::string message);
  void on_base_time(std::string_view value);

  // Reading events.
  std::string read_events(TraceEventTokenizer& tokenizer, bool& unreadable,
                          std::uint64_t stop_after = UINT64_MAX);
  void keep_for_replay(const ParsedEvent& e);
  void apply(EventBatch& batch);
  void apply(ParsedEvent& e);

  // Joining kernels to the CPU spans that launched them.
  std::size_t span_at(std::int64_t ts);
  void add_kernel(std::size_t span, std::int64_t start, std::int64_t end);
  void on_launch(std::int64_t correlation, std::int64_t ts, std::int64_t thread);
  void on_kernel(std::int64_t correlation, std::int64_t start, std::int64_t end);
  void second_pass();

  // Assembling jobs, in this order.
  void require_steps_for_pattern();
  std::vector<TraceAction> actions_of(const Annotation& a);
  std::vector<Pending> timed_actions();
  void note_cut(const std::vector<Pending>& pending, std::uint64_t host_timed,
                std::int64_t first_host_timed);
  std::vector<std::int64_t> rank_stages(const std::vector<Pending>& pending);
  void emit_jobs(std::vector<Pending>& pending, const std::vector<std::int64_t>& stages);
  void record_steps();

  const InputFile& input_;
  const IngestOptions& options_;
  std::optional<std::int64_t> lowest_stage_;
  FileResult out_;
  std::optional<JobPattern> pattern_;
  BatchPool batches_;
  std::int64_t base_ns_ = 0;
  bool base_given_ = false;
  // Byte offset where the file ended inside its events (cut short), if so.
  std::optional<std::uint64_t> cut_offset_;
  // The latest start of a kernel (copy, set) read: how far the GPU's record
  // reaches in a cut trace.
  std::int64_t gpu_latest_start_ = std::numeric_limits<std::int64_t>::min();
  std::vector<Annotation> cpu_, gpu_;
  std::vector<StepSpan> steps_;
  std::vector<std::pair<std::int64_t, std::size_t>> span_index_;    // (start, cpu_ index)
  std::unordered_map<std::int64_t, std::size_t> waiting_launches_;  // correlation -> span
  std::unordered_map<std::int64_t, KernelSpan> early_kernels_;      // kernel before its launch
  // Launches from inside an OVERLAP_F_B span still waiting for their kernel.
  std::unordered_map<std::int64_t, LaunchedKernel> overlap_launches_;
  std::int64_t max_launch_correlation_ = -1;
  bool launches_started_ = false;
  bool late_annotation_ = false;
  bool second_pass_ = false;
  // Every GPU activity, for the kernel view (FileResult::kernels).
  KernelCollector kernels_;
  // The second pass's copies of the events (kernels, launches, host calls of
  // communications) from the first late annotation or step on.
  struct Replayed {
    EventClass kind = EventClass::none;
    bool communication = false;
    bool graph = false;
    int gpu = -1;
    std::uint32_t rich = UINT32_MAX;  // index into replay_rich_ (their args, a call's name)
    std::int64_t start = 0, end = 0, correlation = -1, external_id = -1, thread = -1;
  };
  // At most 64 bytes a copy: bench/kernel_order.sh's 48 MB trace keeps 18 MB.
  static_assert(sizeof(Replayed) <= 64);
  static constexpr std::size_t kReplayBytes = std::size_t{64} << 20;
  std::optional<std::uint64_t> replay_from_;  // byte offset of the first late event
  bool replay_overflow_ = false;
  std::vector<Replayed> replay_;
  std::vector<ParsedEvent> replay_rich_;
  std::uint64_t pass_limit_ = UINT64_MAX;  // the second pass applies events before it
  bool late_step_ = false;                 // a ProfilerStep#N span after the first launch
};

}  // namespace pipescope

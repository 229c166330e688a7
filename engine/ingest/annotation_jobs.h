// Jobs made of annotation ranges: host ranges whose names are jobs (PyTorch
// pipelining's `PP:<action>` labels, or a job pattern's names: job_pattern.h),
// each timed by the GPU activities launched inside it. One rule for every
// reader that has such ranges: a PyTorch profiler trace's user annotations
// (torch_trace_file_reader.h) and an Nsight Systems export's NVTX ranges
// (nsys_export.h) give their ranges, step spans and joined launches here,
// and the jobs come out the same way (docs/formats.md, "PyTorch profiler
// traces", "Nsight Systems exports").
//
//  - A job's interval, in order of preference: its GPU range (a trace's
//    `gpu_user_annotation`, matched to the host range by External id, else
//    by name and order) when it covers the activities launched inside the
//    host range; else those activities' span (the first start to the last
//    end); else the host range: the job is host-timed, and a note says how
//    many were.
//  - An activity belongs to the latest-starting range (of the few before)
//    that holds its launch: ranges may nest or overlap (an OVERLAP_F_B pair,
//    a pattern's ranges). The launch's thread does not matter: autograd
//    launches a backward's kernels from its own device thread.
//  - An OVERLAP_F_B range (a `PP:` label: a forward, then a backward) is cut
//    where its kernels show the boundary (the first launch from another
//    thread than the range's), else kept as one F+B job (JobRole::joined).
//  - Chunks and micro-batches are numbered (a pattern without `mb`: per step
//    span, type and chunk), a rank of several stages names its compute types
//    with the chunk (forward0, backward_w1), and the first step is the one
//    holding the first job.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/file_result.h"
#include "ingest/launch_join.h"
#include "ingest/pipeline_action.h"
#include "model/run.h"

namespace pipescope {

class JobPattern;

/// True when `name` is a job's range: `pattern` matches it, else (no
/// pattern) it is a `PP:` label.
bool annotation_job_name(std::string_view name, const JobPattern* pattern);

class AnnotationJobs {
 public:
  /// A host range (or a GPU range) whose name may be a job.
  struct Range {
    std::string name;
    std::int64_t start = 0;  // ns (on the reader's clock: base added at assemble)
    std::int64_t end = 0;
    std::int64_t external_id = -1;
    std::uint64_t ordinal = 0;  // 1-based index in the file: the job's `line`
    std::uint64_t offset = 0;   // where a diagnostic says it is
    std::int64_t thread = -1;   // its host thread, -1 when unknown
  };
  struct StepSpan {
    std::int64_t start = 0;
    std::int64_t end = 0;
    std::int64_t step = 0;
  };
  /// Where the jobs go, and what the messages call things.
  struct Output {
    Device& device;
    TypeTable& types;
    InputStats& stats;
    std::optional<std::int64_t>& first_step;
    std::vector<Warning>& notes;
    std::string_view path;
    /// A step span, as messages name it ("ProfilerStep#N span").
    std::string_view step_span;
    /// The input, as messages name it ("trace").
    std::string_view input;
    /// A note about the input (a diagnostic), `offset` 0 when it has none.
    std::function<void(std::uint64_t offset, std::string message)> note;
    /// A range that could not be read (counted as malformed by the caller).
    std::function<void(std::uint64_t offset, std::string message)> malformed;
  };
  /// The ranges timed, before their chunks and micro-batches are numbered.
  struct Pending {
    TraceAction action;
    std::int64_t start, end, host_start;
    std::uint64_t ordinal;
    /// 1 and 2: the first and second sub-action of an OVERLAP_F_B range
    /// (one interval for both until split_overlaps); 0 otherwise.
    int overlap = 0;
    /// The range's index (overlap != 0), and whether split_overlaps found
    /// no boundary in it: one F+B job, both jobs over the whole range.
    std::size_t span = 0;
    bool joined = false;
  };
  struct Timed {
    std::vector<Pending> pending;
    std::uint64_t host_timed = 0;  // jobs with neither GPU range nor activity
    std::int64_t first_host_timed = std::numeric_limits<std::int64_t>::max();
  };

  /// `pattern`: the job pattern (outlives this); null: `PP:` labels.
  explicit AnnotationJobs(const JobPattern* pattern) : pattern_(pattern) {}

  /// A host range whose name is wanted, in file order.
  void add_range(Range range);
  /// A GPU range of a job (a trace's gpu_user_annotation), in file order.
  void add_gpu_range(Range range);
  /// A step span, in any order.
  void add_step(const StepSpan& step) { steps_.push_back(step); }
  const std::vector<StepSpan>& steps() const { return steps_; }
  bool any_range() const { return !cpu_.empty(); }

  /// Activities joined to their launches: each counts in the range holding
  /// its launch (LaunchPair::launch). Every range must have been given.
  void place(const PairList& pairs);
  /// Forgets the activities placed (a reader that reads them again).
  void forget_activities();

  /// The ranges timed (the rule above). Throws InputError when a pattern
  /// without `mb` meets an input with ranges but no step span. Without
  /// `on_timed`, host-timed jobs are noted (and a host_timed_jobs note kept
  /// for the run); with it, the caller says what it must of them.
  void assemble(std::int64_t base_ns, Output& out,
                const std::function<void(const Timed&)>& on_timed = nullptr,
                std::optional<std::int64_t>* lowest_stage = nullptr);

 private:
  /// A kernel launched from inside an OVERLAP_F_B range: what tells its
  /// forward's kernels from its backward's.
  struct LaunchedKernel {
    std::int64_t launch = 0;   // the launch's host time
    std::int64_t thread = -1;  // the launch's host thread
    std::int64_t start = 0, end = 0;
  };
  struct Annotation {
    Range range;
    // The activities launched from inside the range (host ranges only).
    std::int64_t kernel_start = std::numeric_limits<std::int64_t>::max();
    std::int64_t kernel_end = std::numeric_limits<std::int64_t>::min();
    // An OVERLAP_F_B range (PP labels): its kernels, each with its launch.
    bool overlap = false;
    std::vector<LaunchedKernel> launched;
  };

  std::size_t span_at(std::int64_t ts, std::size_t& hint) const;
  std::vector<TraceAction> actions_of(const Annotation& a, Output& out);
  Timed timed_actions(Output& out);
  void split_overlaps(std::vector<Pending>& pending, Output& out);
  std::vector<std::int64_t> rank_stages(const std::vector<Pending>& pending,
                                        std::optional<std::int64_t>* lowest_stage);
  void emit_jobs(std::vector<Pending>& pending, const std::vector<std::int64_t>& stages,
                 std::int64_t base_ns, Output& out);

  const JobPattern* pattern_;
  std::vector<Annotation> cpu_, gpu_;
  std::vector<StepSpan> steps_;
  std::vector<std::pair<std::int64_t, std::size_t>> span_index_;  // (start, cpu_ index), sorted
};

/// The inputs' host-timed notes (host_timed_jobs, one per input, left by
/// assemble) made one warning for the run, on the first result: host-timed
/// jobs put the host's launch times in place of the GPU's, so the busy time
/// and bubbles they give are not the GPU's, however exact the arithmetic.
/// `inputs` names them in the plural ("traces").
void merge_host_timed_notes(std::vector<FileResult>& results, std::string_view inputs);

}  // namespace pipescope

// The join of a trace's GPU activities to the runtime calls that launched
// them (same `args.correlation`), for both views of a PyTorch profiler trace,
// in one pass over the events in file order, whatever that order is.
//
// The join itself needs no span: an activity and its launch meet by
// correlation id, whichever comes first waiting in a table, so only the
// unmatched ones are held. What needs the spans is where a launch falls (the
// CPU span of a job, the ProfilerStep#N of a step), and Kineto may write a
// span after the launches it holds. So each match is kept as a LaunchPair
// (the launch's time and thread, the activity's interval), 32 bytes, and placed in its
// span once the spans it needs are known (torch_trace_file_reader.h says
// when): collect, then place once.
//
// Two rules share the table, one per view (docs/guide.md, "The kernel view";
// docs/formats.md, "PyTorch profiler traces"):
//  - The kernel view: every activity takes the launch with its correlation,
//    before or after it in the file; a graph launch (cudaGraphLaunch) is kept
//    for every activity of the graph. An activity that never meets a launch
//    is counted (unmatched_activities).
//  - The job view: a launch takes one activity, the first after it or the
//    last before it; an activity before its launch waits only while its
//    correlation is above every launch's read so far (ids count up: one
//    below is taken for an activity whose launch the trace lacks).
// The two give the same pair nearly always: a pair both take is kept once.
// A launch that no span holds takes its activity all the same, and the pair
// is placed nowhere; the reader that joined launch by launch skipped such a
// launch in the job view, which differs only where one id is launched twice.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

namespace pipescope {

/// A launch's host time and the interval of the activity it launched (ns
/// after the trace's base).
struct LaunchPair {
  std::int64_t launch = 0;
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::int64_t thread = -1;  ///< the launch's host thread (an OVERLAP_F_B range's split reads it)
};

/// A communication kernel's launch: its index in the kernel record's
/// communication list, the launch's host time and thread.
struct CommLaunch {
  std::size_t comm = 0;
  std::int64_t launch = 0;
  std::int64_t thread = -1;
};

/// LaunchPairs in blocks of a fixed size: growing it copies nothing and
/// touches only the memory it holds.
class PairList {
 public:
  void push_back(const LaunchPair& p) {
    if (size_ % kBlock == 0 && size_ / kBlock == blocks_.size()) {
      blocks_.push_back(std::make_unique<LaunchPair[]>(kBlock));
    }
    blocks_[size_ / kBlock][size_ % kBlock] = p;
    ++size_;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Empties the list and gives its memory back.
  void clear() {
    blocks_.clear();
    size_ = 0;
  }
  template <typename F>
  void for_each(F&& f) const {
    for (std::size_t b = 0; b * kBlock < size_; ++b) {
      const LaunchPair* block = blocks_[b].get();
      const std::size_t n = std::min(kBlock, size_ - b * kBlock);
      for (std::size_t i = 0; i < n; ++i) f(block[i]);
    }
  }

 private:
  static constexpr std::size_t kBlock = 4096;  // 128 KiB
  std::vector<std::unique_ptr<LaunchPair[]>> blocks_;
  std::size_t size_ = 0;
};

class LaunchJoin {
 public:
  LaunchJoin();

  /// A call that launched GPU work, in file order; `graph`: a CUDA (HIP)
  /// graph launch, whose activities share its correlation id.
  void on_launch(std::int64_t correlation, std::int64_t ts, std::int64_t thread, bool graph);
  /// A GPU activity with a correlation id (>= 0), in file order; `comm`: its
  /// index in the communication list, or -1 for a compute activity.
  void on_activity(std::int64_t correlation, std::int64_t start, std::int64_t end, long comm);
  /// Asks for the memory of `correlation`'s entry ahead of a call for it.
  void prefetch(std::int64_t correlation) const { __builtin_prefetch(&slots_[home(correlation)]); }

  /// The matches found and not yet taken: those of both views, of the
  /// kernel view only, of the job view only.
  const PairList& both() const { return both_; }
  const PairList& kernel_view_only() const { return kernel_only_; }
  const PairList& job_view_only() const { return job_only_; }
  /// The communication kernels' launches found and not yet taken (their
  /// pairs are among the kernel view's too).
  const std::vector<CommLaunch>& comm_launches() const { return comm_; }
  /// How many pairs are held (both, kernel view only, job view only).
  std::size_t pairs() const { return both_.size() + kernel_only_.size() + job_only_.size(); }
  /// The latest launch among the matches found and not yet taken
  /// (INT64_MIN when none).
  std::int64_t latest_paired_launch() const { return latest_paired_; }
  /// Forgets the matches held (after they were placed); the table stays.
  void clear_pairs();

  /// The earliest launch read (INT64_MAX before any).
  std::int64_t earliest_launch() const { return earliest_launch_; }
  /// Whether any launch was read.
  bool any_launch() const { return any_launch_; }
  /// Activities still waiting for their launch (the kernel view's count; at
  /// the end of the file, those without a launch in the trace).
  std::size_t unmatched_activities() const { return waiting_activities_; }

 private:
  /// An activity waiting for its launch.
  struct Early {
    std::int64_t start = 0;
    std::int64_t end = 0;
    long comm = -1;
  };
  /// What an id holds besides its launch, seldom: activities waiting for
  /// their launch (the kernel view's; the job view's one).
  struct Rare {
    Early first;              // the kernel view's first (the rest in more_)
    std::uint32_t early = 0;  // the kernel view's count
    bool job_early = false;   // the job view's
    std::int64_t job_start = 0;
    std::int64_t job_end = 0;
  };
  static constexpr std::uint32_t kNone = UINT32_MAX;
  enum : std::uint8_t { kLaunch = 1, kGraph = 2, kJobWaiting = 4 };
  /// One correlation id's state under both rules, 40 bytes.
  struct Slot {
    std::int64_t key = kEmpty;
    std::int64_t ts = 0;       // the kernel view's launch (kLaunch)
    std::int64_t thread = -1;  // its thread
    std::int64_t job_ts = 0;   // the job view's launch waiting (kJobWaiting)
    std::uint32_t rare = kNone;
    std::uint8_t flags = 0;
  };
  static constexpr std::int64_t kEmpty = std::numeric_limits<std::int64_t>::min();

  std::size_t home(std::int64_t key) const {
    // Fibonacci hashing: ids that count up spread over the table.
    const auto h = static_cast<std::uint64_t>(key) * 0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>(h >> 32) & (slots_.size() - 1);
  }
  Slot& find_or_add(std::int64_t key);
  Slot* find(std::int64_t key);
  void erase(Slot& slot);
  void grow();
  Rare& rare(Slot& slot);
  void release(Slot& slot);

  // Open addressing, linear probing, erasure by backward shift: the slots
  // held are only the unmatched ids, so the table stays small.
  std::vector<Slot> slots_;
  std::size_t used_ = 0;
  std::vector<Rare> rare_;
  std::vector<std::uint32_t> free_rare_;
  std::vector<std::pair<std::int64_t, Early>> more_;  // further early activities (graphs)

  void pair(PairList& list, const LaunchPair& p) {
    latest_paired_ = std::max(latest_paired_, p.launch);
    list.push_back(p);
  }

  PairList both_, kernel_only_, job_only_;
  std::vector<CommLaunch> comm_;
  std::int64_t latest_paired_ = std::numeric_limits<std::int64_t>::min();
  std::int64_t max_launch_correlation_ = -1;
  std::int64_t earliest_launch_ = std::numeric_limits<std::int64_t>::max();
  bool any_launch_ = false;
  std::size_t waiting_activities_ = 0;
};

}  // namespace pipescope

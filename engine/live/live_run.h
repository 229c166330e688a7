// The steps of a run that is still being written (`pipescope watch`): whole
// lines of each input go in as they are appended (source/file_follower.h),
// and each step comes out once it is complete, with the figures `analyze`
// gives it. Nothing here is a second implementation of the metrics: the jobs
// of the steps still open, plus the last step reported (the context every
// later window and the complete-step rule read), form a small Run that goes
// through the same launch-segment split, metrics and bubble split as a whole
// run; a step is reported when the contract calls it complete and it is not
// the last step of the last segment (that one waits for the next step, or
// for the end of the run). Reported steps' jobs are dropped, so memory
// depends on the open steps, never on the length of the run.
//
// When the figures can differ from the final pass (docs/guide.md, "Watching
// a running job"): several machines (the final pass may correct their
// clocks), an input that has not logged the step yet (a rank whose file is
// still empty, or whose log lags behind: its step is reported without it,
// provisional, never counting it idle), and a job line that lands after its
// step was reported (LiveRun::notes).
//
//   LiveRun live;
//   live.set_inputs(find_inputs(paths));
//   live.add_lines(path, follower.poll().lines, restarted);
//   for (const LiveStep& step : live.take_completed(false)) print(step);
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/pipeline.h"
#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "model/run.h"

namespace pipescope {

class EventMatcher;
class JobLineRegex;

/// One completed step as reported live.
/// A log event reported with its step (docs/guide.md, "Log events").
struct LiveEvent {
  int device = 0;  ///< global device index
  std::string id;
  std::string category;
  std::string severity;
  /// From the step window's start (negative: in the gap before the window).
  std::int64_t offset_ns = 0;
  bool approximate = false;
};

struct LiveStep {
  /// Launch segment (LaunchSegment::index in the whole run) and step number.
  int segment = 0;
  std::int64_t step = 0;
  /// "12", or "1:12" once the run has more than one launch segment.
  std::string label;
  /// The window [start_ns, end_ns), epoch nanoseconds, as logged.
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// The contract's bubble ratio of the step.
  double bubble_ratio = 0;
  /// Devices in D when it was reported.
  std::size_t devices = 0;
  /// Inherent and excess idle as points of the bubble ratio (bubble_split.h);
  /// unset when the schedule has no job list to simulate.
  std::optional<double> inherent_points;
  std::optional<double> excess_points;
  /// The stage whose jobs the others waited for longest in comm jobs (receive
  /// and send waits, bubble_split.h); unset when no comm time was waited.
  std::optional<std::size_t> most_waited_stage;
  /// The ratio lies beyond the run's recent spread (LiveOptions).
  bool beyond_spread = false;
  /// The final pass may give other figures (see the header comment).
  bool provisional = false;
  /// Devices (global indices) that had not logged this step when it was
  /// reported: a rank whose file is still empty or whose log lags behind the
  /// others. The step's figures leave them out (they are not counted idle);
  /// the line is provisional and never beyond the spread.
  std::vector<int> unwritten;
  /// The log events in the window and in the gap before it, in time order.
  std::vector<LiveEvent> events;

  std::int64_t window_ns() const { return end_ns - start_ns; }
};

struct LiveOptions {
  /// The pipeline analysis of each step (stage map); clock correction is
  /// never applied live.
  PipelineOptions pipeline;
  /// Recent spread: the last `spread_steps` reported ratios; a ratio is
  /// beyond it when it is further from their median than `spread_mads`
  /// median absolute deviations, and at least `spread_floor` (a ratio), once
  /// `spread_min_steps` steps were reported.
  std::size_t spread_steps = 20;
  std::size_t spread_min_steps = 5;
  double spread_mads = 3.0;
  double spread_floor = 0.005;
  /// While an input has no job yet, steps are held until this many are
  /// complete (then reported, provisional), so that a rank whose first lines
  /// land a little later is counted in D from the first step.
  std::size_t hold_steps = 10;
  /// Longest line parsed, as for analyze.
  std::size_t max_line_bytes = std::size_t{1} << 20;
  /// The --job-line regex, as for analyze (IngestOptions::job_line); null:
  /// Paddle's job lines. Owned by the caller, alive as long as the LiveRun.
  const JobLineRegex* job_line = nullptr;
  /// The number of the first step when no input says it (analyze's
  /// LoadOptions::first_step).
  std::optional<std::int64_t> first_step;
  /// The event library's matcher (scan/event_matcher.h); null: no event is
  /// looked for. Owned by the caller, alive as long as the LiveRun.
  const EventMatcher* events = nullptr;
};

class LiveRun {
 public:
  explicit LiveRun(LiveOptions options = {});
  ~LiveRun();
  LiveRun(const LiveRun&) = delete;
  LiveRun& operator=(const LiveRun&) = delete;

  /// The inputs as discovery found them now (devices' places may shift when
  /// a machine folder appears); new paths are added, none is removed.
  void set_inputs(const std::vector<InputFile>& inputs);

  /// Whole lines appended to input `path` (each ending in '\n').
  /// `restarted`: the file was truncated or replaced, `lines` begin its new
  /// content (jobs already read are kept: they were the run's).
  void add_lines(const std::string& path, std::string_view lines, bool restarted = false);

  /// Jobs of input `path` read by its format's reader (.ivl records, Paddle
  /// dygraph records, a profiler trace; engine/live/live_source.h): `batch`'s
  /// device.jobs in file order, their type ids indexing batch.types, and its
  /// step starts, numbered as the jobs' lines. `restarted` as for add_lines.
  void add_jobs(const std::string& path, const FileResult& batch, bool restarted = false);

  /// The device index the input's reader gave it (dygraph records: the
  /// stage, as analyze places them), kept over set_inputs().
  void place_input(const std::string& path, int device);
  /// The input is not analysed (records of another pipeline): its jobs are
  /// ignored and no step waits for it.
  void leave_out(const std::string& path);

  /// The steps that became complete since the last call, in order. `at_end`:
  /// the input is over (idle): the last step is reported too when the
  /// contract calls it complete.
  std::vector<LiveStep> take_completed(bool at_end);

  /// What a person should be told (a rank appearing late, a late job line,
  /// a rotation), once each; cleared by the call.
  std::vector<std::string> take_notes();

  /// Jobs read so far, and steps reported so far.
  std::uint64_t jobs_seen() const { return jobs_seen_; }
  std::uint64_t steps_reported() const { return steps_reported_; }
  /// Jobs held now (the open steps and the context step).
  std::size_t jobs_kept() const;

 private:
  struct Input;
  void note_restart(const std::string& path);
  void accept(const std::string& path, Input& input, const std::vector<Job>& jobs,
              const std::vector<StepStartLine>& starts);
  Run build_window() const;
  /// Inputs analysed but not in the window: no job yet, or none at or after
  /// the last reported step (their log lags); their devices, in order.
  std::vector<int> unwritten_devices() const;
  bool several_machines() const;
  bool waiting_for_input() const;
  bool map_waits() const;
  bool beyond_spread(double ratio) const;

  /// Places input's new events (scan) once its job lines anchor its stamps.
  void take_events(Input& input, std::uint64_t base);
  /// Moves the held events up to `end_ns` into `step` (window and gap before).
  void attach_events(LiveStep& step);

  LiveOptions options_;
  /// Placed events not yet reported, in arrival order.
  struct HeldEvent {
    std::int64_t time_ns = 0;
    int device = 0;
    std::uint32_t kind = 0;
    bool approximate = false;
  };
  std::vector<HeldEvent> held_events_;
  struct Scanner;
  std::unique_ptr<Scanner> scanner_;
  TypeTable types_;
  std::map<std::string, Input> inputs_;  // by path
  /// The last step reported: the window's first step (segment in the whole
  /// run, number).
  std::optional<std::pair<int, std::int64_t>> context_;
  std::int64_t context_start_ns_ = 0;
  int segments_seen_ = 1;
  std::deque<double> recent_;
  std::uint64_t jobs_seen_ = 0;
  std::uint64_t steps_reported_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace pipescope

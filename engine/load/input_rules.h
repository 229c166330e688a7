// What the analysis does with a rank that is missing, unreadable or empty
// (docs/guide.md, "Missing, unreadable and empty ranks"): one rule for every
// command, applied by load_run. Each finding is a warning with its code
// (summary.json "warnings", and stderr; severity input in model/warning.h):
//   unreadable_input  an input that could not be opened or read (an I/O error,
//                     not damaged content): refused (InputError) unless the
//                     caller allows it; then its device is left out of D
//   empty_input       an input without a single job (an empty file, a rank
//                     that never ran a job): its device is left out of D
//                     instead of counting as a device idle all run
//   rank_gap          a machine whose rank numbers skip some (workerlog.0, 1,
//                     3): the missing ranks are named
//   uneven_ranks      a machine with another number of ranks than most
//                     machines of the run
//   short_device      a device that ran far fewer compute jobs per step (less
//                     than half) than its stage peers (every other device
//                     when each device is its own stage)
// A left-out device is listed in Run::left_out; its input keeps its stats.
//
// Usage (load_run does this):
//   refuse_unreadable(run, rules);               // throws InputError
//   refuse_unplaced(run);                        // throws InputError
//   refuse_duplicate_inputs(run);                // throws InputError
//   refuse_separate_runs(run);                   // throws InputError
//   auto warnings = check_rank_layout(run);      // before leaving devices out
//   append(warnings, leave_out_devices(run));
//   place_traces_by_rank(run);
//   ... analyse ...
//   append(warnings, check_short_devices(run, metrics, stages));
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/data_quality.h"
#include "analysis/metrics.h"
#include "analysis/stage_map.h"
#include "model/option_words.h"
#include "model/run.h"
#include "model/separate_runs.h"

namespace pipescope {

/// True for the name of a warning of severity input (model/warning.h: the
/// codes above), which `check` refuses to compare; false for any other
/// text, a code this version does not know included.
bool is_input_warning(std::string_view code);

struct InputRules {
  /// Leave an unreadable input's device out (with a warning) instead of
  /// refusing the run.
  bool allow_unreadable = false;
  /// The refusal ends with the advice of CallerOption::allow_missing (how
  /// the caller allows it, in its own words: model/option_words.h), when it
  /// has one. Never null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
  /// Look for rank gaps and uneven machines. Off when the caller selected
  /// devices: a selection leaves gaps on purpose.
  bool check_layout = true;
};

/// Throws InputError naming every unreadable input (path and error) unless
/// `rules.allow_unreadable`.
void refuse_unreadable(const Run& run, const InputRules& rules);

/// Throws InputError naming every input whose format states a time base
/// that it lacks (TimeBase::missing: a PyTorch trace cut before its
/// `baseTimeNanoseconds`) while other inputs have theirs: its times cannot
/// be placed on theirs. When no input has one, times are as written.
void refuse_unplaced(const Run& run);

/// Throws InputError naming two inputs on different machines that hold the
/// same jobs, time for time, in files of the same bytes (a backup copy of a
/// machine folder beside the real one). Only such pairs are read again, to
/// compare their bytes. Identical jobs in files that differ are not a copy
/// (a simulator's tensor-parallel peers, replicas drawn with equal costs).
void refuse_duplicate_inputs(const Run& run);

// The three whole-run rules below in parts, for a run whose devices' jobs
// are on different processes (distributed/partitioned_load.h): what each
// device gives (its fingerprint, its span, its job count) is gathered, and
// the rule is decided from those alone. The whole-run forms call these.

/// A device's jobs in two words: equal for two devices holding the same
/// jobs, time for time (a 64-bit hash besides the count).
struct DeviceFingerprint {
  std::uint64_t jobs = 0;
  std::uint64_t print = 0;
};
DeviceFingerprint device_fingerprint(const Device& device);

/// Whether two inputs, devices at positions a and b of run.devices, hold the
/// same jobs in files of the same bytes.
using SameInputs = std::function<bool(std::size_t a, std::size_t b)>;

/// The pairs (positions in run.devices) refuse_duplicate_inputs asks about,
/// in the order it asks: same fingerprint, at least two jobs, different
/// machines. `prints`: one per device.
std::vector<std::pair<std::size_t, std::size_t>> duplicate_candidates(
    const Run& run, const std::vector<DeviceFingerprint>& prints);

/// refuse_duplicate_inputs, asking `same` about each candidate pair in turn.
void refuse_duplicate_inputs(const Run& run, const std::vector<DeviceFingerprint>& prints,
                             const SameInputs& same);

/// Whether two files hold the same bytes; false when either cannot be read.
bool same_file_bytes(const std::string& a, const std::string& b);

/// Throws InputError when the devices fall into two groups in time, every
/// device of one ending at least kSeparateRunsGapNs (model/separate_runs.h)
/// before any device of the other begins (an older run in a sub-folder): no
/// device spans both, so it is no relaunch. The message names both groups' folders.
void refuse_separate_runs(const Run& run);

/// A device's time range: its first start and last end (none without jobs).
struct DeviceSpan {
  bool has_jobs = false;
  std::int64_t first = 0;
  std::int64_t last = 0;
};
DeviceSpan device_span(const Device& device);

/// refuse_separate_runs from each device's span (one per run.devices).
void refuse_separate_runs(const Run& run, const std::vector<DeviceSpan>& spans);

/// rank_gap and uneven_ranks warnings, from the devices of `run` as read
/// (call it before leave_out_devices: an empty input is a rank present).
std::vector<Warning> check_rank_layout(const Run& run);

/// Moves every device whose input is unreadable or holds no job from
/// run.devices to run.left_out, with an unreadable_input or empty_input
/// warning each. `run.devices` must still hold one device per input, in
/// input order (as the merge builds it). Call refuse_unreadable first.
std::vector<Warning> leave_out_devices(Run& run);

/// The same, with each device's job count given (one per run.devices): for a
/// run that holds the jobs of only some of its devices.
std::vector<Warning> leave_out_devices(Run& run, const std::vector<std::uint64_t>& job_counts);

/// The devices of PyTorch traces placed by the one rank rule
/// (analysis/kernel_view.h, trace_ranks; docs/guide.md "The kernel view"),
/// not by their files' names: within each machine, the traces' devices take
/// that machine's places in global-rank order (each place keeps its index,
/// machine and rank; RankKernels::device follows its trace). A trace
/// without distributedInfo whose name sorts last is then still rank 0 of
/// the job view. Nothing moves when the rule refuses (the kernel view says
/// why). Call it after leave_out_devices.
void place_traces_by_rank(Run& run);

/// short_device warnings: devices (positions in run.devices, as `metrics`
/// and `stages`) whose forward, backward and optimizer jobs per step of
/// their own are less than half the median of their stage peers'.
std::vector<Warning> check_short_devices(const Run& run, const Metrics& metrics,
                                         const StageMap& stages);

/// The same from each device's counts, for a run held in parts (`run`'s
/// devices read for their index and path, `metrics` for each device's
/// steps): its jobs, and its forward, backward and optimizer jobs in a step
/// (compute_jobs_in_steps).
std::vector<Warning> check_short_devices(const Run& run, std::span<const std::uint64_t> job_counts,
                                         std::span<const std::uint64_t> compute_in_steps,
                                         const Metrics& metrics, const StageMap& stages);

/// The forward, backward and optimizer jobs of `device` (of `run`, whose
/// types name them) that are in a step (job_step[i] >= 0).
std::uint64_t compute_jobs_in_steps(const Run& run, const Device& device,
                                    std::span<const std::int32_t> job_step);

}  // namespace pipescope

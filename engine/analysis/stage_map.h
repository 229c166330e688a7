// Which devices form one pipeline stage. A stage is a group of devices that
// run the same pipeline ops (a tensor-parallel group); stages are numbered in
// pipeline order. Devices are referred to by position in Run::devices.
//
// Specs (the `--stages` option of `analyze`):
//   ""  or "device"   one stage per device, in device order (the default)
//   "tp=4"            groups of 4 consecutive devices
//   "0-3,4-7"         one comma-separated item per stage, of global device
//                     indices: N, A-B, or A+B+C for devices that are not
//                     consecutive ("0+4,1+5")
//   "auto"            the guess of guess_stage_map()
//
// Usage (the spec parsed once where it is given, resolved against a run):
//   StageSpec spec = parse_stage_spec("tp=2", "--stages");  // throws std::invalid_argument
//   StageMap stages = resolve_stage_map(run, spec, "--stages");  // throws too
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/job.h"
#include "model/run.h"

namespace pipescope {

/// Where a stage map came from.
enum class StageSource : std::uint8_t {
  device,     ///< one stage per device
  tp,         ///< `tp=N`: groups of N consecutive devices
  list,       ///< one item per stage, given
  automatic,  ///< guess_stage_map()
  layout,     ///< a layout's stages (layout.h)
};

/// "device", "tp", "list", "auto", "layout": summary.json's `stages.source`.
std::string_view stage_source_name(StageSource source);

/// A stage map as given (the spec above), parsed once; resolve_stage_map
/// makes it a StageMap of a run's devices.
struct StageSpec {
  enum class Form : std::uint8_t {
    none,       ///< not given: the layout's stages
    device,     ///< "device"
    automatic,  ///< "auto"
    tp,         ///< "tp=N"
    list,       ///< one item per stage
  };
  Form form = Form::none;
  /// Form::tp: the group size (at least 1).
  std::int64_t tp = 0;
  /// Form::list: each stage's global device indices, in the order given.
  std::vector<std::vector<std::int64_t>> groups;
  /// As given, for messages.
  std::string text;

  bool given() const { return form != Form::none; }
};

/// Parses a spec (see above; "" gives Form::none). Throws
/// std::invalid_argument for a malformed one, the message starting with
/// `label` and the spec.
StageSpec parse_stage_spec(std::string_view spec, std::string_view label);

struct StageMap {
  /// stage_of[d]: the stage of the device at position d of Run::devices.
  std::vector<int> stage_of;
  /// devices[s]: positions of stage s's devices, ascending.
  std::vector<std::vector<std::size_t>> devices;
  /// Where the map came from.
  StageSource source = StageSource::device;

  /// A layout's pairing (analysis/layout.h), else empty: slot_of[d] is the
  /// place of device d in its stage's copies (replica × tp + peer), and
  /// slots[s][k] the device of stage s in slot k (npos for a missing rank).
  std::vector<std::size_t> slot_of;
  std::vector<std::vector<std::size_t>> slots;

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  std::size_t stage_count() const { return devices.size(); }
  /// Position of device d within its stage (its tensor-parallel rank).
  std::size_t rank_in_stage(std::size_t d) const;
  /// The device of `stage` that device d exchanges data with: the one in
  /// the same slot (same replica, same peer) with a layout's pairing, else
  /// the (rank_in_stage(d) mod size)-th; npos when there is none.
  std::size_t partner(std::size_t d, std::size_t stage) const;
};

/// One stage per device.
StageMap one_stage_per_device(std::size_t device_count);

/// Groups consecutive devices of one machine whose job sequences are the same
/// (type and micro-batch of every job) and whose jobs start at nearly the same
/// times (within a quarter of the job's length for 90% of them): tensor-parallel
/// peers. Devices of different stages differ in order or are offset by whole
/// jobs. Falls back to one stage per device when nothing groups.
StageMap guess_stage_map(const Run& run);

/// Builds the map a spec describes for `run`'s devices (Form::none and
/// device: one stage per device). Throws std::invalid_argument naming the
/// problem: tp=N not dividing the device count, an index that is not an
/// analysed device, a device in two stages or in none; the message starts
/// with `label` (what the caller calls the spec) and the spec.
StageMap resolve_stage_map(const Run& run, const StageSpec& spec,
                           std::string_view label = "stage map");
/// The same from the spec's text (parse_stage_spec, then the above).
StageMap resolve_stage_map(const Run& run, std::string_view spec,
                           std::string_view label = "stage map");

/// Why a stage of `map` given by the user (tp or list) does not look like
/// one stage, one line per such stage: devices of one stage (tensor-parallel
/// peers) run the same jobs at nearly the same times, so a device whose job
/// order differs from its stage's first device, or most of whose jobs do not
/// overlap the first device's same job at all (one waits for the other: a
/// pipeline dependency), is named with the first such job as evidence. Empty
/// for a map that fits.
std::vector<std::string> stage_map_contradictions(const Run& run, const StageMap& map);

/// What two devices' jobs show compared index by index (job i of one with
/// job i of the other) over a range of indices: all that guess_stage_map and
/// stage_map_contradictions read of the jobs. The evidence of consecutive
/// index ranges merges in order (merge_job_pair_evidence), so a run held in
/// parts (each rank a range of every device's job indices) gives the
/// comparison of the whole devices exactly.
struct JobPairEvidence {
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  /// The first index whose jobs differ in type or micro-batch (npos: none),
  /// and those jobs, the first device's and the second's.
  std::size_t mismatch = npos;
  Job mismatch_a;
  Job mismatch_b;
  /// Before the mismatch (every index compared when none): the indices whose
  /// starts are within a quarter of the longer job of each other...
  std::uint64_t close = 0;
  /// ... and those whose jobs (both of positive length) do not overlap at
  /// all, with the first such index and its jobs.
  std::uint64_t apart = 0;
  std::size_t first_apart = npos;
  Job apart_a;
  Job apart_b;
};

/// The evidence of jobs first, first + 1, ... of two devices: a[i] and b[i]
/// are their jobs first + i (compared up to the shorter span).
JobPairEvidence compare_job_range(std::span<const Job> a, std::span<const Job> b,
                                  std::size_t first);

/// Adds the evidence of the indices right after `into`'s.
void merge_job_pair_evidence(JobPairEvidence& into, const JobPairEvidence& next);

/// What the stage map's checks read of a run's jobs: each device's job
/// count, the first job's start, and any two devices' comparison (whole
/// devices). One process takes it from its run (stage_job_evidence); the
/// partitioned analysis from facts combined across ranks.
struct StageJobEvidence {
  std::vector<std::uint64_t> job_counts;                           ///< by position in Run::devices
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();  ///< the first job's start
  /// The comparison of devices a and b (positions, a < b); called only for
  /// the pairs stage_check_pairs names.
  std::function<JobPairEvidence(std::size_t a, std::size_t b)> compare;
};

/// The evidence of a run that holds all its jobs.
StageJobEvidence stage_job_evidence(const Run& run);

/// The pairs of devices (a < b) whose comparison the checks of `map` read
/// (stage_map_contradictions for a map given as tp or list, the guess
/// against a map of one stage per device): `job_counts` as in
/// StageJobEvidence. For a run held in parts, which compares only these.
std::vector<std::pair<std::size_t, std::size_t>> stage_check_pairs(
    const Run& run, const StageMap& map, std::span<const std::uint64_t> job_counts);

/// guess_stage_map and stage_map_contradictions from the evidence: `run`'s
/// devices are read for their machine and index only (their jobs may be
/// absent).
StageMap guess_stage_map(const Run& run, const StageJobEvidence& evidence);
std::vector<std::string> stage_map_contradictions(const Run& run, const StageMap& map,
                                                  const StageJobEvidence& evidence);

/// "0-3" / "0+4" / "5": the global indices of a stage's devices, compactly; more than
/// 8 devices that are not consecutive as "24-31+56-63+88-95+... (64 devices)".
std::string describe_stage_devices(const Run& run, const StageMap& map, std::size_t stage);

}  // namespace pipescope

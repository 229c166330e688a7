// Checks of the input that make other figures doubtful; each finding is a
// warning (summary.json "warnings", and stderr), never an error. The codes and
// what each means: model/warning.h (overlap, nonpositive_length,
// missing_steps, job_count_mismatch, incomplete_steps, no_complete_step,
// short_step, time_outlier).
//
// Usage:
//   for (const Warning& w : check_data_quality(run, metrics, stages)) ...
//
// By parts (the partitioned analysis, analysis/step_partition.h; CONTRIBUTING.md
// "Make a figure partitionable"): each part reads only what it holds (its
// PartRun) and the whole run's cheap facts (the windows, segments and step
// counts of Metrics, the stage map, each device's job count), in two rounds:
//
//   QualityPart part{held.run, held.job_step, &held.job_index, plan.bounds[p],
//                    plan.bounds[p + 1]};
//   evidence[p] = quality_evidence(part, metrics, stages, device_jobs);    // every part
//   QualityFences fences = quality_fences(evidence, metrics, stages);      // once
//   findings[p] = quality_findings(part, metrics, stages, fences, p);      // every part
//   warnings = quality_warnings(run, metrics, stages, evidence, findings); // once
//
// How the parts combine, warning by warning (each job is counted by the part
// that owns its step; "first" is the smallest whole-run position or step,
// whichever part found it, so any order of the parts gives the same):
//   - overlap: a job overlaps when it starts before the latest end of the
//     device's earlier jobs of positive length. A part holds every job between
//     its first and last owned job of each device (step_partition.h), so it
//     walks them itself; the latest end before its first job is the one fact
//     it lacks. Round 1 gives, per device, the latest end over its held range
//     and at the first job of each other part's step inside that range;
//     quality_fences puts them together into that fact for every part (every
//     earlier position lies in some part's range, so the pieces cover it
//     exactly); round 2 walks with it.
//   - nonpositive_length, time_outlier: counts and first jobs of the owned
//     jobs; the outliers' fences are the quartiles of a sample taken at a
//     stride over whole-run positions (devices in a row, PartRun::job_index),
//     so the sample is the whole run's whatever the split, and the quartiles
//     are selected by counting over the parts' sorted samples
//     (select_rank_by_count), never gathered.
//   - missing_steps, incomplete_steps, no_complete_step: Metrics, plus the job
//     counts and "began a later step" flags the owners of the first incomplete
//     step and of its segment's later steps give (integer sums, ors).
//   - job_count_mismatch: a step's jobs are all its owner's: mismatched steps
//     add up, the first step is the smallest.
//   - short_step: against stage peers, a step's own (its owner judges it);
//     alone in its stage, against the median of the device's complete steps
//     in the segment, selected by counting over the parts' histograms of job
//     counts (quality_fences), then judged by each owner (round 2).
// check_data_quality is these four over one part that holds the whole run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "analysis/metric_parts.h"
#include "analysis/metrics.h"
#include "analysis/stage_map.h"
#include "model/run.h"
#include "model/warning.h"

namespace pipescope {

/// The warnings of the whole run. `metrics.job_step` holds each job's step
/// (compute_metrics); a job without one is still checked for overlap, length
/// and time, and counts in no step.
std::vector<Warning> check_data_quality(const Run& run, const Metrics& metrics,
                                        const StageMap& stages);

// ---- By parts ----------------------------------------------------------------

/// What a part holds, as the checks read it (references into a PartRun, or
/// into the whole run and its Metrics).
struct QualityPart {
  /// Every device (Run order), with the jobs the part holds in start order.
  const Run& run;
  /// job_step[d][i]: the step (index into Metrics::steps) of run.devices[d].jobs[i].
  const std::vector<std::vector<std::int32_t>>& job_step;
  /// Each job's position in the whole run's device (PartRun::job_index);
  /// nullptr when `run` is the whole run (then every job is the part's, with
  /// or without a step).
  const JobIndices* job_index = nullptr;
  /// The steps the part owns: [first, last) of Metrics::steps.
  std::size_t first = 0;
  std::size_t last = 0;
};

inline constexpr std::uint64_t kNoPosition = std::numeric_limits<std::uint64_t>::max();

/// The first job of a finding: its whole-run position on its device and how
/// a person names it ("forward mb1 (line 2)").
struct JobExample {
  std::uint64_t position = kNoPosition;
  std::string label;
  /// Keeps the one with the smaller position.
  void take(const JobExample& other);
};

/// A short step: its index in Metrics::steps, the device's count of
/// forward, backward and optimizer jobs in it, and the count expected.
struct ShortStep {
  std::size_t step = 0;
  std::int64_t count = 0;
  std::int64_t expected = 0;
};

/// How many complete steps of a segment had `value` forward, backward and
/// optimizer jobs on a device.
struct CountSteps {
  std::int64_t value = 0;
  std::uint64_t steps = 0;
};

/// Where another part's step first appears among a device's jobs that a part
/// holds between its first and last own job, and the latest end of the jobs
/// of positive length before it there.
struct StepMark {
  std::size_t step = 0;
  std::uint64_t position = 0;
  std::int64_t latest_end = std::numeric_limits<std::int64_t>::min();
};

/// Round 1, one device.
struct DeviceQualityEvidence {
  /// The device's jobs the part owns.
  std::uint64_t jobs = 0;
  /// Whole-run positions of its first and last own job (kNoPosition: none).
  std::uint64_t first_job = kNoPosition;
  std::uint64_t last_job = kNoPosition;
  /// The latest end of the jobs of positive length it holds in
  /// [first_job, last_job], and the other parts' steps met there, in
  /// position order (each step once).
  std::int64_t latest_end = std::numeric_limits<std::int64_t>::min();
  std::vector<StepMark> marks;
  /// Short steps against the stage peers (devices with peers only): how
  /// many of the owned steps, and the first three.
  std::uint64_t short_steps = 0;
  std::vector<ShortStep> first_short;
  /// Devices alone in their stage: per segment (Metrics::segments order),
  /// the counts of its owned complete steps, by ascending value.
  std::vector<std::vector<CountSteps>> own_counts;
  /// The first incomplete step k (Metrics): whether the device began a step
  /// of k's segment after k (and before its cut), and its jobs per kind in k
  /// and in the segment's complete step before k, of the owned steps.
  bool later = false;
  bool later_before_cut = false;
  KindCounts in_first_incomplete{};
  KindCounts in_previous_complete{};
};

/// Round 1, one stage of two devices or more: its owned steps in which the
/// devices ran different numbers of jobs, the first of them (index into
/// Metrics::steps) and each device's count there (stage order).
struct StageQualityEvidence {
  std::uint64_t mismatched = 0;
  std::size_t first = 0;
  std::vector<std::uint64_t> counts;
};

/// Round 1: what a part finds from its own jobs.
struct QualityEvidence {
  std::size_t first = 0, last = 0;  ///< the steps it owns
  std::vector<DeviceQualityEvidence> devices;
  std::vector<StageQualityEvidence> stages;
  /// The starts of its jobs in the run's quartile sample: ascending for a
  /// range; in job order for a part that holds the whole run (the only
  /// part: quality_fences selects the quartiles from it in place).
  std::vector<std::int64_t> sample;
};

/// Round 1 for `part`. `device_jobs[d]`: device d's jobs in the whole run
/// (where the quartile sample's stride falls).
QualityEvidence quality_evidence(const QualityPart& part, const Metrics& metrics,
                                 const StageMap& stages,
                                 std::span<const std::uint64_t> device_jobs);

/// Decided once from every part's evidence.
struct QualityFences {
  /// latest_end_before[p][d]: the latest end of device d's jobs of positive
  /// length before part p's first own job of the device (INT64_MIN: none).
  std::vector<std::vector<std::int64_t>> latest_end_before;
  /// own_median[d][s]: for a device alone in its stage, the median (upper
  /// middle) of its forward, backward and optimizer jobs per complete step of
  /// segment s (0 without such a step); empty for the others.
  std::vector<std::vector<std::int64_t>> own_median;
  /// Jobs starting outside [low_ns, high_ns] are far (only when `far_jobs`:
  /// the sample holds two starts or more).
  bool far_jobs = false;
  std::int64_t low_ns = 0;
  std::int64_t high_ns = 0;
};

/// `parts[p]` is part p's evidence (any order of the steps, each part once).
/// A single part's sample is reordered (its quartiles are selected in place);
/// several parts' sorted samples are only read.
QualityFences quality_fences(std::span<QualityEvidence> parts, const Metrics& metrics,
                             const StageMap& stages);

/// Round 2, one device.
struct DeviceQualityFindings {
  std::uint64_t overlaps = 0;
  JobExample first_overlap;
  std::uint64_t nonpositive = 0;
  JobExample first_nonpositive;
  std::uint64_t far = 0;
  JobExample first_far;
  /// Short steps of a device alone in its stage (against `own_median`).
  std::uint64_t short_steps = 0;
  std::vector<ShortStep> first_short;
};

/// Round 2: what a part finds given the fences.
struct QualityFindings {
  std::vector<DeviceQualityFindings> devices;
};

/// Round 2 for `part`, which was `parts[index]` of quality_fences.
QualityFindings quality_findings(const QualityPart& part, const Metrics& metrics,
                                 const StageMap& stages, const QualityFences& fences,
                                 std::size_t index);

/// The warnings, in check_data_quality's order and words, from every part's
/// evidence and findings (any order). Of `run` only the devices' number,
/// index, path and cut are read: any part's run will do.
std::vector<Warning> quality_warnings(const Run& run, const Metrics& metrics,
                                      const StageMap& stages,
                                      std::span<const QualityEvidence> evidence,
                                      std::span<const QualityFindings> findings);

}  // namespace pipescope

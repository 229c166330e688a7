// What passing work from job to job costs on a measured run, as the what-if
// replay needs it (docs/guide.md, "What if"): the launch overhead of a job and
// the latency of data between the ranks of neighbouring global stages.
//
// The two are told apart from queueing, which the replay makes on its own:
//   - launch overhead: the gap a device leaves between two consecutive
//     compute jobs (forward, backward, weight half) of one complete step when
//     the second one's input was made on the same device (the first global
//     stage's forwards, the last one's backwards, weight halves, a chunk's
//     hand-over within a rank), so nothing but the device held it back;
//   - latency: consumer start − producer end − launch overhead, over the
//     dependent pairs of neighbouring global stages on two devices whose
//     consumer waited for its input: the consumer's device was idle from the
//     producer's end (its previous job of the same step, not counting send
//     and receive jobs, ended no later than the producer did). A consumer
//     still busy when the data came started when it was free, and its gap is
//     queueing, not latency. Same machine and across machines separately.
//     The forward of an overlapped F+B action (JobRole::overlap) sends its
//     output when the action ends, with its backward.
//   - neither counts the backward of an overlapped action: it is no launch,
//     and no input edge reaches one timed whole (JobRole::joined).
// Each figure is the median of its samples (median of reals); a kind with
// no sample has 0. Send and receive jobs are not replayed as device time, so
// their time falls into the latency.
//
// Usage:
//   LinkCosts costs = measure_link_costs(run, metrics, pipeline, replayed, placement);
//   costs.latency_cross_machine_ns, costs.launch_overhead_ns, costs.notes()
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "analysis/schedule_table.h"
#include "model/run.h"

namespace pipescope {

struct LinkSamples {
  /// Dependent pairs of neighbouring global stages on two devices of this
  /// kind (same machine, or across machines) in the complete steps.
  std::size_t pairs = 0;
  /// consumer start − producer end − launch overhead (≥ 0, ns) of the pairs
  /// whose consumer waited for its input.
  std::vector<double> samples;
  /// The median of `samples`; 0 without one.
  double ns = 0;
};

struct LinkCosts {
  LinkSamples same_machine;
  LinkSamples cross_machine;
  /// Gaps (ns) between consecutive compute jobs whose second one's input was
  /// on its own device, and their median (0 without one).
  std::vector<double> launch_overhead_samples;
  double launch_overhead_ns = 0;
};

/// Measures the link costs of the devices with replayed[d] != 0, over their
/// jobs of complete steps, global stages placed by `placement` (the measured
/// schedule's; looped when it is not known). Never throws.
LinkCosts measure_link_costs(const Run& run, const Metrics& metrics,
                             const PipelineAnalysis& pipeline, const std::vector<char>& replayed,
                             StagePlacement placement);

}  // namespace pipescope

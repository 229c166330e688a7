// Each data-parallel replica's own figures: its step time, bubble and
// bottleneck, computed by the metric contract on its devices alone (its
// own step windows), and which replica bounds the run's step: the slowest,
// whose schedule, bottleneck and critical path the run reports.
//
// Usage:
//   ReplicaSummary r = summarize_replicas(run, layout, roles);
//   r.replicas[r.slowest].step_ns
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/bottleneck.h"
#include "analysis/job_role.h"
#include "analysis/layout.h"
#include "model/run.h"

namespace pipescope {

struct ReplicaStats {
  /// The replica's number in the layout (its dp coordinate).
  int replica = 0;
  /// Positions in Run::devices, ascending.
  std::vector<std::size_t> devices;
  /// Its complete steps (by the contract, on its devices alone), their
  /// windows' total and mean length, and its bubble ratio over them.
  std::size_t complete_steps = 0;
  std::int64_t total_window_ns = 0;
  std::int64_t step_ns = 0;
  double bubble_ratio = 0;
  /// Its stages' loads and slowest stage (bottleneck.h).
  BottleneckReport bottleneck;
};

struct ReplicaSummary {
  /// One per replica with a device, in replica order.
  std::vector<ReplicaStats> replicas;
  /// Index into `replicas` of the one with the longest total step time
  /// (the first of equals); -1 without replicas.
  int slowest = -1;
};

/// Replica devices as a run of their own (the run's types, segments and
/// first step; the devices' copies in `devices` order) and their stage map:
/// what summarize_replicas measures. `run` may be a part's
/// (analysis/step_partition.h).
struct ReplicaRun {
  Run run;
  StageMap stages;
};
ReplicaRun replica_run(const Run& run, const Layout& layout,
                       const std::vector<std::size_t>& devices);

/// replica_run without the copies: the replica's devices are moved out of
/// `run` into it for as long as it lives, and moved back when it ends
/// (also when an exception unwinds). Nothing may read `run`'s devices
/// meanwhile. A replica of half the run's devices no longer holds half its
/// jobs a second time.
class LentReplicaRun {
 public:
  LentReplicaRun(Run& run, const Layout& layout, const std::vector<std::size_t>& devices);
  ~LentReplicaRun();
  LentReplicaRun(const LentReplicaRun&) = delete;
  LentReplicaRun& operator=(const LentReplicaRun&) = delete;

  const ReplicaRun& get() const { return sub_; }

 private:
  Run& run_;
  std::vector<std::size_t> devices_;
  ReplicaRun sub_;
};

/// A replica's figures from its metrics and bottleneck (computed whole, or
/// by parts over the run's step ranges).
ReplicaStats replica_stats(int replica, const std::vector<std::size_t>& devices,
                           const Metrics& metrics, BottleneckReport bottleneck);

/// Adds the next replica's figures (in replica order), keeping the slowest.
void add_replica(ReplicaSummary& summary, ReplicaStats&& stats);

/// Whether `layout` has more than one replica with devices: the replicas
/// are then measured (below), and the run's bottleneck is the slowest one's.
bool measures_replicas(const Layout& layout);

/// The figures of every replica of `layout` when measures_replicas(layout);
/// empty otherwise. Copies one replica's devices at a
/// time.
ReplicaSummary summarize_replicas(const Run& run, const Layout& layout,
                                  const std::vector<JobRole>& roles);

/// The same, lending each replica's devices (LentReplicaRun) instead of
/// copying them: nothing may read `run`'s devices meanwhile.
ReplicaSummary summarize_replicas_in_place(Run& run, const Layout& layout,
                                           const std::vector<JobRole>& roles);

}  // namespace pipescope

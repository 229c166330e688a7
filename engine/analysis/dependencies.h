// The dependencies between stages that a pipeline schedule implies, matched
// job to job within each step (the contract's per-device step numbering):
// the forward of global stage g needs the forward of g-1, the backward of g
// the backward of g+1, with global stages placed on the ranks (the stages of
// the stage map) as the schedule places them. Looped (1F1B, interleaved):
//   F(m, c) on stage s   needs F(m, c) on stage s-1
//                        (stage 0, c > 0: F(m, c-1) on the last stage)
//   B(m, c) on stage s   needs B(m, c) on stage s+1
//                        (last stage, c < V-1: B(m, c+1) on stage 0)
// V-shaped (ZB-V, DualPipeV: stage s holds global stages s and 2P-1-s):
//   F(m, 0) needs F(m, 0) on s-1; F(m, 1) needs F(m, 1) on s+1 (the last
//   stage: its own F(m, 0)); B(m, 1) needs B(m, 1) on s-1; B(m, 0) needs
//   B(m, 0) on s+1 (the last stage: its own B(m, 1)).
// An input made on the same device needs no edge (it runs its jobs in order),
// nor the backward of an F+B action timed as one job (JobRole::joined: it
// starts with the action, its input may come inside it).
// B is a whole backward or ZB's backward_b; W and the jobs of one device in
// order need no edge here (one device runs its jobs in order). A device of a
// stage pairs with its partner in the other stage (StageMap::partner: the
// same replica and peer of a layout, else the (i mod size)-th device).
// When a type appears twice with one micro-batch and chunk in a step, its
// first job is used.
//
// Usage:
//   Dependencies deps = find_dependencies(run, metrics.job_step, stages, roles);
//   for (const Dependency& dep : deps) ...;          // by consumer: device, then job
//   std::optional<JobRef> in = deps.producer_of(job);
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "analysis/job_role.h"
#include "analysis/schedule_table.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

/// A job: position in Run::devices and index into Device::jobs.
struct JobRef {
  std::uint32_t device = 0;
  std::uint32_t job = 0;

  friend bool operator==(const JobRef&, const JobRef&) = default;
};

struct Dependency {
  JobRef producer;
  JobRef consumer;
};

/// Dependencies, at most one per consumer job, kept by consumer device as one
/// 4-byte entry per job of the device up to its last consumer: the producer's
/// job index with, in the top 4 bits, which of the device's (at most 15)
/// producer devices made it. A schedule's consumer device reads from one or
/// two others, so this holds millions of dependencies in a quarter of a list
/// of pairs' memory; a device whose producers do not fit (more than 15
/// devices, or a producer job index of 2^28 or more) keeps a pair per job.
/// Iterating yields each Dependency by value, ordered by consumer (device,
/// then job).
class Dependencies {
 public:
  Dependencies() = default;
  /// From a list of pairs in any order (hand-made lists: tests, tools). A
  /// consumer listed twice keeps its first producer.
  Dependencies(const std::vector<Dependency>& list);  // NOLINT: implicit on purpose

  /// How many dependencies.
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// The producer `consumer` depends on, or nullopt. O(1).
  std::optional<JobRef> producer_of(JobRef consumer) const;

  /// Consumer devices (an upper bound on the device index of a consumer),
  /// and the jobs of one of them that may be consumers: [0, jobs_of(d)).
  std::size_t consumer_devices() const { return consumers_.size(); }
  std::size_t jobs_of(std::size_t device) const {
    return device < consumers_.size() ? consumers_[device].jobs() : 0;
  }

  /// f(Dependency) for the consumers among jobs [first, last) of `device`,
  /// in job order (for blocks walked in parallel).
  template <typename F>
  void for_each_in(std::size_t device, std::size_t first, std::size_t last, F&& f) const {
    if (device >= consumers_.size()) return;
    const Consumer& c = consumers_[device];
    last = std::min(last, c.jobs());
    for (std::size_t j = first; j < last; ++j) {
      if (!c.has(j)) continue;
      f(Dependency{c.producer(j),
                   {static_cast<std::uint32_t>(device), static_cast<std::uint32_t>(j)}});
    }
  }

  /// Every dependency as a list of pairs, in iteration order.
  std::vector<Dependency> to_vector() const;

  /// Those whose consumer is among jobs [jobs[d].first, jobs[d].second) of
  /// its device d (a device past the span keeps none), in the same compact
  /// form: what a part of a partitioned run keeps of the dependencies it
  /// found (those of its own steps).
  Dependencies consumers_in(std::span<const std::pair<std::size_t, std::size_t>> jobs) const;

  /// Sets consumer device `device`'s dependencies: match[j] is job j's
  /// producer, or a JobRef whose device is kNoDevice. Devices are set in
  /// any order, each once.
  static constexpr std::uint32_t kNoDevice = UINT32_MAX;
  void set_device(std::size_t device, const std::vector<JobRef>& match);

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Dependency;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Dependency;

    const_iterator() = default;
    Dependency operator*() const;
    const_iterator& operator++() {
      ++job_;
      settle();
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.device_ == b.device_ && a.job_ == b.job_;
    }

   private:
    friend class Dependencies;
    const_iterator(const Dependencies* owner, std::size_t device, std::size_t job)
        : owner_(owner), device_(device), job_(job) {
      settle();
    }
    /// Moves to the first dependency at or after (device_, job_).
    void settle();

    const Dependencies* owner_ = nullptr;
    std::size_t device_ = 0;
    std::size_t job_ = 0;
  };

  const_iterator begin() const { return {this, 0, 0}; }
  const_iterator end() const { return {this, consumers_.size(), 0}; }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr unsigned kSlotShift = 28;
  static constexpr std::uint32_t kJobMask = (std::uint32_t{1} << kSlotShift) - 1;
  static constexpr std::size_t kMaxSlots = 15;  // slot 15 with every job bit set is kNone

  struct Consumer {
    /// Per job, up to the last consumer: (slot << 28) | producer job, or kNone.
    std::vector<std::uint32_t> packed;
    /// Slot -> producer device.
    std::vector<std::uint32_t> producers;
    /// Instead of `packed` when the producers do not fit: per job, or device kNoDevice.
    std::vector<JobRef> wide;

    std::size_t jobs() const { return wide.empty() ? packed.size() : wide.size(); }
    bool has(std::size_t j) const {
      return wide.empty() ? packed[j] != kNone : wide[j].device != kNoDevice;
    }
    JobRef producer(std::size_t j) const {
      if (!wide.empty()) return wide[j];
      return {producers[packed[j] >> kSlotShift], packed[j] & kJobMask};
    }
  };

  std::vector<Consumer> consumers_;  // by consumer device
  std::size_t size_ = 0;
};

/// All cross-stage dependencies.
/// job_step is Metrics::job_step (or any per-device step numbering).
Dependencies find_dependencies(const Run& run,
                               const std::vector<std::vector<std::int32_t>>& job_step,
                               const StageMap& stages, const std::vector<JobRole>& roles,
                               StagePlacement placement = StagePlacement::looped);

/// Whether `job` is a send/recv (comm) job (its type's role).
bool is_comm_job(const Run& run, const std::vector<JobRole>& roles, JobRef job);

/// The cross-stage input of `job`: its own dependency's producer, or for a
/// blocking recv (a run of comm jobs) just before a job with one, that
/// producer: the recv waits for the same data. Looked up per job instead of
/// tabulated (8 bytes per job of the run); the critical path's hops and the
/// HTML report's comm jobs and bubbles use it.
std::optional<JobRef> input_producer(const Run& run, const Dependencies& deps,
                                     const std::vector<JobRole>& roles, JobRef job);

}  // namespace pipescope

// Pipeline bubbles: every maximal idle gap of each device inside each step
// window, classified by where it lies:
//   fill      before the device's first busy time in the window (also the
//             whole window when the device has no job in it)
//   interior  between two busy intervals
//   drain     after the device's last busy time in the window
// Busy time is the contract's (docs/guide.md "Metrics"): the union of every
// job interval except comm jobs' (a send or receive waiting for its peer is
// idle time), so for every device d and step k
//   fill(d,k) + interior(d,k) + drain(d,k) == idle(d,k)   exactly.
//
// Usage:
//   for_each_bubble(run, metrics, [](const Bubble& b) { ... });   // all of them
//   BubbleSummary s = summarize_bubbles(run, metrics, /*top_n=*/10);
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/step_rule.h"
#include "model/run.h"

namespace pipescope {

enum class BubbleKind : std::uint8_t { fill, interior, drain };

/// "fill", "interior", "drain".
std::string_view bubble_kind_name(BubbleKind kind);

inline constexpr std::int64_t kNoJob = -1;

struct Bubble {
  /// Position in Run::devices and index into Metrics::steps.
  std::size_t device = 0;
  std::size_t step = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  BubbleKind kind = BubbleKind::interior;
  /// The device's job (index into Device::jobs) whose end starts the gap and
  /// the one whose start ends it, possibly outside the window (the previous
  /// step's optimizer before a fill bubble); kNoJob when there is none.
  std::int64_t job_before = kNoJob;
  std::int64_t job_after = kNoJob;

  std::int64_t length_ns() const { return end_ns - start_ns; }
};

/// One of the longest bubbles with its peers folded in: the bubbles of the
/// other devices of its stage in the same step that overlap it in time
/// (tensor-parallel peers, the stage's data-parallel replicas), which a
/// report lists once, with their count, instead of once per device.
struct FoldedBubble {
  /// The longest of them (its device the lowest among equals).
  Bubble bubble;
  /// The devices (positions in Run::devices, ascending) whose bubbles it
  /// stands for, its own included: their count is the peers shown.
  std::vector<std::size_t> devices;
  /// The shortest of them.
  std::int64_t shortest_ns = 0;
};

/// Folds `longest_first` (bubbles ordered longest first, as
/// BubbleSummary::longest) into at most `top_n` groups: a bubble joins the
/// first group whose bubble is of the same stage (`stage_of[device]`; a
/// device without a stage, -1 or past the map, has no peers) and step and
/// overlaps it in time; otherwise it opens a group while fewer than `top_n`
/// are open. A device counts once in a group; a peer whose bubble is not
/// among `longest_first` is not counted.
std::vector<FoldedBubble> fold_peer_bubbles(std::span<const Bubble> longest_first,
                                            std::span<const int> stage_of, std::size_t top_n);

/// Idle time by kind, indexed by BubbleKind: one device's in one step window
/// (BubbleSummary::per_step's cells, a table of steps × devices that holds
/// no counts, half the size it would be with them).
struct BubbleTime {
  std::array<std::int64_t, 3> ns{0, 0, 0};

  std::int64_t of(BubbleKind kind) const { return ns[static_cast<std::size_t>(kind)]; }
  std::int64_t idle_ns() const { return ns[0] + ns[1] + ns[2]; }
  void add(const BubbleTime& other);
};

/// Idle time by kind, indexed by BubbleKind; `count` bubbles of each kind.
struct BubbleTotals {
  std::array<std::int64_t, 3> ns{0, 0, 0};
  std::array<std::uint64_t, 3> count{0, 0, 0};

  std::int64_t of(BubbleKind kind) const { return ns[static_cast<std::size_t>(kind)]; }
  std::int64_t idle_ns() const { return ns[0] + ns[1] + ns[2]; }
  BubbleTime time() const { return {ns}; }
  void add(const BubbleTotals& other);
};

struct BubbleSummary {
  /// per_step[k][d]: device d's idle time in step window k.
  std::vector<std::vector<BubbleTime>> per_step;
  /// Summed over steps, per device; and over everything.
  std::vector<BubbleTotals> per_device;
  BubbleTotals total;
  /// The longest bubbles, longest first (ties: earlier start, lower device).
  std::vector<Bubble> longest;
  /// The same with peers folded (fold_peer_bubbles): one bubble per stage
  /// and time, filled by summarize_bubbles when given the stage map.
  std::vector<FoldedBubble> longest_folded;
};

/// Calls `visit` for every bubble: devices in order, then windows, then time.
/// Empty windows have no bubble; zero-length jobs are not busy (the contract).
void for_each_bubble(const Run& run, const Metrics& metrics,
                     const std::function<void(const Bubble&)>& visit);

/// The same for device `device` (a position in Run::devices) alone: devices
/// are independent, so they can be visited on several threads at once.
void for_each_device_bubble(const Run& run, const Metrics& metrics, std::size_t device,
                            const std::function<void(const Bubble&)>& visit);

/// The bubbles of one device window by window, for a writer that goes step
/// by step across devices (the traces: export/trace_parts.h) and so cannot
/// visit one device's windows all at once. `device` holds the jobs a part of
/// the partitioned analysis holds for the windows to come (or all of them);
/// `job_index` maps them to the whole run's device `d` (null: the same).
/// `device`, `job_index` and `kinds` must outlive the walk.
class WindowBubbles {
 public:
  WindowBubbles(const Device& device, std::size_t d, const std::vector<std::uint32_t>* job_index,
                const TypeKinds& kinds);
  WindowBubbles(WindowBubbles&&) noexcept;
  WindowBubbles& operator=(WindowBubbles&&) noexcept;
  ~WindowBubbles();

  /// Calls `visit` for every bubble of `window`, Metrics::steps[step], in
  /// time order (for_each_bubble's bubbles of that window). Windows must
  /// come in step order; a window may be skipped.
  void window(const StepWindow& window, std::size_t step,
              const std::function<void(const Bubble&)>& visit);

 private:
  struct Walk;
  std::unique_ptr<Walk> walk_;
};

/// Totals by kind per device and step, and the `top_n` longest bubbles, over
/// the complete steps (an incomplete step keeps zero totals). With the stage
/// map (`stage_of`, StageMap::stage_of), also the `top_n` longest with peers
/// folded (longest_folded), from the top_n x (devices of the largest stage)
/// longest bubbles: enough that each group's bubble is among them.
BubbleSummary summarize_bubbles(const Run& run, const Metrics& metrics, std::size_t top_n,
                                std::span<const int> stage_of = {});

/// The same over the windows Metrics::steps[first_step, first_step +
/// windows.size()) only, from `devices` holding at least the jobs a part of
/// the partitioned analysis holds (step_partition.h: every job overlapping
/// the windows' span and each device's neighbours of it); `job_index[d][i]`
/// is the index in the whole run's device d of devices[d].jobs[i] (null: the
/// same). per_step then holds these windows only.
BubbleSummary summarize_bubble_windows(std::span<const Device> devices, const JobIndices* job_index,
                                       const TypeTable& types, std::span<const StepWindow> windows,
                                       std::size_t first_step, std::size_t top_n);

/// Appends the summary of the next windows (in step order) to `into`: the
/// per-step totals follow its own, the sums add, the longest are merged
/// (`longer` orders bubbles strictly, so the merge is the whole run's list).
void append_bubble_summary(BubbleSummary& into, BubbleSummary&& part, std::size_t top_n);

}  // namespace pipescope

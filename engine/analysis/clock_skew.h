// Clock skew between machines, seen through the pipeline's dependencies and
// corrected before any metric is computed.
//
// Each machine's clock reads `offset` ahead of machine 0's (observed = true +
// offset). A dependency (producer P on machine a, consumer C on machine b)
// says C started after P ended, in true time:
//     offset(b) - offset(a) <= start(C) - end(P)          (observed times)
// so forward dependencies bound the difference from one side and backward
// ones from the other. Per machine pair the estimate is the middle of the
// interval they leave (the value that satisfies them all with the largest
// margin, as NTP takes the middle of a round trip); with one side only, the
// smallest correction that removes the violations. Pair estimates are joined
// into one offset per machine by least squares, the lowest machine of each
// connected group fixed at 0.
//
// Offsets are applied only when the logs prove the clocks wrong, beyond
// what timing noise explains: some machine pair has more than 1% of its
// dependencies violated by more than the noise (ClockOptions::noise_ns,
// 100 us or the input's time resolution: a kernel's start as the host logs
// it varies by tens of microseconds). Only such pairs are estimated; a pair
// within noise keeps its clocks' difference at 0, so no offset is invented
// for it. The estimate is applied only when it removes at least 90% of the
// violations beyond noise; otherwise it is reported, not applied
// ("rejected", with why). Imposed offsets are always applied. Clocks are
// not estimated at all when the run's layout is unknown (analysis/layout.h):
// dependencies between devices that are not adjacent stages of one pipeline
// say nothing about clocks.
//
// Usage (before compute_metrics, so the contract's figures use corrected times):
//   ClockReport clock = correct_clocks(run, stages, options);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/dependencies.h"
#include "analysis/stage_map.h"
#include "model/option_words.h"
#include "model/run.h"

namespace pipescope {

struct ClockOptions {
  /// false: count violations only.
  bool fix = true;
  /// Imposed offsets, machine as named by the user; when given, nothing is
  /// estimated and unnamed machines keep offset 0.
  std::vector<std::pair<std::string, std::int64_t>> imposed;
  /// How messages name the imposed offsets and the disabled correction
  /// (model/option_words.h: CallerOption::clock_offset, no_clock_fix): the
  /// caller's words (the analysis never names a command's flags). Never null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
  /// A violation counts as evidence of skew only when the consumer starts
  /// more than this before its input ended (and the run's time resolution).
  std::int64_t noise_ns = 100'000;
  /// False when no layout fits the run: violations are counted, nothing is
  /// estimated (method "no-layout"); imposed offsets still apply.
  bool layout_known = true;
};

/// "2.5ms", "+250us", "-3000000ns", "1s", "-0.5 ms" -> ns, exactly (decimal
/// digits below a nanosecond are rejected). nullopt if malformed or out of range.
std::optional<std::int64_t> parse_duration_ns(std::string_view text);

/// "machine1=+2.5ms" -> {"machine1", 2500000}. Throws std::invalid_argument
/// whose message starts with `label` (what the caller calls the spec).
std::pair<std::string, std::int64_t> parse_clock_offset(std::string_view spec,
                                                        std::string_view label);

/// Dependencies between one pair of machines (a <= b; a == b: within one machine).
struct MachinePairClock {
  int machine_a = 0;
  int machine_b = 0;
  std::uint64_t dependencies = 0;
  /// Dependencies whose consumer started before its producer ended.
  std::uint64_t violations_before = 0;
  std::uint64_t violations_after = 0;
  /// Violations by more than the noise, before and after correction.
  std::uint64_t beyond_noise_before = 0;
  std::uint64_t beyond_noise_after = 0;
  /// The interval of offset(b) - offset(a) the dependencies allow (times as read).
  std::optional<std::int64_t> lower_ns;
  std::optional<std::int64_t> upper_ns;
};

/// One stretch of a machine's clock between two clock steps.
struct ClockPiece {
  /// Where it begins on the run's time axis (the first piece: the machine's
  /// first job).
  std::int64_t from_ns = 0;
  /// How far this piece read ahead of machine 0's clock, as it was written:
  /// the machine's offset plus the sizes of the steps before it.
  std::int64_t offset_ns = 0;
};

struct MachineClock {
  int machine = 0;
  std::string name;
  /// What the dependencies suggest, and what was subtracted from its times.
  std::int64_t estimate_ns = 0;
  std::int64_t offset_ns = 0;
  /// With clock steps (Run::clock_steps): every piece of its clock, in time
  /// order; empty without.
  std::vector<ClockPiece> pieces;
};

/// How the clocks were treated (summary.json clock.method, by clock_method_name).
enum class ClockMethod {
  single_machine,  ///< "single-machine": one machine, no clock to align
  disabled,        ///< "disabled": --no-clock-fix
  imposed,         ///< "imposed": --clock-offset, applied whatever they do
  consistent,      ///< "consistent": no violation across machines beyond noise, nothing applied
  estimated,       ///< "estimated": offsets estimated and applied
  rejected,   ///< "rejected": offsets estimated but not applied (they removed too few violations)
  no_layout,  ///< "no-layout": no layout fits the run, clocks not estimated
};

/// The method as written: "single-machine", "disabled", "imposed", "consistent",
/// "estimated", "rejected" or "no-layout".
std::string_view clock_method_name(ClockMethod method);

struct ClockReport {
  ClockMethod method = ClockMethod::single_machine;
  bool applied = false;
  /// Rejected: the violations between machines the estimate would have left.
  std::uint64_t violations_if_estimated = 0;
  /// The noise threshold used (ClockOptions::noise_ns or the time resolution).
  std::int64_t noise_ns = 0;
  /// Violations between machines by more than the noise, before and after.
  std::uint64_t beyond_noise_before = 0;
  std::uint64_t beyond_noise_after = 0;
  /// Why the clocks were left as read when there were violations
  /// (consistent, rejected, no-layout); empty otherwise.
  std::string reason;
  std::vector<MachineClock> machines;
  std::vector<MachinePairClock> pairs;
  std::uint64_t dependencies = 0;
  std::uint64_t violations_before = 0;
  std::uint64_t violations_after = 0;
};

/// What some dependencies say of the machines' clocks, per machine pair
/// (a <= b): the counts before correction and the bounds on o_b - o_a. Parts
/// of a run combine exactly (add_pair_clocks: sums, min and max), so the
/// estimate from step ranges' dependencies is the whole run's.
using PairClocks = std::map<std::pair<int, int>, MachinePairClock>;

/// The pair evidence of `deps` on the times as they are now.
PairClocks pair_clocks(const Run& run, const Dependencies& deps, std::int64_t noise_ns);
/// Adds another part's evidence (any order).
void add_pair_clocks(PairClocks& into, const PairClocks& part);
/// Violations after correction: `deps`' counts into violations_after and
/// beyond_noise_after of `pairs` (added to what is there).
void count_violations_after(const Run& run, const Dependencies& deps, std::int64_t noise_ns,
                            PairClocks& pairs);
/// estimate_clock_offsets from combined evidence: `machines` names every
/// machine 0..n-1 (machine_clock_names).
ClockReport estimate_from_pair_clocks(const PairClocks& pairs,
                                      const std::vector<std::string>& machines,
                                      std::int64_t noise_ns);
/// The name of each machine of the run, by machine index.
std::vector<std::string> machine_clock_names(const Run& run);

/// Counts violations per machine pair and estimates offsets from the pairs
/// with more than 1% of their dependencies violated by more than `noise_ns`
/// (the others held at a difference of 0); changes nothing.
ClockReport estimate_clock_offsets(const Run& run, const Dependencies& deps,
                                   std::int64_t noise_ns = 0);

// correct_clocks in parts, for the partitioned analysis (each part holds
// some steps' dependencies):
//   1. pair_clocks per part, add_pair_clocks: the run's evidence;
//   2. decide_clock_offsets, once: the estimate and the offsets to try;
//   3. when it says to_apply: apply_clock_offsets everywhere, then
//      count_violations_after per part into pairs_for_recount(report), added;
//   4. finish_clock_decision, once: applied, or rejected (then the offsets
//      are taken back: apply their negation);
//   5. add_clock_pieces.

/// The noise a violation must exceed to count as evidence of skew.
std::int64_t clock_noise_ns(const Run& run, const ClockOptions& options);

struct ClockDecision {
  ClockReport report;
  std::vector<std::int64_t> offsets;  ///< by machine
  /// Some offset is not 0: apply them, recount, finish_clock_decision.
  bool to_apply = false;
};
/// Step 2. Throws std::invalid_argument for an imposed machine not in
/// `machines` (machine_clock_names).
ClockDecision decide_clock_offsets(const PairClocks& evidence,
                                   const std::vector<std::string>& machines, std::int64_t noise,
                                   const ClockOptions& options);
/// The decision's pairs with their after-counts zeroed, to recount into.
PairClocks pairs_for_recount(const ClockReport& report);
/// Step 4, from the recounted pairs: `applied` set when the offsets stay.
ClockReport finish_clock_decision(ClockDecision&& decision, const PairClocks& after_pairs);

/// The offsets that take `offsets` back.
std::vector<std::int64_t> negated(std::vector<std::int64_t> offsets);

/// Each machine's first job start (INT64_MAX for one without a job here).
std::vector<std::int64_t> machine_first_starts(const Run& run);
/// Step 5: each machine's clock pieces from the clock steps undone when the
/// run was loaded (Run::clock_steps) and its first job start.
void add_clock_pieces(const std::vector<ClockStep>& steps,
                      std::span<const std::int64_t> first_start, ClockReport& report);

/// Subtracts offsets[machine] from every job time of that machine's devices.
void apply_clock_offsets(Run& run, const std::vector<std::int64_t>& offsets);

/// The whole step: finds the dependencies (with the contract's steps), then
/// estimates, imposes or skips offsets as `options` say, applies them and
/// recounts; estimated offsets that leave more than 10% of the violations
/// beyond noise are taken back ("rejected"). Throws std::invalid_argument for an
/// imposed machine that is not in the run.
ClockReport correct_clocks(Run& run, const StageMap& stages, const ClockOptions& options);

/// The same with the dependencies already found (on the uncorrected times:
/// a machine's offset moves all its jobs alike, so which job depends on
/// which does not change, and `deps` stays valid after the correction).
ClockReport correct_clocks(Run& run, const Dependencies& deps, const ClockOptions& options);

}  // namespace pipescope

// The regression gate of `pipescope check`: compares a current run with a
// baseline on per-step medians and evaluates the thresholds.
//
// Noise: every figure is the median over the compared steps (warm-up steps
// left out of both sides), and its spread is the interquartile range
// (p25..p75) over those steps. A change is "beyond noise" when its size
// exceeds the larger IQR of the two sides; thresholds are evaluated on the
// medians regardless, and the report shows both so a reader can tell a real
// change from jitter.
//
// Figures compared:
//   bubble ratio  median of steps[].bubble_ratio
//   step time     median of steps[].duration_ns
//   utilization   per device (matched by global index): median over steps of
//                 busy/duration of that step
//
// Comparable runs: a run whose inputs had an input warning (a missing,
// unreadable or empty rank, load/input_rules.h) or a damaged input (a file
// cut inside a line or record, a truncated or corrupt compressed stream, a
// damaged record: what was read before the damage is not the whole run) on
// either side, or whose
// device count, schedule family (analysis/schedule_table.h: compared by
// family, not by name, so a renamed schedule stays comparable), stage count
// P, micro-batch count M or chunk count V differs from the baseline's, is
// refused (CheckReport::refused(): exit status 2, the
// reasons in every report) unless the caller allows it; allowed, the reasons
// are still reported.
//
// Usage:
//   CheckThresholds t; t.max_bubble_increase = 0.02;
//   CheckReport r = evaluate_check(baseline, current, t);
//   return r.regression() ? 1 : 0;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare/run_figures.h"
#include "model/option_words.h"

namespace pipescope {

struct CheckThresholds {
  /// Current median bubble ratio must be <= this (0.25 = 25%).
  std::optional<double> max_bubble_ratio;
  /// Current minus baseline median bubble ratio must be <= this (absolute
  /// points as a fraction: 0.02 = 2 percentage points).
  std::optional<double> max_bubble_increase;
  /// (current − baseline) / baseline median step time must be <= this (0.05 = 5%).
  std::optional<double> max_step_time_increase;
  /// Per device, baseline minus current median utilization must be <= this.
  std::optional<double> max_utilization_drop;
  /// Warm-up steps left out of both sides; unset: 1 when both sides have more
  /// than 2 steps, else 0.
  std::optional<std::int64_t> skip_steps;
  /// Log events (docs/guide.md, "Log events"): the current run may hold at
  /// most N events of each ID, a library entry's id or a category, over the
  /// whole run; in the order given.
  std::vector<std::pair<std::string, std::int64_t>> max_events;
  /// Registered figures (export/figure_registry.h): the current run's value
  /// of each KEY must be <= the limit, a number in the figure's unit (a
  /// count, nanoseconds, a fraction); in the order given.
  std::vector<std::pair<std::string, double>> max_figures;

  bool any() const {
    return max_bubble_ratio || max_bubble_increase || max_step_time_increase ||
           max_utilization_drop || !max_events.empty() || !max_figures.empty();
  }
  /// Fills the thresholds that are unset here from `other` (command line over
  /// config file).
  void fill_from(const CheckThresholds& other);
};

/// What a threshold's number measures, which decides the forms it accepts.
enum class ThresholdScale {
  /// A ratio the figure must stay under (max_bubble_ratio): "25%" or "0.25";
  /// at most 100%.
  ratio,
  /// A difference of two ratios in percentage points (max_bubble_increase,
  /// max_utilization_drop): "2pp", "2%" or "0.02"; at most 100 points.
  points,
  /// A change relative to the baseline (max_step_time_increase): "5%" or
  /// "0.05"; above 100% only when written with % ("150%").
  relative,
};

/// "points", "relative" or "ratio", as the help and every report say.
std::string_view threshold_scale_name(ThresholdScale scale);

/// Parses a threshold of `scale` into a fraction (0.05 for "5%"; a leading
/// '+' is allowed, as the reports print limits: "+5%"). A bare number of 1
/// or more is refused as ambiguous (1 may mean 1% or 100%), with the
/// accepted forms; so are negative, non-finite
/// and out-of-range values and "pp" on a relative threshold. Throws InputError
/// naming `what`.
double parse_threshold(std::string_view text, ThresholdScale scale, std::string_view what);

/// `ID=N` of --max-events: the id or category and the limit (an integer
/// >= 0). Throws InputError naming `what`.
std::pair<std::string, std::int64_t> parse_max_events(std::string_view text, std::string_view what);

/// `KEY=LIMIT` of --max-figure: a registered figure's key (figure_registry.h)
/// and the most its value may be (a decimal number). Throws InputError naming
/// `what`; a key no row has is the caller's to refuse (evaluate_check does).
std::pair<std::string, double> parse_max_figure(std::string_view text, std::string_view what);

/// Reads thresholds from a JSON config file (kept in the repository under
/// test). Keys, all optional: "max_bubble_ratio", "max_bubble_increase",
/// "max_step_time_increase", "max_utilization_drop" (numbers, or strings like
/// "5%"), "skip_steps" (integer >= 0), "max_events" (an object of ID:
/// integer >= 0), "max_figures" (an object of KEY: number, a registered
/// figure that takes a limit). An unknown key, a wrong type or
/// invalid JSON throws InputError naming the file and the key.
CheckThresholds read_check_config(const std::string& path);

/// Median and spread of one figure over the compared steps.
struct Spread {
  std::size_t count = 0;
  double median = 0;
  double p25 = 0;
  double p75 = 0;
  double min = 0;
  double max = 0;

  double iqr() const { return p75 - p25; }
};

/// The spread of `values` (any order; count 0 gives zeros): the median (the
/// mean of the two middle values) and the quartiles interpolated between
/// closest ranks (numeric/statistics.h).
Spread spread_of(std::vector<double> values);

struct FigureComparison {
  Spread baseline;
  Spread current;
  /// current.median − baseline.median.
  double delta = 0;
  /// |delta| exceeds the larger IQR of the two sides.
  bool beyond_noise = false;
};

struct DeviceComparison {
  int device = 0;  ///< global device index
  FigureComparison utilization;
};

struct ThresholdResult {
  /// The flag: "max-bubble-ratio", "max-bubble-increase", ...
  std::string name;
  bool passed = true;
  /// One line with the numbers: "median bubble ratio 31.2% <= 25.0%: ...".
  std::string detail;
  /// Failing devices of max-utilization-drop, one line each.
  std::vector<std::string> failures;
};

/// A device-step of the current run with much idle time.
struct WorstBubble {
  std::int64_t step = 0;
  int device = 0;
  std::int64_t idle_ns = 0;
  std::int64_t window_ns = 0;
};

struct CheckReport {
  std::string baseline_source;
  std::string current_source;
  std::int64_t skip_steps = 0;
  /// True when skip_steps was chosen by the default rule (the output says so).
  bool skip_defaulted = false;
  std::size_t baseline_steps = 0;  ///< steps compared on each side
  std::size_t current_steps = 0;
  /// Launch segments of the side with more (skip_steps applies to each).
  std::size_t segments = 1;
  /// Incomplete steps of both sides, never compared.
  std::size_t incomplete_steps = 0;

  FigureComparison bubble_ratio;
  /// In nanoseconds (doubles: medians of integers may fall between two).
  FigureComparison step_time_ns;
  /// Devices present on both sides, by global index.
  std::vector<DeviceComparison> devices;
  std::vector<int> only_in_baseline;
  std::vector<int> only_in_current;

  std::vector<ThresholdResult> thresholds;
  /// Up to 5, largest idle first.
  std::vector<WorstBubble> worst_bubbles;

  /// Why the runs are not comparable (see above), one line each; empty
  /// when they are.
  std::vector<std::string> refusals;
  /// The caller compared them anyway (`allow_incomparable`).
  bool refusals_allowed = false;

  bool regression() const;
  /// Not comparable, and not allowed: the verdict is REFUSED.
  bool refused() const { return !refusals.empty() && !refusals_allowed; }
};

/// Why `baseline` and `current` are not comparable (see above), one line each.
std::vector<std::string> comparability_problems(const RunFigures& baseline,
                                                const RunFigures& current);

/// Compares and evaluates; fills `refusals` (comparability_problems), which
/// `allow_incomparable` turns from a refusal into a note. Throws InputError
/// when, after skipping warm-up steps, a side has no step left to compare,
/// and when `max_events` is given but the current run has no events section
/// (events off, or no worker logs), and when `max_figures` names a figure
/// the current run does not have or whose registry row takes no limit. The
/// messages name the options in `words` (CallerOption::skip_steps,
/// max_events).
CheckReport evaluate_check(const RunFigures& baseline, const RunFigures& current,
                           const CheckThresholds& thresholds, bool allow_incomparable = false,
                           const OptionWords& words = *OptionWords::engine());

/// The default warm-up skip: 1 when both runs have more than 2 complete steps, else 0.
std::int64_t default_skip_steps(const RunFigures& baseline, const RunFigures& current);

}  // namespace pipescope

// The figures registered once: each row says how a figure is computed from a
// part of the run, how the parts of two step ranges combine, and where its
// value goes, and everything that shows a figure reads the row. summary.json
// (summary_figures.h), the text report, `check` (a limit on it) and `diff`
// reach a figure through this table; the single process computes one part
// (the whole run) and the partitioned run (distributed/partitioned_summary.h)
// one per rank, sent as the row's bytes and combined in step order, so one
// rule gives both. As the input formats' table (ingest/input_formats.h), it
// takes rows at run time (FigureRegistration): a program embedding the
// engine, or a test, adds a figure without touching any other file
// (tests/analyze/toy_figure_test.cc).
//
// A row is built from typed functions (figure_row): the part is any
// trivially copyable value or a vector of one, encoded by model/byte_codec.h,
// so no figure writes its own serialiser:
//
//   FigureRegistration most({.key = "max_jobs", .label = "most jobs of a device in a step"},
//       FigureRule<std::int64_t>{
//           .compute = [](const FigureInput& in) { ...max over in's own steps... },
//           .combine = [](std::int64_t& earlier, const std::int64_t& later) {
//             earlier = std::max(earlier, later); },
//           .value = [](const std::int64_t& part) { return FigureNumber(part); }});
//
// A figure with a `value` is written in summary.json's "figures" object (its
// key, in the table's order, after every other key), read back into
// SummaryFigures::figures, listed in the text report's "Figures" section,
// compared by `diff` (when `compared`) and limited by `check`'s
// "max_figures" (when `threshold`). The built-in rows (the run's job count
// and its job types) `place` their part in their own members of
// SummaryFigures instead, whose keys summary_fields.h spells and which the
// reports show as before.
#pragma once

#include <concepts>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "analysis/metrics.h"
#include "export/summary_figures.h"
#include "model/byte_codec.h"
#include "model/run.h"

namespace pipescope {

/// The jobs a figure's part is computed from, and the windows of the run.
/// The single process gives the whole run (every job its own); a rank of a
/// partitioned run gives the jobs it holds, of which it owns those of steps
/// [first, last) (the others are its neighbours' and only lent to it).
struct FigureInput {
  const Run& run;
  /// Every step's window (its job_step may be empty: see job_step below).
  const Metrics& metrics;
  /// job_step[d][i]: the step (index into metrics.steps) of
  /// run.devices[d].jobs[i]; a device it does not cover has no known steps.
  const std::vector<std::vector<std::int32_t>>& job_step;
  std::size_t first = 0;
  std::size_t last = 0;
  /// The whole run in one part: every job is owned, in a known step or not.
  bool whole_run = false;

  /// The step of device d's i-th job; -1 when not known.
  std::int32_t step_of(std::size_t d, std::size_t i) const {
    if (d >= job_step.size() || job_step[d].size() != run.devices[d].jobs.size()) return -1;
    return job_step[d][i];
  }
  /// Whether this part counts device d's i-th job (each job of the run is
  /// owned by exactly one part).
  bool owns(std::size_t d, std::size_t i) const {
    if (whole_run) return true;
    const std::int32_t k = step_of(d, i);
    return k >= 0 && static_cast<std::size_t>(k) >= first && static_cast<std::size_t>(k) < last;
  }
};

/// What a figure's value measures: how the reports show it.
enum class FigureUnit : unsigned char {
  count,  ///< an integer: "12"
  ns,     ///< integer nanoseconds: "12.345 ms"
  ratio,  ///< a fraction: "31.2%"
};

/// One row of the table, type-erased: its parts are bytes.
struct FigureSpec {
  /// summary.json's key in "figures", diff's row and the name check limits
  /// (letters, digits and '_').
  std::string key;
  /// The text report's words for it ("most jobs of a device in a step").
  std::string label;
  FigureUnit unit = FigureUnit::count;
  /// `check` may put a limit on it ("max_figures").
  bool threshold = false;
  /// `diff` shows it among the metrics.
  bool compared = true;
  /// The part of `input`, encoded.
  std::function<std::string(const FigureInput& input)> part = {};
  /// Two encoded parts of consecutive step ranges, the earlier first, as one.
  std::function<std::string(std::string_view earlier, std::string_view later)> combine = {};
  /// Puts the whole run's part (encoded) into `into`: its value in
  /// `figures`, or a built-in member.
  std::function<void(std::string_view whole, const Run& run, SummaryFigures& into)> place = {};
};

/// A part that model/byte_codec.h encodes: a trivially copyable value, or a
/// vector of them.
template <typename T>
concept FigurePartValue = std::is_trivially_copyable_v<T> ||
    (std::same_as<T, std::vector<typename T::value_type>>&&
         std::is_trivially_copyable_v<typename T::value_type>);

/// A figure's rule in its own part type. Set `value` for a figure of the
/// "figures" object, or `place` for a built-in member (not both).
template <FigurePartValue Part>
struct FigureRule {
  /// The part of the jobs `input` owns (FigureInput::owns); a part without
  /// jobs too (a rank may own no step).
  std::function<Part(const FigureInput& input)> compute = {};
  /// `later` (the parts of the steps after `earlier`'s) added to `earlier`.
  std::function<void(Part& earlier, const Part& later)> combine = {};
  std::function<FigureNumber(const Part& whole)> value = {};
  std::function<void(const Part& whole, const Run& run, SummaryFigures& into)> place = {};
};

namespace figure_codec {

template <FigurePartValue Part>
std::string encode(const Part& part) {
  ByteWriter w;
  if constexpr (std::is_trivially_copyable_v<Part>) {
    w.put(part);
  } else {
    w.list(part);
  }
  return w.take();
}

template <FigurePartValue Part>
Part decode(std::string_view bytes) {
  ByteReader r(bytes);
  Part part{};
  if constexpr (std::is_trivially_copyable_v<Part>) {
    part = r.get<Part>();
  } else {
    r.list(part);
  }
  if (!r.done()) throw WireError("a figure's part longer than its type");
  return part;
}

}  // namespace figure_codec

/// The row of `about` (key, label, unit, flags) computed by `rule`.
template <FigurePartValue Part>
FigureSpec figure_row(FigureSpec about, FigureRule<Part> rule) {
  if (static_cast<bool>(rule.value) == static_cast<bool>(rule.place)) {
    throw std::invalid_argument("figure " + about.key + ": give value or place, not both");
  }
  about.part = [compute = rule.compute](const FigureInput& input) {
    return figure_codec::encode<Part>(compute(input));
  };
  about.combine = [combine = rule.combine](std::string_view earlier, std::string_view later) {
    Part whole = figure_codec::decode<Part>(earlier);
    combine(whole, figure_codec::decode<Part>(later));
    return figure_codec::encode<Part>(whole);
  };
  if (rule.value) {
    about.place = [key = about.key, value = rule.value](std::string_view whole, const Run&,
                                                        SummaryFigures& into) {
      into.figures.push_back({key, value(figure_codec::decode<Part>(whole))});
    };
  } else {
    about.place = [place = rule.place](std::string_view whole, const Run& run,
                                       SummaryFigures& into) {
      place(figure_codec::decode<Part>(whole), run, into);
    };
  }
  return about;
}

/// The figure registered at run time, from construction to destruction. A
/// key already in the table is refused (std::invalid_argument). Not
/// synchronised with the table's readers: register before the analysis,
/// and end registrations in the reverse order.
class FigureRegistration {
 public:
  explicit FigureRegistration(FigureSpec spec);
  template <FigurePartValue Part>
  FigureRegistration(FigureSpec about, FigureRule<Part> rule)
      : FigureRegistration(figure_row(std::move(about), std::move(rule))) {}
  ~FigureRegistration();
  FigureRegistration(const FigureRegistration&) = delete;
  FigureRegistration& operator=(const FigureRegistration&) = delete;

 private:
  std::string key_;
};

/// Every row: the built-in ones, then those registered, in order.
std::span<const FigureSpec> figure_specs();

/// The row of `key`, or null.
const FigureSpec* find_figure(std::string_view key);

/// Every row's part of `input`, in the table's order.
std::vector<FigurePart> figure_parts(const FigureInput& input);

/// `later` (the parts of the steps after those of `earlier`) combined into
/// `earlier`; an empty `earlier` takes `later` as it is. Throws WireError
/// when the two do not list the same figures.
void combine_figure_parts(std::vector<FigurePart>& earlier, const std::vector<FigurePart>& later);

/// The parts as one message, and back (WireError when it does not decode).
std::string encode_figure_parts(const std::vector<FigurePart>& parts);
std::vector<FigurePart> decode_figure_parts(std::string_view bytes);

/// Puts the whole run's parts into `into` (each row's place); a part whose
/// row is gone is left out.
void place_figures(const std::vector<FigurePart>& whole, const Run& run, SummaryFigures& into);

/// A value as the reports show it: "12", "12.345 ms", "31.2%" (a double of
/// a count as fmt writes it: "7.5"; of nanoseconds rounded to the nearest).
std::string figure_text(const FigureNumber& value, FigureUnit unit);

/// The value as a double (check's limits, diff's rows).
double figure_double(const FigureNumber& value);

}  // namespace pipescope

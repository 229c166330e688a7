#include "export/summary_json.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "export/atomic_file.h"
#include "export/json_writer.h"
#include "export/summary_fields.h"
#include "version.h"

namespace pipescope {

namespace {

using summary_fields::Key;
using summary_fields::kIsOptional;
using summary_fields::kIsScalar;
using summary_fields::kIsVector;
using summary_fields::kOneLine;
using summary_fields::Rule;

constexpr std::string_view kToolName = "pipescope";

/// How deep summary.json holds each step list: "steps" in the top-level
/// object, the others in an object of it. The writer checks it against the
/// field lists where it meets each list.
std::size_t step_list_depth(StepList which) { return which == StepList::steps ? 2 : 3; }

// Writes the keys of summary_fields.h in their order, each as its Rule says;
// a step list's rows come from `rows` (null: none may be met, as in a row).
class FieldWriter {
 public:
  FieldWriter(JsonWriter& w, const StepRowSource* rows = nullptr, std::size_t parts = 0,
              unsigned threads = 1)
      : w_(w), rows_(rows), parts_(parts), threads_(threads) {}

  /// One element of the array being written.
  template <typename T>
  void element(const T& v) {
    value(v);
  }

  template <typename T>
  void operator()(Key key, const T& member) {
    if constexpr (kIsOptional<T>) {
      if (!member) {
        if (key.rule == Rule::nullable) {
          w_.key(key.name);
          w_.null();
        }
        return;
      }
      (*this)(Key{key.name, Rule::optional}, *member);
    } else {
      if (key.rule == Rule::omitted && member == T{}) return;
      w_.key(key.name);
      value(member);
    }
  }

  template <typename T>
  void inline_fields(const T& member) {
    summary_fields::fields(*this, member);
  }
  template <typename T>
  void inline_optional(const std::optional<T>& member, std::string_view /*present_when*/) {
    if (member) summary_fields::fields(*this, *member);
  }
  template <typename T>
  void keyed(Key key, const std::vector<T>& list, std::string T::*name) {
    if (key.rule == Rule::omitted && list.empty()) return;
    w_.key(key.name);
    w_.begin_object();
    for (const T& item : list) {
      w_.key(item.*name);
      value(item);
    }
    w_.end_object();
  }
  void named_values(Key key, const std::vector<NamedFigure>& list) {
    if (key.rule == Rule::omitted && list.empty()) return;
    w_.key(key.name);
    w_.begin_object();
    for (const NamedFigure& figure : list) {
      w_.key(figure.key);
      std::visit([this](auto v) { w_.value(v); }, figure.value);
    }
    w_.end_object();
  }
  void pair(Key key, int a, int b) {
    w_.key(key.name);
    w_.begin_array(/*one_line=*/true);
    w_.value(a);
    w_.value(b);
    w_.end_array();
  }
  template <typename T, typename Make>
  void derived(Key key, const T& member, Make&&) {
    (*this)(key, member);
  }
  /// The list's rows, piece by piece from the source; `list` is not read.
  template <typename T>
  void step_list(Key key, const std::vector<T>& /*list*/, StepList which) {
    if (rows_ == nullptr) throw std::logic_error("summary.json: a step list inside a row");
    // A list written only when not empty opens at its first row: whether it
    // has any is known once a piece holds one.
    bool open = false;
    const auto open_list = [&] {
      w_.key(key.name);
      w_.begin_array();
      if (w_.depth() != step_list_depth(which)) {
        throw std::logic_error("summary.json: a step list is not where step_list_depth says");
      }
      open = true;
    };
    if (key.rule != Rule::omitted) open_list();
    const auto write = [&](const std::string& piece) {
      if (piece.empty()) return;
      if (!open) open_list();
      w_.raw_elements(piece);
    };
    if (threads_ == 1 || parts_ < 2) {
      for (std::size_t part = 0; part < parts_; ++part) write((*rows_)(which, part));
    } else {
      in_pipeline(which, write);
    }
    if (open) w_.end_array();
  }

 private:
  template <typename T>
  void value(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      w_.value(std::string_view(v));
    } else if constexpr (std::is_arithmetic_v<T>) {
      w_.value(v);
    } else if constexpr (kIsVector<T>) {
      using E = typename T::value_type;
      // Lists of numbers or strings on one line; of objects, one per line.
      w_.begin_array(/*one_line=*/kIsScalar<E>);
      for (const E& e : v) value(e);
      w_.end_array();
    } else {
      w_.begin_object(/*one_line=*/kOneLine<T>);
      summary_fields::fields(*this, v);
      w_.end_object();
    }
  }

  /// The pieces of list `which` made side by side and written in order, two
  /// in flight per thread (each a few hundred KB of text).
  template <typename Write>
  void in_pipeline(StepList which, Write& write) {
    const unsigned cores = static_cast<unsigned>(tbb::info::default_concurrency());
    const unsigned workers = threads_ == 0 ? cores : threads_;
    tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, workers);
    std::size_t next = 0;
    struct Item {
      std::size_t part = 0;
      std::string text;
    };
    tbb::parallel_pipeline(
        2 * static_cast<std::size_t>(std::min(workers, cores)),
        tbb::make_filter<void, Item>(tbb::filter_mode::serial_in_order,
                                     [&](tbb::flow_control& control) -> Item {
                                       if (next == parts_) control.stop();
                                       return {next++, {}};
                                     }) &
            tbb::make_filter<Item, Item>(tbb::filter_mode::parallel,
                                         [&](Item item) {
                                           item.text = (*rows_)(which, item.part);
                                           return item;
                                         }) &
            tbb::make_filter<Item, void>(tbb::filter_mode::serial_in_order,
                                         [&](const Item& item) { write(item.text); }));
  }

  JsonWriter& w_;
  const StepRowSource* rows_;
  std::size_t parts_;
  unsigned threads_;
};

/// The rows as summary.json holds them inside list `which` (render_step_rows).
template <typename T>
std::string render_rows(std::span<const T> rows, StepList which) {
  fmt::memory_buffer out;
  JsonWriter w(out, JsonStyle::pretty(), step_list_depth(which));
  FieldWriter writer(w);
  for (const T& row : rows) writer.element(row);
  return std::string(out.data(), out.size());
}

/// What f gives for a list of any step list's rows (the same type for all).
template <typename F>
using RowsResult = std::invoke_result_t<F&, std::span<const StepFigures>>;

/// f(list `which` of `rows`, as a span).
template <typename F>
RowsResult<F> with_rows(const SummaryStepRows& rows, StepList which, F&& f) {
  switch (which) {
    case StepList::steps:
      return f(std::span(rows.steps));
    case StepList::bubble_steps:
      return f(std::span(rows.bubble_steps));
    case StepList::critical_path_steps:
      return f(std::span(rows.critical_path_steps));
    case StepList::event_steps:
      return f(std::span(rows.event_steps));
    case StepList::event_outliers:
      return f(std::span(rows.event_outliers));
  }
  throw std::logic_error("summary.json: not a step list");
}

/// The same for the lists of whole figures (empty where a section is unset).
template <typename F>
RowsResult<F> with_rows(const SummaryFigures& figures, StepList which, F&& f) {
  // An unset section has no rows: an empty list of its row type.
  const auto of = [&f](const auto& section, const auto member) {
    using Row = typename std::remove_reference_t<decltype((*section).*member)>::value_type;
    return section ? f(std::span<const Row>((*section).*member)) : f(std::span<const Row>());
  };
  switch (which) {
    case StepList::steps:
      return f(std::span(figures.steps));
    case StepList::bubble_steps:
      return of(figures.bubbles, &BubblesFigures::steps);
    case StepList::critical_path_steps:
      return of(figures.critical_path, &CriticalPathFigures::steps);
    case StepList::event_steps:
      return of(figures.events, &EventsFigures::steps);
    case StepList::event_outliers:
      return of(figures.events, &EventsFigures::outliers);
  }
  throw std::logic_error("summary.json: not a step list");
}

}  // namespace

std::string render_step_rows(const SummaryStepRows& rows, StepList which) {
  return with_rows(rows, which, [which](auto list) { return render_rows(list, which); });
}

std::vector<StepList> step_lists(const SummaryFigures& f) {
  std::vector<StepList> lists{StepList::steps};
  if (f.bubbles) lists.push_back(StepList::bubble_steps);
  if (f.critical_path) lists.push_back(StepList::critical_path_steps);
  if (f.events) {
    lists.push_back(StepList::event_steps);
    lists.push_back(StepList::event_outliers);
  }
  return lists;
}

/// The schema and the tool, then every key of the figures.
void write_summary_json(const SummaryFigures& f, std::size_t parts, const StepRowSource& rows,
                        const std::string& path, unsigned threads) {
  AtomicFile file(path);
  JsonWriter w(file, JsonStyle::pretty());
  w.begin_object();
  w.field("schema", kSummarySchema);
  w.key("tool");
  w.begin_object(/*one_line=*/true);
  w.field("name", kToolName);
  w.field("version", kVersion);
  w.end_object();
  FieldWriter writer(w, &rows, parts, threads);
  summary_fields::fields(writer, f);
  w.end_object();
  file.append('\n');
  file.commit();
}

void write_summary_json(const SummaryFigures& f, const std::string& path) {
  // The figures' own lists, cut into pieces of kStepRowsPerPiece rows: the
  // parts writer's path (one implementation), holding one piece at a time.
  std::size_t parts = 1;
  for (const StepList which : step_lists(f)) {
    const std::size_t rows = with_rows(f, which, [](auto list) { return list.size(); });
    parts = std::max(parts, (rows + kStepRowsPerPiece - 1) / kStepRowsPerPiece);
  }
  const StepRowSource pieces = [&f](StepList which, std::size_t part) {
    return with_rows(f, which, [which, part](auto list) {
      const std::size_t first = std::min(list.size(), part * kStepRowsPerPiece);
      return render_rows(list.subspan(first, std::min(kStepRowsPerPiece, list.size() - first)),
                         which);
    });
  };
  write_summary_json(f, parts, pieces, path);
}

namespace {

/// The summary of `run` with its step lists made a piece at a time from the
/// metrics and the analysis (whole_run_step_inputs, kStepRowsPerPiece steps
/// each), as a step range's owner makes them: no list of every step's rows
/// is ever held (at a row per step and device, tens of MB for a long run).
void write_streamed(const Run& run, const Metrics& metrics, const PipelineAnalysis* pipeline,
                    SummaryFigures figures, const std::string& path, unsigned threads = 0) {
  // The events' lists are few rows, placed once (summary_figures leaves them
  // out with SummaryRows::none).
  SummaryFigures events;
  events.events = events_figures(run, metrics);
  const std::size_t steps = metrics.steps.size();
  const std::size_t parts =
      std::max<std::size_t>(1, (steps + kStepRowsPerPiece - 1) / kStepRowsPerPiece);
  const StepRowSource pieces = [&](StepList which, std::size_t part) {
    if (which == StepList::event_steps || which == StepList::event_outliers) {
      return part == 0
                 ? with_rows(events, which, [which](auto list) { return render_rows(list, which); })
                 : std::string();
    }
    const std::size_t first = std::min(steps, part * kStepRowsPerPiece);
    const std::size_t last = std::min(steps, first + kStepRowsPerPiece);
    const StepRowInputs in = whole_run_step_inputs(run, metrics, pipeline, nullptr, first, last);
    return render_step_rows(step_rows(in, which), which);
  };
  write_summary_json(figures, parts, pieces, path, threads);
}

}  // namespace

void write_summary_json(const Run& run, const Metrics& metrics, const std::string& path) {
  write_streamed(run, metrics, nullptr,
                 summary_figures(run, metrics, nullptr, summary_job_facts(run, metrics, nullptr),
                                 SummaryRows::none),
                 path);
}

void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const std::string& path) {
  write_streamed(run, metrics, &pipeline,
                 summary_figures(run, metrics, &pipeline,
                                 summary_job_facts(run, metrics, &pipeline), SummaryRows::none),
                 path);
}

void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const KernelView& kernels, const std::string& path,
                        const std::vector<TraceFileFigures>& traces, unsigned threads) {
  SummaryFigures figures = summary_figures(
      run, metrics, &pipeline, summary_job_facts(run, metrics, &pipeline), SummaryRows::none);
  figures.kernel_view = kernel_view_figures(kernels);
  figures.traces = traces;
  write_streamed(run, metrics, &pipeline, std::move(figures), path, threads);
}

}  // namespace pipescope

#include "export/summary_json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
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

// Writes the keys of summary_fields.h in their order, each as its Rule says.
class FieldWriter {
 public:
  explicit FieldWriter(JsonWriter& w) : w_(w) {}

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

  JsonWriter& w_;
};

}  // namespace

/// The schema and the tool, then every key of the figures.
void write_summary_json(const SummaryFigures& f, const std::string& path) {
  AtomicFile file(path);
  JsonWriter w(file, JsonStyle::pretty());
  w.begin_object();
  w.field("schema", kSummarySchema);
  w.key("tool");
  w.begin_object(/*one_line=*/true);
  w.field("name", kToolName);
  w.field("version", kVersion);
  w.end_object();
  FieldWriter writer(w);
  summary_fields::fields(writer, f);
  w.end_object();
  file.append('\n');
  file.commit();
}

void write_summary_json(const Run& run, const Metrics& metrics, const std::string& path) {
  write_summary_json(summary_figures(run, metrics), path);
}

void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const std::string& path) {
  write_summary_json(summary_figures(run, metrics, pipeline), path);
}

void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const KernelView& kernels, const std::string& path,
                        const std::vector<TraceFileFigures>& traces) {
  SummaryFigures figures = summary_figures(run, metrics, pipeline);
  figures.kernel_view = kernel_view_figures(kernels);
  figures.traces = traces;
  write_summary_json(figures, path);
}

}  // namespace pipescope

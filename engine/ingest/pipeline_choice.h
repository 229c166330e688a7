// Which pipeline of several (data-parallel replicas) a run of Paddle dygraph
// records or PyTorch traces analyses: the option both readers take
// (dygraph_reader.h, trace_pipeline_choice.h), and its one check.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pipescope {

struct PipelineChoice {
  /// Paddle dygraph records or PyTorch traces of several pipelines
  /// (data-parallel replicas): which one to analyse (dygraph_reader.h,
  /// torch_trace_reader.h); unset: pipeline 0.
  std::optional<int> pipeline;
};

/// Throws the InputError for PipelineChoice::pipeline naming a pipeline the
/// inputs (`what`: "the traces", ...) do not hold, if it does.
void check_pipeline_choice(const PipelineChoice& options, std::size_t pipelines,
                           std::string_view what);

}  // namespace pipescope

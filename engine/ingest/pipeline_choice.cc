#include "ingest/pipeline_choice.h"

#include <fmt/core.h>

#include <algorithm>

#include "model/errors.h"

namespace pipescope {

void check_pipeline_choice(const PipelineChoice& options, std::size_t pipelines,
                           std::string_view what) {
  if (!options.pipeline) return;
  const auto chosen = static_cast<std::size_t>(std::max(*options.pipeline, 0));
  if (chosen < std::max<std::size_t>(pipelines, 1)) return;
  throw InputError(
      fmt::format("pipeline {} asked for, but {} hold {} pipeline{} ({})", chosen, what, pipelines,
                  pipelines == 1 ? "" : "s",
                  pipelines <= 1 ? std::string("0") : fmt::format("0-{}", pipelines - 1)));
}

}  // namespace pipescope

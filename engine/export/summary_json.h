// summary.json: the machine-readable result of `pipescope analyze`, schema
// "pipescope.summary/1" (README.md, "summary.json"). Written from the model
// and the computed metrics only; the logs are never read again.
#pragma once

#include <string>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "model/run.h"

namespace pipescope {

/// Writes the summary to `path` atomically (a reader sees the old file or the
/// whole new one). The folder must exist (see ensure_output_dir). The same
/// Run and Metrics always give the same bytes. Throws std::system_error
/// ("cannot write PATH: ...") on I/O failure.
void write_summary_json(const Run& run, const Metrics& metrics, const std::string& path);

/// The same summary plus the pipeline sections (README, "Explaining the
/// bubbles"): schedule, stages, bubbles, bottleneck, critical_path, clock,
/// warnings. Same errors.
void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const std::string& path);

}  // namespace pipescope

// summary.json: the machine-readable result of `pipescope analyze`, schema
// "pipescope.summary/1" (docs/formats.md, "summary.json"). Written from the figures
// of summary_figures.h, which come from the model and the computed metrics
// only; the logs are never read again. summary_reader.h reads it back.
#pragma once

#include <string>
#include <vector>

#include "analysis/kernel_view.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "export/summary_figures.h"
#include "model/run.h"

namespace pipescope {

/// Writes `figures` to `path` atomically (a reader sees the old file or the
/// whole new one), the pipeline sections when they are set. The folder must
/// exist (see ensure_output_dir). The same figures always give the same bytes.
/// Throws std::system_error ("cannot write PATH: ...") on I/O failure.
void write_summary_json(const SummaryFigures& figures, const std::string& path);

/// write_summary_json(summary_figures(run, metrics), path).
void write_summary_json(const Run& run, const Metrics& metrics, const std::string& path);

/// The same summary plus the pipeline sections (docs/guide.md, "Explaining the
/// bubbles"): schedule, stages, bubbles, bottleneck, critical_path, clock,
/// warnings. Same errors.
void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const std::string& path);

/// The same plus the "kernel_view" section of `kernels` when it is available
/// (`analyze` and `watch` on PyTorch traces) and the "traces" entries of
/// the traces that hold only some steps (`analyze`). Same errors.
void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const KernelView& kernels, const std::string& path,
                        const std::vector<TraceFileFigures>& traces = {});

}  // namespace pipescope

// summary.json: the machine-readable result of `pipescope analyze`, schema
// "pipescope.summary/1" (docs/formats.md, "summary.json"). Written from the figures
// of summary_figures.h, which come from the model and the computed metrics
// only; the logs are never read again. summary_reader.h reads it back.
//
// Written by parts (the partitioned analysis, analysis/step_partition.h):
// the step lists (summary_step_rows.h) hold a row per step, which no rank
// holds for the whole run. Rank 0 writes the document from the whole-run
// figures and, at each step list, asks a StepRowSource for the rows of each
// step range in order; each range's owner renders its rows
// (render_step_rows) and sends the text. The pieces go to the file as they
// come, so no rank holds more than its share and rank 0 one piece at a time:
//
//   on every rank p:  text[list] = render_step_rows(step_rows(my_inputs), list)
//                     for each list of step_lists(whole_run)
//   on rank 0:        write_summary_json(whole_run, parts,
//                         [&](StepList list, std::size_t p) { return text of (list, p); }, path);
//
// The single document is the same writer over pieces of its own lists, so
// both give the same bytes.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "analysis/kernel_view.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "export/summary_figures.h"
#include "export/summary_step_rows.h"
#include "model/run.h"

namespace pipescope {

/// Writes `figures` to `path` atomically (a reader sees the old file or the
/// whole new one), the pipeline sections when they are set. The folder must
/// exist (see ensure_output_dir). The same figures always give the same bytes.
/// Throws std::system_error ("cannot write PATH: ...") on I/O failure.
/// It is the writer below, its step lists served from `figures` in pieces
/// of kStepRowsPerPiece rows.
void write_summary_json(const SummaryFigures& figures, const std::string& path);

/// The rows of `rows`' list `which` as summary.json holds them between the
/// list's '[' and ']', for rows in the middle of the list: each row on its
/// own line(s) at the list's indentation, rows separated by ",", no
/// separator before the first row or after the last; "" without rows.
/// (Rows of one list only: the others in `rows` are not read.)
std::string render_step_rows(const SummaryStepRows& rows, StepList which);

/// The text of list `which` of step range `part` (render_step_rows of that
/// range's rows; "" when it has none). An exception it throws passes
/// through the writer, which then leaves `path` as it was.
using StepRowSource = std::function<std::string(StepList which, std::size_t part)>;

/// The step lists a summary of `whole_run` holds, in document order: steps,
/// then bubbles.steps and critical_path.steps when those sections are set,
/// then events.steps and events.outliers when `events` is set. An owner
/// renders these; the writer asks for them in this order.
std::vector<StepList> step_lists(const SummaryFigures& whole_run);

/// Writes the summary of `whole_run` (all but its step lists, which are
/// not read: they may be left empty) with the step lists' rows from `rows`:
/// for each list of step_lists(whole_run) in turn, rows(list, 0), ...,
/// rows(list, parts - 1), each called once and its text written to the file
/// before the next call. A list written only when not empty (events.steps,
/// events.outliers) is left out when every piece is "". Pieces of
/// consecutive step ranges give the bytes the single document has when each
/// piece is render_step_rows of its range's rows. Atomic and with the errors
/// of the single-document writer.
/// `threads` > 1 (0: one per core) lets the writer call `rows` for several
/// consecutive parts of a list at once, on that many threads, each piece's
/// text still written in order, while the next ones are made (for a source
/// that may be called side by side: the single process's, not the ranks'
/// collectives); 1 calls it one part at a time, in order.
void write_summary_json(const SummaryFigures& whole_run, std::size_t parts,
                        const StepRowSource& rows, const std::string& path, unsigned threads = 1);

/// Rows per piece when the single-document writer serves its own lists:
/// bounds what it holds as text at once.
inline constexpr std::size_t kStepRowsPerPiece = 1024;

/// write_summary_json(summary_figures(run, metrics), path).
void write_summary_json(const Run& run, const Metrics& metrics, const std::string& path);

/// The same summary plus the pipeline sections (docs/guide.md, "Explaining the
/// bubbles"): schedule, stages, bubbles, bottleneck, critical_path, clock,
/// warnings. Same errors.
void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const std::string& path);

/// The same plus the "kernel_view" section of `kernels` when it is available
/// (`analyze` and `watch` on PyTorch traces) and the "traces" entries of
/// the traces that hold only some steps (`analyze`). Same errors. The step
/// lists' pieces are made on `threads` threads (0: one per core), as -j says.
void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const KernelView& kernels, const std::string& path,
                        const std::vector<TraceFileFigures>& traces = {}, unsigned threads = 0);

}  // namespace pipescope

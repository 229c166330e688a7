// Which traces of a multi-file run form the pipeline that is analysed.
//
// Ranks whose labels name the same stages are tensor-parallel peers of one
// stage or data-parallel replicas of the pipeline, which the labels cannot
// tell apart. The k-th trace of each stage, in discovery order (machine,
// then rank), is pipeline k.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/pipeline_choice.h"
#include "model/option_words.h"

namespace pipescope {

/// Applies the pipeline choice to the per-file `results` of `files`, where
/// `lowest_stage[i]` is the lowest stage trace i's labels name (traces
/// without one, or without jobs, take no part).
///  - One pipeline: nothing changes.
///  - Several, PipelineChoice::pipeline unset: all are analysed as devices of
///    their stages (peers), and a `shared_stages` note on the first result
///    says so and how to pick one.
///  - Several, pipeline K set: the traces of pipeline K keep their devices,
///    numbered (index and rank) by stage; the others lose theirs
///    (has_device false); an `other_pipelines` note lists them, and a
///    `missing_stage` note names the stages pipeline K has no trace of.
/// Throws InputError when K names a pipeline the traces do not hold
/// (check_pipeline_choice). The note's advice is `words`'
/// CallerOption::pipeline.
void choose_trace_pipeline(const std::vector<InputFile>& files,
                           const std::vector<std::optional<std::int64_t>>& lowest_stage,
                           const PipelineChoice& options, const OptionWords& words,
                           std::vector<FileResult>& results);

}  // namespace pipescope

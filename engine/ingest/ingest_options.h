// Everything reading a run's inputs is told: every reader's options, and each
// format's own (one header each), put together so that a caller fills one
// struct and each reader takes only its part.
#pragma once

#include "ingest/nsys_options.h"
#include "ingest/pipeline_choice.h"
#include "ingest/progress_meter.h"
#include "ingest/read_options.h"
#include "ingest/text_log_options.h"
#include "ingest/torch_trace_options.h"

namespace pipescope {

struct IngestOptions : ReadOptions, PipelineChoice, TextLogOptions, TorchTraceOptions, NsysOptions {
  /// Called as files are read (from reader threads, one call at a time;
  /// keep it cheap).
  ProgressCallback on_progress;
};

}  // namespace pipescope

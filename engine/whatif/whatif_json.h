// whatif.json (schema pipescope.whatif/1, docs/formats.md): the measured run
// and the predicted scenarios of `pipescope whatif`, written atomically.
//
// Usage:
//   write_whatif_json(inputs, predictions, options, "out/whatif.json");
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/warning.h"
#include "whatif/model_error.h"
#include "whatif/replay.h"

namespace pipescope {

inline constexpr std::string_view kWhatifSchema = "pipescope.whatif/1";

/// predicted step time / measured step time - 1 (0 when nothing was measured).
double step_change(const MeasuredRun& measured, const Prediction& prediction);

/// Writes the document to `path` atomically (the folder must exist). Throws
/// std::system_error on I/O failure.
void write_whatif_json(const WhatifInputs& inputs, const std::vector<Prediction>& predictions,
                       const ReplayOptions& options, const ModelError& error,
                       const std::vector<Warning>& warnings, const std::string& path);

}  // namespace pipescope

// Shared by the tests/wild/*_test.cc files: job lines and small logs, and a look
// at a run's diagnostics.
#pragma once

#include <fmt/core.h>

#include <string>
#include <string_view>

#include "model/run.h"

namespace pipescope::testing {

inline std::string wild_job_line(int id, int mb, std::int64_t start_ms, std::int64_t end_ms,
                                 std::string_view type = "forward") {
  return fmt::format(
      "I1020 09:15:07.265326 22317 standalone_executor.cc:217] Profiler Info: Job ({}), type = "
      "{}, micro_batch_id = {}, job_start_time = {}.000, job_end_time = {}.000\n",
      id, type, mb, start_ms, end_ms);
}

/// `jobs` job lines with noise between them: one device's log.
inline std::string wild_log(int jobs, std::int64_t t0 = 1000) {
  std::string log = "Schedule Profiler start at step 1\n";
  for (int i = 0; i < jobs; ++i) {
    log += "I1020 09:15:07.000000 1 interpretercore.cc:1] noise line\n";
    log += wild_job_line(i, i % 4, t0 + 10 * i, t0 + 10 * i + 5, i % 2 ? "backward" : "forward");
  }
  return log;
}

/// True when some diagnostic of `run` contains `text`.
inline bool has_diagnostic(const Run& run, std::string_view text) {
  for (const Diagnostic& d : run.diagnostics) {
    if (d.message.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace pipescope::testing

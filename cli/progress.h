// A single self-updating progress line on a terminal (nothing when the
// stream is not a terminal, so logs and pipes stay clean).
#pragma once

#include <chrono>
#include <cstdio>

#include "ingest/ingest.h"

namespace pipescope::cli {

class ProgressLine {
 public:
  /// `force`: draw even when `stream` is not a terminal (under mpirun the
  /// ranks' stderr is a pipe to the launcher, whatever the user sees).
  explicit ProgressLine(std::FILE* stream, bool force = false);
  ~ProgressLine() { finish(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }
  /// Redraws at most ten times a second.
  void update(const IngestProgress& progress);
  /// Clears the line.
  void finish();

 private:
  std::FILE* stream_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace pipescope::cli

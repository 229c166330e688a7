// The progress of reading a run's inputs: the readers, running side by
// side, each report what they read; one callback sees the sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "ingest/discovery.h"

namespace pipescope {

struct IngestProgress {
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;  ///< sum of the file sizes at discovery
  std::size_t files_done = 0;
  std::size_t files_total = 0;
};

/// Called as files are read (from reader threads, one call at a time; keep
/// it cheap).
using ProgressCallback = std::function<void(const IngestProgress&)>;

class ProgressMeter {
 public:
  /// `callback` (may be empty) must outlive the meter.
  ProgressMeter(const std::vector<InputFile>& inputs, const ProgressCallback& callback);
  /// Thread-safe.
  void advance(std::uint64_t bytes, std::size_t files);

 private:
  std::mutex mutex_;
  IngestProgress progress_;
  const ProgressCallback& callback_;
};

}  // namespace pipescope

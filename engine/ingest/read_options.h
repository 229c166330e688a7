// What every reader of the format table is told, whatever its format.
#pragma once

#include <cstddef>
#include <memory>

#include "model/option_words.h"
#include "source/chunk.h"

namespace pipescope {

struct ReadOptions {
  /// Worker threads; 0 means one per core.
  unsigned threads = 0;
  /// Chunk and line sizes (line formats skip a longer line and say so).
  ReadLimits limits;
  /// Diagnostics kept per input file (the counts are always complete).
  std::size_t diagnostics_per_file = 5;
  /// How messages name the caller's options (model/option_words.h): the
  /// note that lists the other pipelines (CallerOption::pipeline), a job
  /// line lost in an over-long line (max_line), the job lines looked for
  /// (job_line). Never null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
};

}  // namespace pipescope

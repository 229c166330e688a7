// What every reader of the format table is told, whatever its format.
#pragma once

#include <cstddef>

#include "source/chunk.h"

namespace pipescope {

struct ReadOptions {
  /// Worker threads; 0 means one per core.
  unsigned threads = 0;
  /// Chunk and line sizes (line formats skip a longer line and say so).
  ReadLimits limits;
  /// Diagnostics kept per input file (the counts are always complete).
  std::size_t diagnostics_per_file = 5;
};

}  // namespace pipescope

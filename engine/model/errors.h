// The engine's exception types, in one place. Two tiers (docs/guide.md,
// "Errors"): set-up problems are exceptions carrying the path and the reason,
// turned into one line and exit status 2 at the CLI's edge; problems of one
// line or record on the hot path are never exceptions but counters and
// diagnostics (model/run.h InputStats, Diagnostic). System calls that fail
// throw std::system_error with errno and the path ("cannot write PATH: ...").
#pragma once

#include <stdexcept>

namespace pipescope {

/// A fatal set-up problem with the inputs: a path that does not exist, a
/// folder without worker logs, a bad device selection, a summary that does
/// not parse, a run without a single job. Nothing sensible can be analysed.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A message between the ranks of `analyze --mpi` that does not decode or
/// contradicts what arrived before (distributed/wire.h).
class WireError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pipescope

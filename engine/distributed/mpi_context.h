// MPI for the length of one command: initialised (threads: funneled, only
// the main thread calls MPI; the scan's worker threads never do) when the
// object is made, finalised when it goes away. Only built with MPI.
#pragma once

#include <mpi.h>

#include <string>

namespace pipescope::distributed {

class MpiContext {
 public:
  /// Initialises MPI unless the program already did (then it is left to
  /// the program to finalise). Throws std::runtime_error when MPI cannot
  /// give funneled threads.
  MpiContext();
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// Prints "pipescope: rank R: MESSAGE; aborting all ranks" to stderr and
  /// ends every rank with `code`. Used when waiting longer would hang.
  [[noreturn]] void abort(const std::string& message, int code = 2) const;

 private:
  bool owns_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace pipescope::distributed

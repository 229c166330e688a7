// What the partitioned analysis (partitioned_analysis.h) needs of the ranks
// it runs on: collective exchanges of bytes, nothing else. The MPI session
// implements it over MPI_COMM_WORLD with deadlines (cluster_mpi.cc); the tests
// and a single process run it on threads (local_exchange.h), so the analysis
// code is the same wherever it runs.
//
// Every rank calls the same collectives in the same order (the partitioned
// analysis is deterministic); a rank that fails throws, and the
// implementation makes the others' pending and later calls throw too, so no
// rank waits forever.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pipescope::distributed {

class Exchange {
 public:
  virtual ~Exchange() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Every rank's `mine`, indexed by rank (this rank's included).
  virtual std::vector<std::string> all_gather(std::string mine) = 0;

  /// `out[r]` goes to rank r (out.size() == size()); returns what every rank
  /// sent this one, indexed by sender.
  virtual std::vector<std::string> all_to_all(std::vector<std::string> out) = 0;
};

}  // namespace pipescope::distributed

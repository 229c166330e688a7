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
#include <cstdlib>
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

/// The most bytes of jobs a rank brings in or sends out in one round of an
/// exchange of jobs: 4 MiB, so that the rounds' buffers (the exchange
/// copies a round a few times over) stay within the allowance of the
/// per-rank memory bound. PIPESCOPE_MPI_MESSAGE_BYTES (tests) sets it.
inline std::size_t job_round_bytes() {
  if (const char* env = std::getenv("PIPESCOPE_MPI_MESSAGE_BYTES")) {
    const long long n = std::atoll(env);
    if (n > 0) return static_cast<std::size_t>(n);
  }
  return std::size_t{4} << 20;
}

}  // namespace pipescope::distributed

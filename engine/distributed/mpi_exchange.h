// The Exchange (exchange.h) of MPI ranks: MPI_COMM_WORLD's nonblocking
// collectives (MPI-3), each polled against a deadline, so a rank that died or
// hangs ends the run with a message naming the collective instead of a hang.
// Only the thread that initialised MPI may call it. Only built with MPI.
//
// A collective moves each rank's bytes in one call when they fit an int
// count, and in rounds of at most 1 GiB per rank otherwise, so a part of
// any size travels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distributed/exchange.h"
#include "distributed/mpi_context.h"
#include "model/option_words.h"

namespace pipescope::distributed {

class MpiExchange final : public Exchange {
 public:
  /// `timeout_s`: how long one collective may wait for the slowest rank
  /// before every rank is aborted (MpiContext::abort, exit status 2); the
  /// message names the option that sets it (CallerOption::mpi_timeout) in
  /// `words`.
  MpiExchange(const MpiContext& mpi, double timeout_s,
              std::shared_ptr<const OptionWords> words = OptionWords::engine());

  int rank() const override { return mpi_.rank(); }
  int size() const override { return mpi_.size(); }
  std::vector<std::string> all_gather(std::string mine) override;
  std::vector<std::string> all_to_all(std::vector<std::string> out) override;

 private:
  const MpiContext& mpi_;
  double timeout_s_;
  std::shared_ptr<const OptionWords> words_;
};

}  // namespace pipescope::distributed

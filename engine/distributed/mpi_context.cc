#include "distributed/mpi_context.h"

#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace pipescope::distributed {

MpiContext::MpiContext() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      throw std::runtime_error("MPI_Init_thread failed");
    }
    owns_ = true;
    if (provided < MPI_THREAD_FUNNELED) {
      MPI_Finalize();
      owns_ = false;
      throw std::runtime_error("the MPI library does not support MPI_THREAD_FUNNELED");
    }
  }
  // Errors are checked by the caller where they matter; the default handler
  // would abort without saying which step failed.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiContext::~MpiContext() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiContext::abort(const std::string& message, int code) const {
  std::fflush(stdout);
  fmt::print(stderr, "pipescope: rank {}: {}; aborting all ranks\n", rank_, message);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; this tells the compiler so
}

}  // namespace pipescope::distributed

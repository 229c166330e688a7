// run_on_cluster() of a build without MPI (-DPIPESCOPE_MPI=OFF, or AUTO
// without an MPI library): a clear message instead of a missing option.
#include <fmt/core.h>

#include "distributed/cluster.h"

namespace pipescope::distributed {

bool cluster_support_built() { return false; }

int run_on_cluster(const ClusterOptions& options, const ClusterCallbacks&, int) {
  throw InputError(
      fmt::format("{}: this pipescope was built without MPI; install an MPI library (Debian: "
                  "libopenmpi-dev openmpi-bin) and configure with -DPIPESCOPE_MPI=ON",
                  options.scan.words->name(CallerOption::mpi)));
}

}  // namespace pipescope::distributed

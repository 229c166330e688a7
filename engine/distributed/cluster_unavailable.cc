// run_on_cluster() of a build without MPI (-DPIPESCOPE_MPI=OFF, or AUTO
// without an MPI library): a clear message instead of a missing option.
#include "distributed/cluster.h"

namespace pipescope::distributed {

bool cluster_support_built() { return false; }

int run_on_cluster(const ClusterOptions&, const ClusterCallbacks&, int) {
  throw InputError(
      "--mpi: this pipescope was built without MPI; install an MPI library (Debian: "
      "libopenmpi-dev openmpi-bin) and configure with -DPIPESCOPE_MPI=ON");
}

}  // namespace pipescope::distributed

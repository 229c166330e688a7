// --machine-order (discovery.h order_machines): the machines in the order
// named, devices renumbered; every machine named once, or an error listing
// them.
#include <gtest/gtest.h>

#include "ingest/discovery.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

TEST(MachineOrder, NamedOrderRenumbersMachinesAndDevices) {
  TempDir dir;
  for (const char* m : {"nodeA", "nodeB", "nodeC"}) {
    for (int r = 0; r < 2; ++r)
      dir.write(std::string("run/") + m + "/workerlog." + std::to_string(r), "x\n");
  }
  const auto found = discover_inputs({dir / "run"});
  ASSERT_EQ(found.size(), 6u);
  EXPECT_EQ(found[0].machine_name, "nodeA");
  const auto ordered = order_machines(found, {"nodeC", "nodeA", "nodeB"});
  ASSERT_EQ(ordered.size(), 6u);
  EXPECT_EQ(ordered[0].machine_name, "nodeC");
  EXPECT_EQ(ordered[0].machine, 0);
  EXPECT_EQ(ordered[1].rank, 1);
  EXPECT_EQ(ordered[2].machine_name, "nodeA");
  EXPECT_EQ(ordered[2].machine, 1);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ordered[static_cast<std::size_t>(i)].device, i);
  EXPECT_EQ(order_machines(found, {}).front().machine_name, "nodeA");
  EXPECT_THROW(order_machines(found, {"nodeC", "nodeA"}), InputError);           // one missing
  EXPECT_THROW(order_machines(found, {"nodeC", "nodeA", "nodeA"}), InputError);  // twice
  try {
    order_machines(found, {"nodeC", "nodeA", "nodeD"});
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nodeA,nodeB,nodeC"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipescope

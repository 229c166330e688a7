#include "ingest/discovery.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

TEST(Discovery, OrdersRanksNumerically) {
  TempDir dir;
  for (const char* name : {"workerlog.10", "workerlog.2", "workerlog.0", "workerlog.1",
                           "workerlog", "workerlog.3.old", "endpoints.log", "workerlog.x"}) {
    dir.write(name, "x\n");
  }
  const auto inputs = discover_inputs({dir.path().string()});
  ASSERT_EQ(inputs.size(), 4u);
  const int ranks[] = {0, 1, 2, 10};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(inputs[i].rank, ranks[i]);
    EXPECT_EQ(inputs[i].device, i);
    EXPECT_EQ(inputs[i].machine, 0);
    EXPECT_EQ(inputs[i].size_bytes, 2u);
  }
}

TEST(Discovery, OrdersMachinesNumericallyAndNumbersDevicesGlobally) {
  TempDir dir;
  for (const char* m : {"machine10", "machine9", "machine0"}) {
    for (const char* r : {"workerlog.1", "workerlog.0"}) dir.write(std::string(m) + "/" + r, "x\n");
  }
  std::filesystem::create_directories(dir.path() / "machine5");  // no logs: ignored
  const auto inputs = discover_inputs({dir.path().string()});
  ASSERT_EQ(inputs.size(), 6u);
  EXPECT_EQ(inputs[0].machine_name, "machine0");
  EXPECT_EQ(inputs[2].machine_name, "machine9");
  EXPECT_EQ(inputs[4].machine_name, "machine10");
  EXPECT_EQ(inputs[5].machine, 2);
  EXPECT_EQ(inputs[5].rank, 1);
  EXPECT_EQ(inputs[5].device, 5);
}

TEST(Discovery, SeveralPathsAreMachinesInArgumentOrder) {
  TempDir dir;
  dir.write("b/workerlog.0", "x\n");
  dir.write("a/workerlog.0", "x\n");
  dir.write("a/workerlog.1", "x\n");
  const auto inputs = discover_inputs({dir / "b", dir / "a"});
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0].path, dir / "b/workerlog.0");
  EXPECT_EQ(inputs[1].machine, 1);
  EXPECT_EQ(inputs[2].device, 2);
}

TEST(Discovery, FilesGivenDirectly) {
  TempDir dir;
  const auto a = dir.write("machine1/workerlog.3", "x\n");
  const auto b = dir.write("machine1/workerlog.1", "x\n");
  const auto inputs = discover_inputs({a, b});
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].rank, 1);
  EXPECT_EQ(inputs[1].rank, 3);
  EXPECT_EQ(inputs[0].machine_name, "machine1");
  EXPECT_THROW(discover_inputs({a, a}), InputError);
}

TEST(Discovery, ExplainsWhatWasLookedFor) {
  TempDir dir;
  dir.write("notes.txt", "x\n");
  try {
    discover_inputs({dir.path().string()});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workerlog.N"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("machineK"), std::string::npos) << e.what();
  }
  EXPECT_THROW(discover_inputs({dir / "missing"}), InputError);
  EXPECT_THROW(discover_inputs({}), InputError);
}

TEST(Discovery, DeviceSelection) {
  EXPECT_EQ(parse_device_list("3,0,2"), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(parse_device_list("0-3,6,2"), (std::vector<int>{0, 1, 2, 3, 6}));
  for (const char* bad : {"", "a", "1,,2", "3-1", "-1", "1-", "1.5"}) {
    EXPECT_THROW(parse_device_list(bad), InputError) << bad;
  }
  TempDir dir;
  for (int r = 0; r < 4; ++r) dir.write("workerlog." + std::to_string(r), "x\n");
  const auto selected = select_devices(discover_inputs({dir.path().string()}), {0, 2, 3});
  ASSERT_EQ(selected.size(), 3u);
  EXPECT_EQ(selected[1].rank, 2);
  EXPECT_EQ(selected[1].device, 2);  // keeps its global index
  EXPECT_THROW(select_devices(discover_inputs({dir.path().string()}), {4}), InputError);
}

}  // namespace
}  // namespace pipescope

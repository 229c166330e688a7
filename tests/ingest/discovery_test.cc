#include "ingest/discovery.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

TEST(Discovery, OrdersRanksNumerically) {
  TempDir dir;
  for (const char* name : {"workerlog.10", "workerlog.2", "workerlog.0", "workerlog.1", "workerlog",
                           "workerlog.3.old", "endpoints.log", "workerlog.x"}) {
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

TEST(Discovery, NaturalCompareTakesDigitRunsAsNumbers) {
  EXPECT_LT(natural_compare("node2", "node10"), 0);
  EXPECT_GT(natural_compare("node10", "node2"), 0);
  EXPECT_LT(natural_compare("machine9", "machine10"), 0);
  EXPECT_EQ(natural_compare("machine01", "machine1"), 0);
  EXPECT_LT(natural_compare("node", "node0"), 0);
  EXPECT_LT(natural_compare("a10b2", "a10b10"), 0);
  EXPECT_LT(natural_compare("rack1-node9", "rack2-node1"), 0);
  EXPECT_LT(natural_compare("Node1", "node1"), 0);  // bytes: 'N' < 'n'
  EXPECT_EQ(natural_compare("", ""), 0);
  EXPECT_LT(natural_compare("", "a"), 0);
}

TEST(Discovery, SeveralPathsAreOrderedByFolderNameNotArgumentOrder) {
  TempDir dir;
  dir.write("b/workerlog.0", "x\n");
  dir.write("a/workerlog.0", "x\n");
  dir.write("a/workerlog.1", "x\n");
  const auto inputs = discover_inputs({dir / "b", dir / "a"});
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0].path, dir / "a/workerlog.0");
  EXPECT_EQ(inputs[0].machine, 0);
  EXPECT_EQ(inputs[1].path, dir / "a/workerlog.1");
  EXPECT_EQ(inputs[2].path, dir / "b/workerlog.0");
  EXPECT_EQ(inputs[2].machine, 1);
  EXPECT_EQ(inputs[2].device, 2);
}

TEST(Discovery, MachineFoldersGivenInReverseKeepTheirNumbers) {
  // `analyze run/machine1 run/machine0` numbers the machines as `analyze run`.
  TempDir dir;
  for (const char* m : {"machine0", "machine1"}) {
    for (const char* r : {"workerlog.0", "workerlog.1"}) dir.write(std::string(m) + "/" + r, "x\n");
  }
  const auto whole = discover_inputs({dir.path().string()});
  const auto reversed = discover_inputs({dir / "machine1", dir / "machine0"});
  const auto trailing = discover_inputs({dir / "machine1/", dir / "machine0/"});
  ASSERT_EQ(reversed.size(), 4u);
  for (const auto* inputs : {&whole, &reversed, &trailing}) {
    ASSERT_EQ(inputs->size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ((*inputs)[i].machine, static_cast<int>(i / 2));
      EXPECT_EQ((*inputs)[i].machine_name, i < 2 ? "machine0" : "machine1");
      EXPECT_EQ((*inputs)[i].rank, static_cast<int>(i % 2));
      EXPECT_EQ((*inputs)[i].device, static_cast<int>(i));
    }
  }
  EXPECT_EQ(reversed[0].path, dir / "machine0/workerlog.0");
  EXPECT_EQ(reversed[3].path, dir / "machine1/workerlog.1");
  // Files given directly, last machine first: the same numbering.
  const auto files = discover_inputs({dir / "machine1/workerlog.0", dir / "machine0/workerlog.1"});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].machine_name, "machine0");
  EXPECT_EQ(files[0].machine, 0);
  EXPECT_EQ(files[1].machine_name, "machine1");
  EXPECT_EQ(files[1].device, 1);
}

TEST(Discovery, NodeFoldersInGlobOrderAreOrderedNumerically) {
  // A shell expands node* as node1 node10 node2: node2 is still machine 2.
  TempDir dir;
  for (const char* m : {"node1", "node10", "node2"})
    dir.write(std::string(m) + "/workerlog.0", "x\n");
  const auto inputs = discover_inputs({dir / "node1", dir / "node10", dir / "node2"});
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0].path, dir / "node1/workerlog.0");
  EXPECT_EQ(inputs[1].path, dir / "node2/workerlog.0");
  EXPECT_EQ(inputs[1].machine, 1);
  EXPECT_EQ(inputs[1].device, 1);
  EXPECT_EQ(inputs[2].path, dir / "node10/workerlog.0");
  EXPECT_EQ(inputs[2].machine, 2);
  EXPECT_EQ(inputs[2].machine_name, "");  // not a machineK name
}

TEST(Discovery, SameFolderNamesAreOrderedByFullPath) {
  TempDir dir;
  dir.write("rack-b/node1/workerlog.0", "x\n");
  dir.write("rack-a/node1/workerlog.0", "x\n");
  dir.write("rack-a/node02/workerlog.0", "x\n");
  const auto inputs =
      discover_inputs({dir / "rack-b/node1", dir / "rack-a/node02", dir / "rack-a/node1"});
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0].path, dir / "rack-a/node1/workerlog.0");  // node1 == node1: by path
  EXPECT_EQ(inputs[1].path, dir / "rack-b/node1/workerlog.0");
  EXPECT_EQ(inputs[2].path, dir / "rack-a/node02/workerlog.0");  // node02 after node1
  EXPECT_EQ(inputs[2].machine, 2);
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

// Two files of one rank (a log and its compressed copy): both named. The
// first path was once read after it had been moved out of its list, and the
// message began "error:  and ...".
TEST(Discovery, TwoFilesOfOneRankAreBothNamed) {
  TempDir dir;
  dir.write("workerlog.1", "x\n");
  const auto plain = dir.write("workerlog.0", "x\n");
  const auto packed = dir.write("workerlog.0.gz", "x\n");
  try {
    discover_inputs({dir.path().string()});
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(plain), std::string::npos) << message;
    EXPECT_NE(message.find(packed), std::string::npos) << message;
    EXPECT_NE(message.find("are both rank 0 of one machine"), std::string::npos) << message;
  }
}

// Worker logs at the top of a folder and in a host-named sub-folder: the
// sub-folder was once skipped without a word (4 devices of 8 reported).
// Two machines, or one machine twice? Refused, with the paths to pass.
TEST(Discovery, TopLevelLogsBesideAHostFolderOfLogsAreRefusedWithThePathsToPass) {
  TempDir dir;
  for (const char* name :
       {"workerlog.0", "workerlog.1", "node1/workerlog.0", "node1/workerlog.1"}) {
    dir.write(name, "x\n");
  }
  try {
    discover_inputs({dir.path().string()});
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    const std::string message = e.what();
    const std::string top = std::filesystem::absolute(dir.path()).lexically_normal().string();
    EXPECT_NE(message.find("holds worker logs of its own (ranks 0-1) and so does its sub-folder " +
                           top + "/node1 (ranks 0-1)"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("pass '" + top + "'/workerlog.* '" + top + "/node1' for two machines"),
              std::string::npos)
        << message;
  }
  // Passed as the message says: two machines.
  const auto inputs =
      discover_inputs({(dir.path() / "workerlog.0").string(), (dir.path() / "workerlog.1").string(),
                       (dir.path() / "node1").string()});
  ASSERT_EQ(inputs.size(), 4u);
  EXPECT_EQ(inputs[3].machine, 1);
  // A hidden sub-folder, or one without logs, is no question.
  TempDir quiet;
  for (const char* name : {"workerlog.0", ".cache/workerlog.0", "notes/readme.txt"}) {
    quiet.write(name, "x\n");
  }
  EXPECT_EQ(discover_inputs({quiet.path().string()}).size(), 1u);
}

TEST(Discovery, HostNamedMachineFoldersInNumericAwareOrder) {
  TempDir dir;
  for (const char* m : {"node-b", "gpu17", "gpu2", "node-a"}) {
    dir.write(std::string(m) + "/workerlog.0", "x\n");
  }
  dir.write("gpu3/notes.txt", "x\n");      // no worker log: not a machine
  dir.write(".cache/workerlog.0", "x\n");  // hidden: ignored
  const auto inputs = discover_inputs({dir.path().string()});
  ASSERT_EQ(inputs.size(), 4u);
  const char* order[] = {"gpu2", "gpu17", "node-a", "node-b"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(inputs[i].machine_name, order[i]);
    EXPECT_EQ(inputs[i].machine, i);
  }
  // A folder with worker logs of its own beside a host-named sub-folder of
  // logs (an older run kept in old/?) was once read as one machine, the
  // sub-folder skipped without a word: now refused, the user says which
  // (TopLevelLogsBesideAHostFolderOfLogsAreRefusedWithThePathsToPass).
  // machineK/ sub-folders are still machines.
  TempDir one;
  one.write("workerlog.0", "x\n");
  one.write("old/workerlog.0", "x\n");
  EXPECT_THROW(discover_inputs({one.path().string()}), InputError);
  one.write("machine1/workerlog.0", "x\n");
  EXPECT_THROW(discover_inputs({one.path().string()}), InputError);
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

// Folders are read by file name. A JSON file no format claims by name whose
// first bytes are a profiler trace (a handler's own `trace_rank0.json`) is
// named, never read in silence: in the error when nothing else is there, in
// a file_skipped note beside the inputs that are; other JSON files are not.
TEST(Discovery, NamesTracesSavedUnderOtherNames) {
  TempDir dir;
  const std::string trace = R"({"schemaVersion": 1, "traceEvents": []})";
  dir.write("trace_rank0.json", trace);
  dir.write("trace_rank1.json", trace);
  dir.write("config.json", R"({"lr": 0.1})");
  try {
    discover_inputs({dir.path().string()});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("; it holds 2 files of an input format by their first "
                                         "bytes but not by their names (trace_rank0.json, "
                                         "trace_rank1.json): give them directly"),
              std::string::npos)
        << e.what();
  }
  dir.write("rank2.pt.trace.json", trace);
  std::vector<Warning> notes;
  const auto inputs = discover_inputs({dir.path().string()}, &notes);
  ASSERT_EQ(inputs.size(), 1u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].code, WarningCode::file_skipped);
  EXPECT_EQ(notes[0].count, 2u);
  EXPECT_NE(notes[0].message.find("holds 2 files of an input format by their first bytes but not "
                                  "by their names (trace_rank0.json, trace_rank1.json): not read; "
                                  "give them directly"),
            std::string::npos)
      << notes[0].message;
  // Given directly, they are read with the rest.
  EXPECT_EQ(discover_inputs(
                {dir / "trace_rank0.json", dir / "trace_rank1.json", dir / "rank2.pt.trace.json"})
                .size(),
            3u);
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

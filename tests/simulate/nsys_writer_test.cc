// `pipescope simulate --format nsys`: Nsight Systems SQLite exports of a
// simulated run (simulate/nsys_writer.h), and end to end: `analyze` on them
// must report exactly the job figures of expected.json's "summary" (the
// `PP:` NVTX ranges made jobs, expected_metrics.h's figures of the
// simulator's jobs) and its kernel view (kernel_expected.h), both worked out
// without the analysis.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::run_cli;

bool is_ratio(std::string_view key) {
  return key == "bubble_ratio" || key == "idle_share" || key == "wait_share" ||
         key == "transfer_share" || key == "utilization";
}

/// Where `actual` differs from `expected`: every key of expected present and
/// equal (integers exactly, ratios within 1e-12 relative), but `skip`.
std::string nsys_differences(simdjson::dom::element actual, simdjson::dom::element expected,
                             const std::string& where, const std::set<std::string>& skip) {
  using simdjson::dom::element_type;
  const std::string key = where.substr(where.find_last_of('.') + 1);
  switch (expected.type()) {
    case element_type::OBJECT: {
      simdjson::dom::object a;
      if (actual.get_object().get(a)) return where + ": not an object\n";
      std::string out;
      for (auto [k, v] : expected.get_object()) {
        if (skip.contains(std::string(k))) continue;
        simdjson::dom::element got;
        if (a[k].get(got)) {
          out += fmt::format("{}.{}: missing\n", where, k);
          continue;
        }
        out += nsys_differences(got, v, fmt::format("{}.{}", where, k), skip);
      }
      return out;
    }
    case element_type::ARRAY: {
      simdjson::dom::array a, e = expected.get_array();
      if (actual.get_array().get(a)) return where + ": not an array\n";
      if (a.size() != e.size()) {
        return fmt::format("{}: {} entries, expected {}\n", where, a.size(), e.size());
      }
      std::string out;
      for (std::size_t i = 0; i < e.size(); ++i) {
        out += nsys_differences(a.at(i), e.at(i), fmt::format("{}[{}]", where, i), skip);
      }
      return out;
    }
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE: {
      if (is_ratio(key)) {
        double x = 0, y = 0;
        if (actual.get_double().get(x) || expected.get_double().get(y) ||
            std::fabs(x - y) > 1e-12 * std::max(1.0, std::fabs(y))) {
          return fmt::format("{}: {}, expected {}\n", where, x, y);
        }
        return {};
      }
      std::int64_t x = 0, y = 0;
      if (actual.get_int64().get(x) || expected.get_int64().get(y) || x != y) {
        return fmt::format("{}: {}, expected {}\n", where, simdjson::to_string(actual),
                           simdjson::to_string(expected));
      }
      return {};
    }
    default:
      if (simdjson::to_string(actual) != simdjson::to_string(expected)) {
        return fmt::format("{}: {}, expected {}\n", where, simdjson::to_string(actual),
                           simdjson::to_string(expected));
      }
      return {};
  }
}

class NsysSimulateE2E : public ::testing::TestWithParam<const char*> {};

TEST_P(NsysSimulateE2E, AnalyzeReportsTheExpectedJobsAndKernelView) {
  testing::TempDir dir;
  const std::string args = GetParam();
  const std::string run = dir / "run", out = dir / "out";
  const CommandResult sim = run_cli(fmt::format("simulate --format nsys -o '{}' {}", run, args));
  ASSERT_EQ(sim.status, 0) << sim.output;
  const CommandResult analyze = run_cli(fmt::format("analyze -q '{}' -o '{}'", run, out));
  ASSERT_EQ(analyze.status, 0) << analyze.output;
  simdjson::dom::parser p1, p2;
  simdjson::dom::element expected, summary;
  ASSERT_EQ(p1.load(run + "/expected.json").get(expected), simdjson::SUCCESS);
  ASSERT_EQ(p2.load(out + "/summary.json").get(summary), simdjson::SUCCESS);
  EXPECT_GT(std::int64_t(expected["summary"]["jobs"]), 0);
  // The jobs: summary.json's own fields, to the ns (comm_ns: no comm job).
  EXPECT_EQ(nsys_differences(summary, expected["summary"], "summary", {"path"}), "") << args;
  // The kernel view (rank_source: the environment, not a trace's
  // distributedInfo; paths by name).
  const simdjson::dom::element want = expected["kernel_view"];
  EXPECT_GT(std::int64_t(want["wait_ns"]), 0) << args;
  EXPECT_EQ(nsys_differences(summary["kernel_view"], want, "kernel_view", {"rank_source", "path"}),
            "")
      << args;
  for (simdjson::dom::element rank : summary["kernel_view"]["ranks"]) {
    EXPECT_EQ(std::string_view(rank["rank_source"]), "environment");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Runs, NsysSimulateE2E,
    ::testing::Values(
        "--schedule 1f1b --stages 4 --micro-batches 8",
        "--schedule vpp --stages 4 --micro-batches 8 --chunks 2 --devices-per-stage 2 "
        "--first-step 7 --kernels-per-job 5",
        "--schedule 1f1b --stages 2 --micro-batches 4 --devices-per-stage 2 --machines 2 "
        "--steps 2 --seed 5",
        "--schedule torch-zbvzerobubble --stages 4 --micro-batches 8 --resolution ns"));

/// The export's own shape: a 3.25 schema, one GPU process, its runtime
/// launches one per activity, the `PP:` ranges one per job but the optimizer.
TEST(NsysSimulate, WritesThreePointTwentyFiveExports) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  const CommandResult sim = run_cli(fmt::format(
      "simulate --format nsys -o '{}' --schedule 1f1b --stages 2 --micro-batches 4 --steps 2 "
      "--kernels-per-job 3",
      run));
  ASSERT_EQ(sim.status, 0) << sim.output;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((fs::path(run) / "rank_1.sqlite").c_str(), &db, SQLITE_OPEN_READONLY,
                            nullptr),
            SQLITE_OK);
  auto number = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sql;
    std::int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(number("SELECT count(*) FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION' "
                   "AND value = '3.25.0'"),
            1);
  EXPECT_EQ(number("SELECT count(DISTINCT globalPid) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 1);
  EXPECT_EQ(number("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
            number("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"));
  // 2 steps x 4 micro-batches x (F, B) on each rank.
  EXPECT_EQ(number("SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'PP:1%'"), 16);
  EXPECT_EQ(number("SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'ProfilerStep#%'"), 2);
  // Every kernel launched before it starts.
  EXPECT_EQ(number("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN "
                   "CUPTI_ACTIVITY_KIND_RUNTIME AS r USING (correlationId) WHERE r.start >= "
                   "k.start"),
            0);
  sqlite3_close(db);
}

TEST(NsysSimulate, RefusesOptionsOfOtherFormats) {
  testing::TempDir dir;
  for (const char* args : {"--lr", "--shuffle", "--no-comms-id", "--events"}) {
    const CommandResult r =
        run_cli(fmt::format("simulate --format nsys -o '{}' {}", dir / "run", args));
    EXPECT_EQ(r.status, 2) << args << r.output;
  }
}

}  // namespace
}  // namespace pipescope

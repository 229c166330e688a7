// End-to-end: `pipescope simulate --format paddle-dygraph` writes 1F1B and
// interleaved runs as Paddle's dygraph records; `analyze` of the per-rank
// files, of their concatenation and of gzip copies must report exactly the
// figures of expected.json (computed by the simulator's independent builder).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

// Every figure expected.json holds must be in summary.json with the same value.
void expect_figures(const std::string& expected_path, const std::string& summary_path,
                    const std::string& what) {
  simdjson::dom::parser ep, ap;
  simdjson::dom::element e, a;
  ASSERT_EQ(ep.load(expected_path).get(e), simdjson::SUCCESS);
  ASSERT_EQ(ap.load(summary_path).get(a), simdjson::SUCCESS) << what;
  for (const char* key : {"jobs", "first_step", "total_window_ns"}) {
    EXPECT_EQ(std::int64_t(e[key]), std::int64_t(a[key])) << what << ": " << key;
  }
  EXPECT_EQ(double(e["bubble_ratio"]), double(a["bubble_ratio"])) << what;
  EXPECT_EQ(std::int64_t(a["time_resolution_ns"]), 1'000'000) << what;
  simdjson::dom::array ed = e["devices"], ad = a["devices"];
  ASSERT_EQ(ed.size(), ad.size()) << what;
  for (std::size_t d = 0; d < ed.size(); ++d) {
    for (const char* key : {"device", "rank", "jobs", "steps", "busy_ns", "idle_ns"}) {
      EXPECT_EQ(std::int64_t(ed.at(d)[key]), std::int64_t(ad.at(d)[key]))
          << what << ": devices[" << d << "]." << key;
    }
  }
  simdjson::dom::array es = e["steps"], as = a["steps"];
  ASSERT_EQ(es.size(), as.size()) << what;
  for (std::size_t k = 0; k < es.size(); ++k) {
    for (const char* key : {"step", "start_ns", "end_ns", "duration_ns"}) {
      EXPECT_EQ(std::int64_t(es.at(k)[key]), std::int64_t(as.at(k)[key]))
          << what << ": steps[" << k << "]." << key;
    }
    EXPECT_EQ(double(es.at(k)["bubble_ratio"]), double(as.at(k)["bubble_ratio"])) << what;
  }
}

struct Case {
  const char* args;
  const char* name;
};

TEST(SimulateDygraph, AnalyzeReportsTheExpectedFiguresOfEveryLayout) {
  testing::TempDir dir;
  const Case cases[] = {
      {"--schedule 1f1b --stages 4 --micro-batches 8 --steps 3 --seed 3", "1f1b"},
      {"--schedule vpp --stages 4 --micro-batches 8 --chunks 2 --steps 3 --seed 5", "vpp"},
      {"--schedule 1f1b --stages 3 --micro-batches 6 --steps 2 --forward-ms 2.4 "
       "--backward-ms 3.3 --jitter 0.4 --seed 9",
       "short-jobs"},
      {"--schedule vpp --stages 4 --micro-batches 8 --devices-per-stage 2 --steps 2", "replicas"},
  };
  for (const Case& c : cases) {
    const std::string recs = dir / fmt::format("{}/recs", c.name);
    const std::string cat = dir / fmt::format("{}/cat", c.name);
    const auto sim = run_cli(fmt::format("simulate --format paddle-dygraph -o '{}' "
                                         "--concatenation '{}' {}",
                                         recs, cat, c.args));
    ASSERT_EQ(sim.status, 0) << c.name << "\n" << sim.output;
    const std::string expected = recs + "/expected.json";
    for (const auto& [input, tag] : {std::pair{recs, "per-rank"}, std::pair{cat, "concatenation"}}) {
      const std::string out = dir / fmt::format("{}/out-{}", c.name, tag);
      const auto r = run_cli(fmt::format("analyze '{}' -o '{}'", input, out));
      ASSERT_EQ(r.status, 0) << c.name << " " << tag << "\n" << r.output;
      expect_figures(expected, out + "/summary.json", fmt::format("{} {}", c.name, tag));
      EXPECT_NE(r.output.find("Time resolution: 1.000 ms"), std::string::npos) << r.output;
      const bool replicas = std::string(c.name) == "replicas";
      EXPECT_EQ(r.output.find("hold 2 pipelines") != std::string::npos, replicas) << r.output;
    }
  }
  // gzip copies read as a stream, with the same figures.
  const std::string gz = dir / "gz";
  fs::create_directories(gz);
  for (const auto& entry : fs::directory_iterator(dir / "vpp/recs")) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("profile_record")) continue;
    ASSERT_EQ(std::system(fmt::format("gzip -c '{}' > '{}/{}.gz'", entry.path().string(), gz,
                                      name)
                              .c_str()),
              0);
  }
  const auto r = run_cli(fmt::format("analyze '{}' -o '{}' -q", gz, dir / "out-gz"));
  ASSERT_EQ(r.status, 0) << r.output;
  expect_figures(dir / "vpp/recs/expected.json", dir / "out-gz/summary.json", "gzip");
}

TEST(SimulateDygraph, FirstStepPipelineAndMixingOptions) {
  testing::TempDir dir;
  const std::string recs = dir / "recs";
  ASSERT_EQ(run_cli(fmt::format("simulate --format paddle-dygraph -o '{}' --stages 2 "
                                "--micro-batches 4 --steps 2 --devices-per-stage 2",
                                recs))
                .status,
            0);
  auto r = run_cli(fmt::format("analyze '{}' -o '{}' -q --first-step 40 --pipeline 1", recs,
                               dir / "out"));
  ASSERT_EQ(r.status, 0) << r.output;
  simdjson::dom::parser p;
  simdjson::dom::element s;
  ASSERT_EQ(p.load(dir / "out/summary.json").get(s), simdjson::SUCCESS);
  EXPECT_EQ(std::int64_t(s["first_step"]), 40);
  EXPECT_EQ(std::int64_t(s["steps"].at(1)["step"]), 41);
  EXPECT_EQ(std::string_view(s["devices"].at(0)["path"]),
            (fs::path(recs) / "profile_record_tmp_file_for_rank_1").string());

  r = run_cli(fmt::format("analyze '{}' -o '{}' -q --pipeline 2", recs, dir / "out2"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("pipeline 2 asked for, but the dygraph records hold 2 pipelines (0-1)"),
            std::string::npos)
      << r.output;

  const std::string logs = dir / "logs";
  ASSERT_EQ(run_cli(fmt::format("simulate -o '{}' --stages 2 --micro-batches 4", logs)).status, 0);
  r = run_cli(fmt::format("analyze '{}' '{}' -o '{}' -q", recs, logs, dir / "out3"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("is a Paddle dygraph pipeline record file and"), std::string::npos)
      << r.output;

  r = run_cli(fmt::format("simulate --format paddle-dygraph -o '{}' --schedule zbh1 --stages 2 "
                          "--micro-batches 4",
                          dir / "zb"));
  EXPECT_EQ(r.status, 2) << r.output;
}

}  // namespace
}  // namespace pipescope

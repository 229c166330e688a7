// .ivl files in the engine: import, discovery, diagnostics, and the promise
// that the same run analysed from worker logs and from .ivl records (written
// by `simulate --ivl` or by `convert`) gives identical figures.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "analysis/metrics.h"
#include "records/ivl_writer.h"
#include "ingest/ivl_import.h"
#include "ingest/ingest.h"
#include "ingest/discovery.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

int run_cli_status(const std::string& args) {
  const std::string command = std::string(PIPESCOPE_CLI) + " " + args + " > /dev/null 2>&1";
  return std::system(command.c_str());
}

void write_ivl(const std::string& path, int machine, int rank, std::int64_t base, int jobs,
               const std::string& machine_name = "") {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ivl::FileInfo info;
  info.machine = machine;
  info.rank = rank;
  info.machine_name = machine_name;
  ivl::Writer writer(path, info);
  const auto fwd = writer.type_id("forward");
  const auto bwd = writer.type_id("backward");
  for (int i = 0; i < jobs; ++i) {
    writer.append({base + i * 100, base + i * 100 + 50, i % 2 ? bwd : fwd, i, 0, 0});
  }
  writer.close();
}

TEST(RecordImport, ReadsJobsAndReportsBadRecords) {
  TempDir dir;
  const std::string path = dir / "r.ivl";
  {
    ivl::FileInfo info;
    info.first_step = 12;
    ivl::Writer writer(path, info);
    const auto fwd = writer.type_id("forward");
    writer.append({1000, 2000, fwd, 3, 12, 0});
    writer.append({5000, 4000, fwd, 4, 12, 0});  // ends before it starts
    writer.append({3000, 3500, writer.type_id("optimizer"), 0, 12, 1});
    writer.close();
  }
  InputFile input;
  input.path = path;
  input.format = InputFormat::ivl;
  input.device = 4;
  input.rank = 2;
  input.size_bytes = std::filesystem::file_size(path);
  const FileResult r = import_ivl_file(input);
  ASSERT_EQ(r.device.jobs.size(), 2u);
  EXPECT_EQ(r.device.index, 4);
  EXPECT_EQ(r.device.jobs[0].start_ns, 1000);
  EXPECT_EQ(r.device.jobs[0].micro_batch, 3);
  EXPECT_EQ(r.types.name(r.device.jobs[0].type), "forward");
  EXPECT_EQ(r.types.name(r.device.jobs[1].type), "optimizer");
  EXPECT_EQ(r.device.jobs[1].job_id, 2);  // record index in the file
  EXPECT_EQ(r.stats.lines, 3u);
  EXPECT_EQ(r.stats.matched, 2u);
  EXPECT_EQ(r.stats.malformed, 1u);
  EXPECT_EQ(r.stats.bytes, input.size_bytes);
  EXPECT_EQ(r.first_step, 12);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_NE(r.diagnostics[0].message.find("record 1 ends before it starts"), std::string::npos);
  EXPECT_NE(r.diagnostics[0].message.find("byte offset "), std::string::npos);
}

TEST(RecordImport, DiscoveryPlacesFilesByHeaderAndMixesWithLogs) {
  TempDir dir;
  // Names do not matter; the header's machine and rank do.
  write_ivl(dir / "recs/machine1/b.ivl", 1, 0, 5'000, 4, "machine1");
  write_ivl(dir / "recs/machine0/z.ivl", 0, 1, 2'000, 4, "machine0");
  write_ivl(dir / "recs/machine0/a.ivl", 0, 0, 1'000, 4, "machine0");
  dir.write("recs/broken.ivl", "not a record file");
  dir.write("logs/workerlog.0",
            "Profiler Info: Job (0), type = forward, micro_batch_id = 0, job_start_time = "
            "1.000000, job_end_time = 1.000500\n");
  const auto inputs = discover_inputs({dir / "logs", dir / "recs"});
  ASSERT_EQ(inputs.size(), 5u);
  EXPECT_EQ(inputs[0].format, InputFormat::worker_log);
  EXPECT_EQ(inputs[1].path, dir / "recs/machine0/a.ivl");
  EXPECT_EQ(inputs[1].machine, 1);
  EXPECT_EQ(inputs[1].rank, 0);
  EXPECT_EQ(inputs[1].machine_name, "machine0");
  EXPECT_EQ(inputs[2].path, dir / "recs/machine0/z.ivl");
  EXPECT_EQ(inputs[3].path, dir / "recs/machine1/b.ivl");
  EXPECT_EQ(inputs[3].machine, 2);
  EXPECT_EQ(inputs[3].device, 3);
  EXPECT_EQ(inputs[4].path, dir / "recs/broken.ivl");  // unreadable header: last
  for (std::size_t i = 1; i < 5; ++i) EXPECT_EQ(inputs[i].format, InputFormat::ivl);

  IngestOptions options;
  options.threads = 2;
  const pipescope::Run run = ingest_inputs(inputs, options);
  ASSERT_EQ(run.devices.size(), 5u);
  EXPECT_EQ(run.devices[0].jobs.size(), 1u);
  EXPECT_EQ(run.devices[1].jobs.size(), 4u);
  EXPECT_EQ(run.devices[3].jobs.front().start_ns, 5'000);
  EXPECT_EQ(run.types.size(), 2u);
  EXPECT_EQ(run.inputs[4].error, "not an .ivl file (wrong magic)");
  ASSERT_EQ(run.diagnostics.size(), 1u);
  EXPECT_EQ(run.diagnostics[0].path, dir / "recs/broken.ivl");
}

TEST(RecordImport, TwoFilesClaimingOneRankAreAnError) {
  TempDir dir;
  write_ivl(dir / "recs/a.ivl", 0, 3, 1'000, 2);
  write_ivl(dir / "recs/b.ivl", 0, 3, 1'000, 2);
  EXPECT_THROW(discover_inputs({dir / "recs"}), InputError);
}

/// Every figure of summary.json except where the inputs came from.
std::string figures(const std::string& summary_path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(summary_path);
  std::string out;
  for (const char* key :
       {"jobs", "first_step", "bubble_ratio", "total_window_ns", "steps", "job_types"}) {
    out += std::string(key) + "=" + simdjson::to_string(doc[key]) + "\n";
  }
  for (simdjson::dom::object device : doc["devices"].get_array()) {
    for (auto field : device) {
      if (field.key != "path") {
        out += std::string(field.key) + "=" + simdjson::to_string(field.value) + " ";
      }
    }
    out += "\n";
  }
  return out;
}

TEST(RecordImport, SimulatedRunGivesIdenticalFiguresFromLogsAndRecords) {
  TempDir dir;
  for (const char* args :
       {"--schedule vpp --stages 4 --micro-batches 8 --machines 2 --first-step 30 --comm "
        "--time-decimals 3 --seed 7",
        "--schedule zbh1 --stages 3 --micro-batches 6 --devices-per-stage 2 --shuffle "
        "--noise-per-job 3 --seed 11 --resolution ns --time-decimals 9"}) {
    const std::string text = dir / "text";
    const std::string recs = dir / "recs";
    ASSERT_EQ(
        run_cli_status("simulate --force -o " + quoted(text) + " --ivl " + quoted(recs) + " " + args), 0)
        << args;
    ASSERT_EQ(run_cli_status("analyze -q " + quoted(text) + " -o " + quoted(dir / "out-text")), 0);
    ASSERT_EQ(run_cli_status("analyze -q " + quoted(recs) + " -o " + quoted(dir / "out-recs")), 0);
    const std::string a = figures(dir / "out-text/summary.json");
    EXPECT_EQ(a, figures(dir / "out-recs/summary.json")) << args;
    EXPECT_NE(a.find("jobs="), std::string::npos);

    // convert: the text folder scanned once, then analysed from records.
    const std::string converted = dir / "converted";
    ASSERT_EQ(run_cli_status("convert --force " + quoted(text) + " -o " + quoted(converted)), 0) << args;
    ASSERT_EQ(run_cli_status("analyze -q " + quoted(converted) + " -o " + quoted(dir / "out-conv")), 0);
    EXPECT_EQ(a, figures(dir / "out-conv/summary.json")) << args;
  }
}

TEST(RecordImport, ConvertRefusesANonEmptyOutputAndOutputInsideInput) {
  TempDir dir;
  ASSERT_EQ(run_cli_status("simulate -o " + quoted(dir / "text") + " --steps 1"), 0);
  dir.write("out/keep.txt", "x");
  EXPECT_EQ(WEXITSTATUS(run_cli_status("convert " + quoted(dir / "text") + " -o " + quoted(dir / "out"))),
            2);
  EXPECT_EQ(
      WEXITSTATUS(run_cli_status("convert " + quoted(dir / "text") + " -o " + quoted(dir / "text/ivl"))),
      2);
  EXPECT_FALSE(std::filesystem::exists(dir / "text/ivl"));
}

}  // namespace
}  // namespace pipescope

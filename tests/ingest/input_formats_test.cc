// The format table (by name, then by sniffing the first bytes) and the one
// merge of per-file results into a Run.
#include "ingest/input_formats.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "ingest/run_merge.h"
#include "records/ivl_writer.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

void write_records(const std::string& path, int rank) {
  ivl::FileInfo info;
  info.rank = rank;
  ivl::Writer writer(path, info);
  const auto fwd = writer.type_id("forward");
  writer.append({1000, 2000, fwd, 0, 0, 0});
  writer.append({3000, 4000, fwd, 1, 0, 0});
  writer.close();
}

TEST(InputFormats, NameDecidesFirst) {
  EXPECT_EQ(format_by_name("workerlog.3"), InputFormat::worker_log);
  EXPECT_EQ(format_by_name("workerlog.3.gz"), InputFormat::worker_log);
  EXPECT_EQ(format_by_name("workerlog.3.ivl"), InputFormat::ivl);
  EXPECT_EQ(format_by_name("rank7.ivl"), InputFormat::ivl);
  EXPECT_FALSE(format_by_name(".ivl").has_value());  // a name, not only a suffix
  EXPECT_FALSE(format_by_name("train.log").has_value());
  // Every format of the table is reachable by its enum value.
  for (const InputFormatSpec& spec : input_formats()) {
    EXPECT_EQ(&input_format_spec(spec.format), &spec);
  }
}

TEST(InputFormats, ContentDecidesWhenTheNameSaysNothing) {
  TempDir dir;
  write_records(dir / "records.bin", 0);
  std::ofstream(dir / "train.log") << "I1020 09:15:07.265326 1 x.cc:1] hello\n";
  std::ofstream(dir / "short.log") << "\x89IV";  // shorter than the magic
  EXPECT_EQ(format_by_content(dir / "records.bin"), InputFormat::ivl);
  EXPECT_EQ(format_by_content(dir / "train.log"), InputFormat::worker_log);
  EXPECT_EQ(format_by_content(dir / "short.log"), InputFormat::worker_log);
  // Unreadable: the fallback, whose reader then says why.
  EXPECT_EQ(format_by_content(dir / "missing"), InputFormat::worker_log);
}

TEST(InputFormats, RecordsGivenUnderAnotherNameAreReadAsRecords) {
  TempDir dir;
  write_records(dir / "rank0.bin", 0);
  const std::vector<InputFile> inputs = discover_inputs({dir / "rank0.bin"});
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].format, InputFormat::ivl);
  const pipescope::Run run = ingest_inputs(inputs, {});
  ASSERT_EQ(run.devices.size(), 1u);
  EXPECT_EQ(run.devices[0].jobs.size(), 2u);
  EXPECT_EQ(run.inputs[0].malformed, 0u);
}

FileResult file_with(std::vector<std::string> types, std::vector<TypeId> job_types,
                     std::optional<std::int64_t> first_step, const std::string& path) {
  FileResult f;
  for (const auto& t : types) f.types.intern(t);
  std::int64_t t = 100;
  for (TypeId type : job_types) {
    Job& job = f.device.jobs.emplace_back();
    job.start_ns = t;
    job.end_ns = t + 10;
    job.type = type;
    t -= 20;  // written out of order: the merge sorts
  }
  f.device.path = path;
  f.stats.path = path;
  f.first_step = first_step;
  f.diagnostics.push_back({path, 1, "note"});
  return f;
}

TEST(RunMerge, OneTypeTableInInputOrderAndTheSmallestFirstStep) {
  std::vector<FileResult> files;
  files.push_back(file_with({"forward", "backward"}, {0, 1}, 7, "a"));
  // The second file met its types in another order, and has one of its own.
  files.push_back(file_with({"lr", "backward", "forward"}, {0, 1, 2, 2}, 5, "b"));
  files.push_back(file_with({}, {}, std::nullopt, "c"));
  const pipescope::Run run = merge_file_results(std::move(files));

  ASSERT_EQ(run.types.size(), 3u);
  EXPECT_EQ(run.types.name(0), "forward");
  EXPECT_EQ(run.types.name(1), "backward");
  EXPECT_EQ(run.types.name(2), "lr");
  ASSERT_EQ(run.devices.size(), 3u);
  // File b's jobs, sorted by start: forward, forward, backward, lr.
  const auto& b = run.devices[1].jobs;
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(run.types.name(b[0].type), "forward");
  EXPECT_EQ(run.types.name(b[1].type), "forward");
  EXPECT_EQ(run.types.name(b[2].type), "backward");
  EXPECT_EQ(run.types.name(b[3].type), "lr");
  EXPECT_LT(b[0].start_ns, b[3].start_ns);
  EXPECT_EQ(run.first_step, 5);
  ASSERT_EQ(run.inputs.size(), 3u);
  EXPECT_EQ(run.inputs[2].path, "c");
  ASSERT_EQ(run.diagnostics.size(), 3u);
  EXPECT_EQ(run.diagnostics[0].path, "a");
  EXPECT_EQ(run.diagnostics[1].path, "b");
  EXPECT_EQ(run.diagnostics[2].path, "c");
}

}  // namespace
}  // namespace pipescope

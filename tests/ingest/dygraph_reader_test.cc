// The Paddle dygraph record reader on small hand-written inputs: exact jobs
// and ns times, the stored type names, every kind of bad half or record
// counted with its byte offset, the concatenation cut back into ranks, a file
// cut at every byte, discovery and the format sniffer.
#include "ingest/dygraph_reader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "ingest/input_formats.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

std::string rec(std::string_view name, std::string_view ph, int tid, long long ts,
                std::string_view cat = "pipeline timeline") {
  return fmt::format(
      "{{\"name\": \"{}\", \"cat\": \"{}\", \"ph\": \"{}\", \"pid\": 0, \"tid\": {}, \"ts\": {}, "
      "\"cname\": \"thread_state_running\"}}",
      name, cat, ph, tid, ts);
}

InputFile input_named(std::string name, int rank = 0) {
  InputFile input;
  input.path = "/x/" + name;
  input.format = InputFormat::paddle_dygraph;
  input.rank = rank;
  return input;
}

DygraphFile parse(std::string_view text, std::string name = "profile_record_tmp_file_for_rank_3") {
  return parse_dygraph_bytes(text, input_named(name, 3), 20);
}

TEST(DygraphReader, PairsBecomeJobsInExactNanoseconds) {
  const std::string text = rec("F0", "B", 2, 1700000000123) + "\n" +
                           rec("F0", "E", 2, 1700000000135) + "\n" +
                           rec("B0", "B", 2, 1700000000140) + "\n" +
                           rec("B0", "E", 2, 1700000000164) + "\n";
  const DygraphFile f = parse(text);
  ASSERT_EQ(f.ranks.size(), 1u);
  EXPECT_EQ(f.ranks[0].stage, 1);
  EXPECT_EQ(f.ranks[0].rank, 3);
  const auto& jobs = f.ranks[0].device.jobs;
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].start_ns, 1'700'000'000'123'000'000);
  EXPECT_EQ(jobs[0].end_ns, 1'700'000'000'135'000'000);
  EXPECT_EQ(f.result.types.name(jobs[0].type), "forward");
  EXPECT_EQ(jobs[1].start_ns, 1'700'000'000'140'000'000);
  EXPECT_EQ(f.result.types.name(jobs[1].type), "backward");
  EXPECT_EQ(jobs[0].line, 1u);
  EXPECT_EQ(jobs[1].line, 3u);
  EXPECT_EQ(f.result.stats.matched, 2u);
  EXPECT_EQ(f.result.stats.malformed, 0u);
  EXPECT_EQ(f.result.stats.lines, 4u);
  EXPECT_EQ(f.result.stats.bytes, text.size());
  EXPECT_EQ(f.result.time_resolution_ns, 1'000'000);
  EXPECT_TRUE(f.result.stats.error.empty());
}

TEST(DygraphReader, VirtualPipelineNamesCarryTheChunk) {
  const std::string vp = "virtual pipeline timeline";
  const std::string text = rec("F7_VP1", "B", 1, 10, vp) + "\n" + rec("F7_VP1", "E", 1, 12, vp) +
                           "\n" + rec("B7_VP0", "B", 1, 12, vp) + "\n" +
                           rec("B7_VP0", "E", 1, 15, vp) + "\n";
  const DygraphFile f = parse(text);
  ASSERT_EQ(f.ranks.size(), 1u);
  const auto& jobs = f.ranks[0].device.jobs;
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(f.result.types.name(jobs[0].type), "forward(chunk1)");
  EXPECT_EQ(jobs[0].micro_batch, 7);
  EXPECT_EQ(f.result.types.name(jobs[1].type), "backward(chunk0)");
}

TEST(DygraphReader, UnmatchedAndOutOfOrderHalvesAreCountedWithTheirOffsets) {
  const std::string l1 = rec("F1", "E", 1, 5);   // E without B
  const std::string l2 = rec("F2", "B", 1, 10);  // B, then another B of F2
  const std::string l3 = rec("F2", "B", 1, 11);
  const std::string l4 = rec("F2", "E", 1, 13);  // pairs with l3
  const std::string l5 = rec("F3", "B", 1, 20);
  const std::string l6 = rec("F3", "E", 1, 19);  // E before its B: both halves
  const std::string l7 = rec("B0", "B", 1, 30);  // never ended
  const std::string text =
      l1 + "\n" + l2 + "\n" + l3 + "\n" + l4 + "\n" + l5 + "\n" + l6 + "\n" + l7 + "\n";
  const DygraphFile f = parse(text);
  ASSERT_EQ(f.ranks.size(), 1u);
  ASSERT_EQ(f.ranks[0].device.jobs.size(), 1u);
  EXPECT_EQ(f.ranks[0].device.jobs[0].start_ns, 11'000'000);
  EXPECT_EQ(f.ranks[0].device.jobs[0].end_ns, 13'000'000);
  EXPECT_EQ(f.result.stats.malformed, 5u);  // l1, l2, l5 + l6, l7
  ASSERT_EQ(f.result.diagnostics.size(), 4u);
  const std::size_t o2 = l1.size() + 1;
  const std::size_t o6 = o2 + l2.size() + l3.size() + l4.size() + l5.size() + 4;
  const std::size_t o7 = o6 + l6.size() + 1;
  EXPECT_EQ(f.result.diagnostics[0].line, 1u);
  EXPECT_EQ(f.result.diagnostics[0].message,
            "byte offset 0: E record of 'F1' has no B record before it; skipped");
  EXPECT_EQ(f.result.diagnostics[1].message,
            fmt::format("byte offset {}: B record of 'F2' has no E record (another B of it "
                        "follows); skipped",
                        o2));
  EXPECT_EQ(f.result.diagnostics[2].line, 6u);
  EXPECT_NE(f.result.diagnostics[2].message.find(fmt::format("byte offset {}: E record of 'F3' "
                                                             "is earlier than its B record",
                                                             o6)),
            std::string::npos)
      << f.result.diagnostics[2].message;
  EXPECT_EQ(f.result.diagnostics[3].message,
            fmt::format("byte offset {}: B record of 'B0' has no E record; skipped", o7));
}

TEST(DygraphReader, BadRecordsAreSkippedAndTheRestKept) {
  const std::string text = rec("F0", "B", 1, 1) + "\n" + "{\"name\": \"F0\", garbage\n" +
                           rec("X0", "B", 1, 2) + "\n" + rec("F0", "Q", 1, 2) + "\n" +
                           "{\"name\": \"F0\", \"ph\": \"E\", \"tid\": 1, \"ts\": 2.5}\n" +
                           rec("F0", "E", 0, 2) + "\n" + "[1, 2]\n" + "\n" +
                           rec("F0", "E", 1, 3) + "\n";
  const DygraphFile f = parse(text);
  ASSERT_EQ(f.ranks.size(), 1u);
  ASSERT_EQ(f.ranks[0].device.jobs.size(), 1u);
  EXPECT_EQ(f.ranks[0].device.jobs[0].end_ns, 3'000'000);
  EXPECT_EQ(f.result.stats.malformed, 6u);
  EXPECT_EQ(f.result.stats.lines, 9u);
  EXPECT_NE(f.result.diagnostics[2].message.find("phase 'Q'"), std::string::npos);
  EXPECT_NE(f.result.diagnostics[3].message.find("whole number of milliseconds"),
            std::string::npos);
}

TEST(DygraphReader, ATidChangeInOneRanksFileIsMalformed) {
  const std::string text = rec("F0", "B", 1, 1) + "\n" + rec("F0", "E", 1, 2) + "\n" +
                           rec("F1", "B", 2, 3) + "\n";
  const DygraphFile f = parse(text);
  EXPECT_EQ(f.ranks.size(), 1u);
  EXPECT_EQ(f.result.stats.malformed, 1u);
  EXPECT_NE(f.result.diagnostics[0].message.find("tid 2 differs from the file's tid 1"),
            std::string::npos);
}

TEST(DygraphReader, TheConcatenationIsCutIntoRanks) {
  // Paddle's helper: "[ " + lines joined by ",\n" + " ]\n"; ranks sorted by name.
  const std::string text = "[ " + rec("F0", "B", 1, 100) + ",\n" + rec("F0", "E", 1, 110) +
                           ",\n" + rec("F0", "B", 1, 90) + ",\n" +  // a second stage-0 rank
                           rec("F0", "E", 1, 95) + ",\n" + rec("F0", "B", 2, 110) + ",\n" +
                           rec("F0", "E", 2, 120) + " ]\n";
  const DygraphFile f = parse(text, "pipeline_profile.json");
  ASSERT_EQ(f.ranks.size(), 3u);
  EXPECT_EQ(f.ranks[0].stage, 0);
  EXPECT_EQ(f.ranks[1].stage, 0);
  EXPECT_EQ(f.ranks[2].stage, 1);
  EXPECT_EQ(f.ranks[1].rank, 1);
  EXPECT_EQ(f.ranks[1].device.jobs[0].start_ns, 90'000'000);
  EXPECT_EQ(f.ranks[2].device.jobs[0].end_ns, 120'000'000);
  EXPECT_EQ(f.result.stats.malformed, 0u);
  EXPECT_EQ(f.result.stats.matched, 3u);
}

TEST(DygraphReader, AFileCutAtEveryByteKeepsEveryCompleteRecordAndSaysWhere) {
  std::string text;
  for (int m = 0; m < 3; ++m) {
    text += rec(fmt::format("F{}", m), "B", 1, 10 * m) + "\n";
    text += rec(fmt::format("F{}", m), "E", 1, 10 * m + 5) + "\n";
  }
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    const std::string_view part(text.data(), cut);
    const DygraphFile f = parse(part);
    // Complete records: lines whose last byte is before the cut (the last
    // one may lack its newline).
    std::size_t end = 0;
    int halves = 0;
    for (std::size_t nl = text.find('\n'); nl != std::string::npos && nl <= cut;
         nl = text.find('\n', end)) {
      ++halves;
      end = nl + 1;
    }
    const std::size_t complete_pairs = static_cast<std::size_t>(halves / 2);
    std::size_t jobs = 0;
    for (const auto& r : f.ranks) jobs += r.device.jobs.size();
    EXPECT_EQ(jobs, complete_pairs) << "cut at " << cut;
    if (cut > end) {  // torn inside a record
      EXPECT_NE(f.result.stats.error.find(fmt::format("byte offset {}", end)), std::string::npos)
          << "cut at " << cut << ": " << f.result.stats.error;
    }
  }
}

TEST(DygraphReader, SnifferTakesRecordsAndTheConcatenationOnly) {
  EXPECT_TRUE(looks_like_dygraph_records(rec("F0", "B", 1, 1).substr(0, 128)));
  EXPECT_TRUE(looks_like_dygraph_records(
      ("[ " + rec("F10_VP1", "B", 1, 1, "virtual pipeline timeline")).substr(0, 128)));
  EXPECT_FALSE(looks_like_dygraph_records("I1020 09:15:07.265326 Profiler Info: Job (3)"));
  EXPECT_FALSE(looks_like_dygraph_records("{\"traceEvents\": []}"));
}

TEST(DygraphDiscovery, FolderFilesByNameAndTheConcatenationOnlyAlone) {
  testing::TempDir dir;
  const std::string line = rec("F0", "B", 1, 1) + "\n";
  dir.write("run/profile_record_tmp_file_for_rank_10", line);
  dir.write("run/profile_record_tmp_file_for_rank_2", line);
  dir.write("run/pipeline_profile.json", "[ " + rec("F0", "B", 1, 1) + " ]\n");
  const auto inputs = discover_inputs({dir / "run"});
  ASSERT_EQ(inputs.size(), 2u);  // the concatenation repeats the per-rank files
  EXPECT_EQ(inputs[0].rank, 2);
  EXPECT_EQ(inputs[1].rank, 10);
  EXPECT_EQ(inputs[0].format, InputFormat::paddle_dygraph);

  dir.write("cat/pipeline_profile.json", "[ " + rec("F0", "B", 1, 1) + " ]\n");
  const auto alone = discover_inputs({dir / "cat"});
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].format, InputFormat::paddle_dygraph);

  // A record file under another name, given directly, is sniffed.
  const std::string renamed = dir.write("other/stage0.jsonl", line);
  const auto sniffed = discover_inputs({renamed});
  ASSERT_EQ(sniffed.size(), 1u);
  EXPECT_EQ(sniffed[0].format, InputFormat::paddle_dygraph);
}

TEST(DygraphDiscovery, MixingWithWorkerLogsOrTheirConcatenationIsRefused) {
  testing::TempDir dir;
  const std::string line = rec("F0", "B", 1, 1) + "\n";
  const std::string rank0 = dir.write("a/profile_record_tmp_file_for_rank_0", line);
  const std::string log = dir.write("b/workerlog.0", "nothing\n");
  const std::string cat = dir.write("c/pipeline_profile.json", "[ " + rec("F0", "B", 1, 1) + " ]\n");
  try {
    discover_inputs({rank0, log});
    ADD_FAILURE() << "mixed formats accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              rank0 + " is a Paddle dygraph pipeline record file and " + log +
                  " is a worker log or .ivl record file: one run is read from one kind of "
                  "source (nothing in these files says that they describe different pipelines); "
                  "analyse them separately");
  }
  EXPECT_THROW(discover_inputs({rank0, cat}), InputError);
}

TEST(DygraphDiscovery, PyTorchTracesMixWithNoOtherSource) {
  testing::TempDir dir;
  const std::string trace = dir.write(
      "t/rank0.pt.trace.json", R"({"distributedInfo": {"rank": 0}, "traceEvents": []})");
  const std::string rank0 =
      dir.write("a/profile_record_tmp_file_for_rank_0", rec("F0", "B", 1, 1) + "\n");
  const std::string log = dir.write("b/workerlog.0", "nothing\n");
  for (const std::string& other : {rank0, log}) {
    try {
      discover_inputs({trace, other});
      ADD_FAILURE() << "a trace mixed with " << other << " was accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(trace + " is a PyTorch profiler trace"), std::string::npos) << what;
      EXPECT_NE(what.find(other + " is a"), std::string::npos) << what;
      EXPECT_NE(what.find("one run is read from one kind of source"), std::string::npos) << what;
    }
  }
  EXPECT_NO_THROW(discover_inputs({trace}));
}

TEST(DygraphReader, PipelinesAreNeverMixed) {
  testing::TempDir dir;
  // Ranks 0 and 1 record stage 0, ranks 2 and 3 stage 1: two pipelines.
  for (int r = 0; r < 4; ++r) {
    const int tid = r / 2 + 1;
    dir.write(fmt::format("run/profile_record_tmp_file_for_rank_{}", r),
              rec("F0", "B", tid, 100 * r) + "\n" + rec("F0", "E", tid, 100 * r + 7 + r) + "\n");
  }
  const auto inputs = discover_inputs({dir / "run"});
  IngestOptions options;
  pipescope::Run run = ingest_inputs(inputs, options);
  ASSERT_EQ(run.devices.size(), 2u);
  EXPECT_EQ(run.devices[0].index, 0);
  EXPECT_EQ(run.devices[0].jobs[0].duration_ns(), 7'000'000);   // rank 0
  EXPECT_EQ(run.devices[1].jobs[0].duration_ns(), 9'000'000);   // rank 2
  ASSERT_EQ(run.notes.size(), 1u);
  EXPECT_EQ(run.notes[0].code, WarningCode::other_pipelines);
  EXPECT_NE(run.notes[0].message.find("pipeline 1: ranks 1 (stage 0), 3 (stage 1)"),
            std::string::npos)
      << run.notes[0].message;
  EXPECT_EQ(run.time_resolution_ns, 1'000'000);

  options.pipeline = 1;
  pipescope::Run other = ingest_inputs(inputs, options);
  ASSERT_EQ(other.devices.size(), 2u);
  EXPECT_EQ(other.devices[0].jobs[0].duration_ns(), 8'000'000);  // rank 1
  EXPECT_EQ(other.devices[1].jobs[0].duration_ns(), 10'000'000);  // rank 3
  options.pipeline = 2;
  EXPECT_THROW(ingest_inputs(inputs, options), InputError);
}

}  // namespace
}  // namespace pipescope

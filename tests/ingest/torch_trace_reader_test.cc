// PyTorch profiler traces: the event tokenizer (chunk sizes, strings,
// damage), PP: action labels, the interval preference, exact times, chunks,
// job patterns, discovery, and the real Kineto traces of testdata/kineto/.
#include "ingest/torch_trace_reader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "analysis/job_role.h"
#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "ingest/input_formats.h"
#include "ingest/job_pattern.h"
#include "ingest/launch_join.h"
#include "ingest/pipeline_action.h"
#include "ingest/trace_event_tokenizer.h"
#include "model/errors.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---------------------------------------------------------------- tokenizer

struct Tokens {
  std::vector<std::string> events;
  std::vector<std::uint64_t> offsets;
  std::vector<std::string> values;
  std::string error;
  std::uint64_t error_offset = 0;
};

using BlockScan = TraceEventTokenizer::BlockScan;

Tokens tokenize(std::string_view doc, std::size_t chunk, BlockScan block_scan = BlockScan::best) {
  Tokens t;
  TraceEventTokenizer tok(
      {"baseTimeNanoseconds", "distributedInfo"},
      [&](std::string_view e, std::uint64_t offset) {
        t.events.emplace_back(e);
        t.offsets.push_back(offset);
      },
      [&](std::string_view key, std::string_view value) {
        t.values.push_back(fmt::format("{}={}", key, value));
      });
  tok.set_block_scan(block_scan);
  for (std::size_t i = 0; i < doc.size(); i += chunk) {
    std::string piece(doc.substr(i, chunk));
    piece.append(TraceEventTokenizer::kPadding, ' ');
    tok.feed(piece.data(), std::min(chunk, doc.size() - i));
  }
  tok.finish();
  t.error = tok.error();
  t.error_offset = tok.error_offset();
  return t;
}

constexpr std::string_view kDoc =
    R"({"schemaVersion": 1, "distributedInfo": {"rank": 3, "x": [1, {"y": "}]"}]},
 "odd \"key\"": "{[", "traceEvents": [
  {"name": "a \"}\" b", "ph": "X", "args": {"k": [1, 2, {"z": "]"}]}},
  {"name": "second"} , 17, "s",
  {"name": "third\\"}
 ], "baseTimeNanoseconds": 1700000000000000000 }
)";

TEST(TraceEventTokenizer, SameEventsAtEveryChunkSize) {
  const Tokens whole = tokenize(kDoc, kDoc.size());
  ASSERT_EQ(whole.events.size(), 3u) << whole.error;
  EXPECT_EQ(whole.events[0],
            R"({"name": "a \"}\" b", "ph": "X", "args": {"k": [1, 2, {"z": "]"}]}})");
  EXPECT_EQ(whole.events[1], R"({"name": "second"})");
  EXPECT_EQ(whole.events[2], R"({"name": "third\\"})");
  EXPECT_EQ(whole.offsets[1], kDoc.find(R"({"name": "second"})"));
  ASSERT_EQ(whole.values.size(), 2u);
  EXPECT_EQ(whole.values[0], R"(distributedInfo={"rank": 3, "x": [1, {"y": "}]"}]})");
  EXPECT_EQ(whole.values[1], "baseTimeNanoseconds=1700000000000000000");
  EXPECT_EQ(whole.error, "");
  for (std::size_t chunk = 1; chunk <= kDoc.size(); ++chunk) {
    const Tokens t = tokenize(kDoc, chunk);
    EXPECT_EQ(t.events, whole.events) << chunk;
    EXPECT_EQ(t.offsets, whole.offsets) << chunk;
    EXPECT_EQ(t.values, whole.values) << chunk;
    EXPECT_EQ(t.error, "") << chunk;
  }
}

TEST(TraceEventTokenizer, ArrayFormatAndDamage) {
  const Tokens array = tokenize(R"([{"a": 1}, {"b": [2]}])", 3);
  EXPECT_EQ(array.events, (std::vector<std::string>{R"({"a": 1})", R"({"b": [2]})"}));
  EXPECT_EQ(array.error, "");

  // Cut at every byte: the events complete before the cut, never more, and
  // an error that says where.
  const Tokens whole = tokenize(kDoc, kDoc.size());
  for (std::size_t cut = 0; cut + 2 < kDoc.size(); ++cut) {
    const Tokens t = tokenize(kDoc.substr(0, cut), 7);
    std::size_t complete = 0;
    for (std::size_t i = 0; i < whole.events.size(); ++i) {
      if (whole.offsets[i] + whole.events[i].size() <= cut) complete = i + 1;
    }
    EXPECT_EQ(t.events.size(), complete) << cut;
    EXPECT_FALSE(t.error.empty()) << cut;
    EXPECT_LE(t.error_offset, cut) << cut;
  }

  // A bracket of the wrong kind stops the reading there.
  const std::string bad = R"({"traceEvents": [{"a": 1}, {"b": 2]}, {"c": 3}]})";
  const Tokens t = tokenize(bad, 5);
  EXPECT_EQ(t.events, std::vector<std::string>{R"({"a": 1})"});
  EXPECT_EQ(t.error, "unexpected ']'");
  EXPECT_EQ(t.error_offset, bad.find("]}"));
  EXPECT_EQ(tokenize("", 4).error, "the file is empty");

  // Nesting past kMaxDepth inside an event (where the block scan follows
  // only the nesting) is damage at its bracket, whichever scan reads it.
  const std::string deep = R"({"traceEvents": [{"a": 1}, {"b": )" +
                           std::string(TraceEventTokenizer::kMaxDepth, '[') + "]}]}";
  for (const BlockScan how : {BlockScan::off, BlockScan::sse2, BlockScan::best}) {
    const Tokens d = tokenize(deep, 100, how);
    EXPECT_EQ(d.events, std::vector<std::string>{R"({"a": 1})"});
    EXPECT_EQ(d.error,
              fmt::format("nesting deeper than {} levels", TraceEventTokenizer::kMaxDepth));
    EXPECT_EQ(d.error_offset,
              deep.find('[', deep.find('[') + 1) + TraceEventTokenizer::kMaxDepth - 3);
  }
}

TEST(TraceEventTokenizer, BlockScanReadsLikeTheByteWiseScan) {
  // Long events (the block scan takes 64 bytes at a time) whose strings hold
  // quotes, backslash runs of every length and brackets, across block and
  // chunk boundaries; then the same documents damaged at random. The block
  // scan (SSE2, and AVX2 where the CPU has it) must find the same events,
  // values and damage as the byte-wise one, whatever the chunking.
  std::uint64_t state = 20261201;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  auto text = [&] {
    static constexpr std::string_view kPieces[] = {
        "a", "bc", "\\\\", "\\\"",     "\\\\\\\"",       "{", "}", "[", "]", ",",
        ":", " ",  "\\n",  "\\\\\\\\", "xyzzy0123456789"};
    std::string out;
    for (int n = static_cast<int>(next() % 12); n > 0; --n) out += kPieces[next() % 15];
    return out;
  };
  std::string good = R"({"schemaVersion": 1, "distributedInfo": {"rank": 0, "s": ")" + text() +
                     R"("}, "traceEvents": [)";
  for (int e = 0; e < 60; ++e) {
    good += fmt::format(
        R"({}{{"ph": "X", "cat": "{}", "name": "{}", "ts": {}, "args": {{"a": [1, {{"b": "{}"}}]}}}})",
        e == 0 ? "" : ",\n  ", text(), text(), e, text());
  }
  good += R"(], "baseTimeNanoseconds": 12})";
  const Tokens reference = tokenize(good, good.size(), BlockScan::off);
  ASSERT_EQ(reference.error, "");
  ASSERT_EQ(reference.events.size(), 60u);
  ASSERT_EQ(reference.values.size(), 2u);
  for (int round = 0; round < 300; ++round) {
    std::string doc = good;
    if (round > 0) {
      for (int e = 1 + static_cast<int>(next() % 3); e > 0 && !doc.empty(); --e) {
        const std::size_t at = next() % doc.size();
        if (next() % 2 == 0) {
          doc.insert(at, 1, "{}[]\",:\\"[next() % 8]);
        } else {
          doc.erase(at, 1 + next() % 4);
        }
      }
    }
    const Tokens bytewise = tokenize(doc, doc.size(), BlockScan::off);
    for (const BlockScan how : {BlockScan::sse2, BlockScan::best}) {
      for (const std::size_t chunk : {doc.size(), std::size_t{64}, 65 + next() % 200}) {
        const Tokens blocks = tokenize(doc, chunk, how);
        const auto at = fmt::format("{} {} {}", round, chunk, static_cast<int>(how));
        ASSERT_EQ(blocks.events, bytewise.events) << at;
        ASSERT_EQ(blocks.offsets, bytewise.offsets) << at;
        ASSERT_EQ(blocks.values, bytewise.values) << at;
        ASSERT_EQ(blocks.error, bytewise.error) << at;
        ASSERT_EQ(blocks.error_offset, bytewise.error_offset) << at;
      }
    }
  }
}

// ---------------------------------------------------------------- labels

TEST(PipelineAction, Labels) {
  auto one = [](std::string_view label) {
    const auto actions = parse_pipeline_action(label);
    return actions.size() == 1
               ? fmt::format("{} {} {}", actions[0].type, actions[0].stage, actions[0].micro_batch)
               : fmt::format("{} actions", actions.size());
  };
  EXPECT_EQ(one("0F3"), "forward 0 3");
  EXPECT_EQ(one("2RECV_B1"), "recv_backward 2 1");
  EXPECT_EQ(one("1W0"), "backward_w 1 0");
  EXPECT_EQ(one("1I12"), "backward_b 1 12");
  EXPECT_EQ(one("3B7"), "backward 3 7");
  EXPECT_EQ(one("10SEND_F2"), "send_forward 10 2");
  EXPECT_EQ(one("0RECV_F2"), "recv_forward 0 2");
  EXPECT_EQ(one("0SEND_B2"), "send_backward 0 2");
  EXPECT_EQ(one("1UNSHARD"), "unshard 1 -1");
  EXPECT_EQ(one("1RESHARD"), "reshard 1 -1");
  EXPECT_EQ(one("3REDUCE_GRAD"), "reduce_grad 3 -1");
  for (const char* bad : {"F3", "0X1", "0F", "1UNSHARD2", "0F1x", "", "(0F1)OVERLAP_F_B",
                          "(0F1;1B0)", "(0F1;1Q0)OVERLAP_F_B"}) {
    EXPECT_TRUE(parse_pipeline_action(bad).empty()) << bad;
  }
  const auto pair = parse_pipeline_action("(0F1;1B0)OVERLAP_F_B");
  ASSERT_EQ(pair.size(), 2u);
  EXPECT_EQ(pair[0].type, "forward");
  EXPECT_EQ(pair[0].micro_batch, 1);
  EXPECT_EQ(pair[1].type, "backward");
  EXPECT_EQ(pair[1].stage, 1);
}

// ---------------------------------------------------------------- traces

std::string span(std::string_view cat, std::string_view name, std::string_view ts,
                 std::string_view dur, std::string_view args = "{}") {
  return fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 9, "tid": 9, "ts": {}, )"
                     R"("dur": {}, "args": {}}})",
                     cat, name, ts, dur, args);
}

std::string trace(const std::vector<std::string>& events, std::string_view tail = "",
                  int rank = 0) {
  std::string doc = fmt::format(
      "{{\n \"schemaVersion\": 1, \"distributedInfo\": {{\"rank\": {}}},\n \"traceEvents\": [\n",
      rank);
  for (std::size_t i = 0; i < events.size(); ++i) {
    doc += (i ? ",\n  " : "  ") + events[i];
  }
  doc += fmt::format("\n ]{}\n}}\n", tail);
  return doc;
}

FileResult read_trace(const std::string& path, const IngestOptions& options = {}) {
  InputFile input;
  input.path = path;
  input.format = InputFormat::torch_trace;
  return read_torch_trace(input, options, options);
}

struct JobText {
  std::string type;
  std::int64_t mb, start, end;
  friend bool operator==(const JobText&, const JobText&) = default;
};

std::vector<JobText> jobs_of(const FileResult& r) {
  std::vector<JobText> out;
  for (const Job& j : r.device.jobs) {
    out.push_back({r.types.name(j.type), j.micro_batch, j.start_ns, j.end_ns});
  }
  return out;
}

void PrintTo(const JobText& j, std::ostream* os) {
  *os << j.type << " mb" << j.mb << " [" << j.start << ", " << j.end << ")";
}

TEST(TorchTraceReader, ManyChunksReadInParallelKeepFileOrder) {
  // About 14 MB: the reader's chunks (256 KiB) are cut, parsed side by side
  // and applied in order. Kineto's order: every CPU event first (filler ops
  // between the annotations), then launches, kernels and GPU spans, with a
  // malformed event now and then and the base time after the events. Every
  // job, time and diagnostic must come out as one thread would give them.
  TempDir dir;
  constexpr int kJobs = 3000;
  std::vector<std::string> cpu, gpu;
  std::vector<JobText> expected;
  const std::int64_t base = 1'000'000'000'000'000;
  for (int i = 0; i < kJobs; ++i) {
    const std::int64_t ts = 1000 + std::int64_t{i} * 100;  // us
    const bool forward = i % 2 == 0;
    const std::string name = fmt::format("PP:0{}{}", forward ? 'F' : 'B', i / 2);
    const std::string corr = fmt::format(R"({{"correlation": {}, "External id": {}}})", i, i);
    cpu.push_back(span("user_annotation", name, std::to_string(ts), "50", corr));
    for (int f = 0; f < 20; ++f) {
      cpu.push_back(span(
          "cpu_op", fmt::format("aten::filler_{}_{}", i, f), fmt::format("{}.{}", ts + 1, f), "1.5",
          R"({"Record function id": 0, "Sequence number": 12345, "Fwd thread id": 1})"));
    }
    if (i % 400 == 7) cpu.push_back(R"({"ph": "X", "cat": "user_annotation", "name": 12, "ts": })");
    gpu.push_back(span("cuda_runtime", "cudaLaunchKernel", std::to_string(ts + 2), "1", corr));
    gpu.push_back(span("kernel", "k", std::to_string(ts + 10), "20", corr));
    gpu.push_back(span("gpu_user_annotation", name, std::to_string(ts + 9), "30", corr));
    expected.push_back(
        {forward ? "forward" : "backward", i / 2, base + (ts + 9) * 1000, base + (ts + 39) * 1000});
  }
  std::vector<std::string> events = cpu;
  events.insert(events.end(), gpu.begin(), gpu.end());
  const std::string doc = trace(events, fmt::format(",\n \"baseTimeNanoseconds\": {}", base));
  ASSERT_GT(doc.size(), std::size_t{12} << 20);
  const std::string path = dir.write("big.pt.trace.json", doc);
  const FileResult r = read_trace(path);
  EXPECT_EQ(r.stats.error, "");
  EXPECT_EQ(r.stats.lines, events.size());
  EXPECT_EQ(r.stats.malformed, 8u);
  EXPECT_EQ(r.stats.matched, std::size_t{kJobs});
  EXPECT_EQ(jobs_of(r), expected);
  ASSERT_FALSE(r.diagnostics.empty());
  const std::size_t first_bad =
      doc.find(R"("name": 12)") -
      std::string_view(R"({"ph": "X", "cat": "user_annotation", )").size();
  EXPECT_EQ(r.diagnostics[0].message,
            fmt::format("byte offset {}: an event that is not valid JSON; skipped", first_bad));
  // Diagnostics in file order, across chunks.
  std::vector<std::uint64_t> offsets;
  for (const Diagnostic& d : r.diagnostics) {
    if (d.message.starts_with("byte offset ")) offsets.push_back(std::stoull(d.message.substr(12)));
  }
  EXPECT_GE(offsets.size(), 3u);
  EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end()));
}

TEST(TorchTraceReader, IntervalPreferenceAndExactTimes) {
  TempDir dir;
  const std::string path = dir.write(
      "r.pt.trace.json",
      trace(
          {
              span("user_annotation", "ProfilerStep#41", "0", "1000"),
              // GPU span covering its kernel: the GPU span.
              span("user_annotation", "PP:0F0", "10", "5", R"({"External id": 1})"),
              span("cuda_runtime", "cudaLaunchKernel", "12", "1", R"({"correlation": 101})"),
              span("kernel", "k", "21.5", "3", R"({"correlation": 101})"),
              span("gpu_user_annotation", "PP:0F0", "20.0005", "10.0004", R"({"External id": 1})"),
              // GPU span missing the kernels: the kernels' span.
              span("user_annotation", "PP:0F1", "40", "5", R"({"External id": 2})"),
              span("cuda_runtime", "cudaLaunchKernel", "41", "1", R"({"correlation": 102})"),
              span("cuda_driver", "cuLaunchKernel", "43", "1", R"({"correlation": 103})"),
              span("kernel", "k", "50.25", "4", R"({"correlation": 102})"),
              span("gpu_memcpy", "m", "60", "2.125", R"({"correlation": 103})"),
              span("gpu_user_annotation", "PP:0F1", "50.25", "0.028", R"({"External id": 2})"),
              // Neither: the CPU span, host-timed.
              span("user_annotation", "PP:0B0", "100", "7.5"),
              // DualPipeV's overlapped action without a kernel: one F+B job,
              // both ops over the whole GPU span (no boundary is shown).
              span("user_annotation", "PP:(0F2;0B1)OVERLAP_F_B", "200", "1"),
              span("gpu_user_annotation", "PP:(0F2;0B1)OVERLAP_F_B", "300", "50"),
              // Not ours.
              span("user_annotation", "Optimizer.step#SGD.step", "400", "5"),
              span("user_annotation", "PP:0Q1", "500", "5"),
          },
          ",\n \"baseTimeNanoseconds\": 1700000000000000000"));
  const FileResult r = read_trace(path);
  const std::int64_t base = 1'700'000'000'000'000'000;
  EXPECT_EQ(jobs_of(r), (std::vector<JobText>{
                            {"forward", 0, base + 20'001, base + 30'001},
                            {"forward", 1, base + 50'250, base + 62'125},
                            {"backward", 0, base + 100'000, base + 107'500},
                            {"forward(F+B)", 2, base + 300'000, base + 350'000},
                            {"backward(F+B)", 1, base + 300'000, base + 350'000},
                        }));
  EXPECT_EQ(r.first_step, 41);
  EXPECT_EQ(r.stats.matched, 5u);
  EXPECT_EQ(r.stats.lines, 16u);
  EXPECT_EQ(r.stats.malformed, 1u);  // PP:0Q1
  EXPECT_EQ(r.stats.error, "");
  std::string notes;
  for (const Diagnostic& d : r.diagnostics) notes += d.message + "\n";
  EXPECT_NE(notes.find("'PP:0Q1' is no pipeline action"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 of 5 jobs are host-timed"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 OVERLAP_F_B action (a forward, then a backward, in one profiler "
                       "range): 1 kept as one F+B job each, no boundary shown inside (1 with no "
                       "kernel joined to the range)"),
            std::string::npos)
      << notes;
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].code, WarningCode::host_timed_jobs);
  EXPECT_EQ(r.notes[0].count, 1u);

  // Kineto's own order (CPU events first, then runtime calls and kernels in
  // time order, GPU annotations last) is joined in one pass: same jobs.
  std::vector<std::string> cpu, gpu, launches;
  std::string doc = read_text(path);
  for (std::size_t at = doc.find("{\"ph\""); at != std::string::npos;
       at = doc.find("{\"ph\"", at + 1)) {
    const std::string event = doc.substr(at, doc.find('}', doc.find("\"args\"", at)) + 2 - at);
    (event.find("\"user_annotation\"") != std::string::npos       ? cpu
     : event.find("\"gpu_user_annotation\"") != std::string::npos ? gpu
                                                                  : launches)
        .push_back(event);
  }
  std::vector<std::string> kineto = cpu;
  kineto.insert(kineto.end(), launches.begin(), launches.end());
  kineto.insert(kineto.end(), gpu.begin(), gpu.end());
  const FileResult k = read_trace(dir.write(
      "k.pt.trace.json", trace(kineto, ",\n \"baseTimeNanoseconds\": 1700000000000000000")));
  EXPECT_EQ(jobs_of(k), jobs_of(r));
  EXPECT_EQ(k.stats.lines, 16u);
}

// An event on host thread `tid`.
std::string on_thread(std::string_view cat, std::string_view name, std::string_view ts,
                      std::string_view dur, int tid, std::string_view args = "{}") {
  return fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 9, "tid": {}, "ts": {}, )"
                     R"("dur": {}, "args": {}}})",
                     cat, name, tid, ts, dur, args);
}

// A kernel and the launch it came from: launched at `launch` us from `tid`,
// run over [start, start + dur) us.
std::vector<std::string> launched(int correlation, int tid, std::string_view launch,
                                  std::string_view start, std::string_view dur) {
  return {on_thread("cuda_runtime", "cudaLaunchKernel", launch, "1", tid,
                    fmt::format(R"({{"correlation": {}}})", correlation)),
          span("kernel", "gemm", start, dur, fmt::format(R"({{"correlation": {}}})", correlation))};
}

// The events of torch's OVERLAP_F_B action on the range's thread 9: the
// forward's kernels launched from it, the backward's from autograd's device
// thread (`backward_tid`) under evaluate_function ops; the backward waited
// 5 us for its input after the forward.
std::vector<std::string> overlap_action(int backward_tid, std::string_view backward_start) {
  std::vector<std::string> e = {
      span("user_annotation", "ProfilerStep#3", "0", "1000"),
      span("user_annotation", "PP:(1F6;6B2)OVERLAP_F_B", "10", "30", R"({"External id": 7})"),
      on_thread("cpu_op", "autograd::engine::evaluate_function: MmBackward0", "24", "4",
                backward_tid),
  };
  for (const auto& pair : {launched(201, 9, "12", "100", "10"), launched(202, 9, "14", "110", "20"),
                           launched(203, backward_tid, "25", backward_start, "8"),
                           launched(204, backward_tid, "30", "150", "12.5")}) {
    e.insert(e.end(), pair.begin(), pair.end());
  }
  // The GPU span of the kernels launched from the range's thread.
  e.push_back(
      span("gpu_user_annotation", "PP:(1F6;6B2)OVERLAP_F_B", "100", "30", R"({"External id": 7})"));
  // The stages of the rank (1 and 6), by plain actions.
  e.push_back(span("user_annotation", "PP:1F7", "300", "5"));
  e.push_back(span("user_annotation", "PP:6B3", "400", "5"));
  return e;
}

TEST(TorchTraceReader, AnOverlapActionIsTimedApartByItsKernelsLaunchThreads) {
  TempDir dir;
  const FileResult r = read_trace(dir.write("r.pt.trace.json", trace(overlap_action(17, "135"))));
  // The forward: its kernels from the range's thread, 100 to 130 us; the
  // backward: from autograd's thread, 135 (after a 5 us wait) to 162.5 us.
  EXPECT_EQ(jobs_of(r), (std::vector<JobText>{{"forward0(overlap)", 6, 100'000, 130'000},
                                              {"backward1(overlap)", 2, 135'000, 162'500},
                                              {"forward0", 7, 300'000, 305'000},
                                              {"backward1", 3, 400'000, 405'000}}));
  std::string notes;
  for (const Diagnostic& d : r.diagnostics) notes += d.message + "\n";
  EXPECT_NE(notes.find("1 OVERLAP_F_B action (a forward, then a backward, in one profiler "
                       "range): 1 timed apart by the range's kernels"),
            std::string::npos)
      << notes;

  // Kineto's own order (CPU events, then launches and kernels, then GPU
  // spans), and an annotation after the first launch (the second pass that
  // replays the kernels): the same jobs.
  std::vector<std::string> events = overlap_action(17, "135");
  std::vector<std::string> late = {events[0], events[2]};
  late.insert(late.end(), events.begin() + 3, events.end() - 3);
  late.insert(late.end(),
              {events[1], events[events.size() - 3], events[events.size() - 2], events.back()});
  const FileResult k = read_trace(dir.write("k.pt.trace.json", trace(late)));
  EXPECT_EQ(jobs_of(k), jobs_of(r));

  // The ops' roles: one action of two ops, each timed by its own kernels.
  const JobRole forward = classify_job_role("forward0(overlap)");
  EXPECT_EQ(forward.role, PipelineRole::forward);
  EXPECT_TRUE(forward.overlap);
  EXPECT_FALSE(forward.joined);
  EXPECT_EQ(forward.chunk, 0);
  const JobRole backward = classify_job_role("backward1(F+B)");
  EXPECT_EQ(backward.role, PipelineRole::backward);
  EXPECT_EQ(backward.chunk, 1);
  EXPECT_TRUE(backward.overlap && backward.joined);
  EXPECT_EQ(classify_job_role("backward_w1(overlap)").role, PipelineRole::other);
}

TEST(TorchTraceReader, AnOverlapActionWhoseKernelsShowNoBoundaryIsOneJob) {
  TempDir dir;
  const auto one_job = [](const FileResult& r, std::string_view why) {
    EXPECT_EQ(jobs_of(r), (std::vector<JobText>{{"forward0(F+B)", 6, 100'000, 162'500},
                                                {"backward1(F+B)", 2, 100'000, 162'500},
                                                {"forward0", 7, 300'000, 305'000},
                                                {"backward1", 3, 400'000, 405'000}}));
    std::string notes;
    for (const Diagnostic& d : r.diagnostics) notes += d.message + "\n";
    EXPECT_NE(
        notes.find(fmt::format("1 kept as one F+B job each, no boundary shown inside (1 {})", why)),
        std::string::npos)
        << notes;
    EXPECT_EQ(notes.find("timed apart"), std::string::npos) << notes;
  };
  // Every kernel launched from the range's own thread (autograd run on the
  // calling thread): nothing tells the backward's from the forward's.
  one_job(read_trace(dir.write("one.pt.trace.json", trace(overlap_action(9, "135")))),
          "with its kernels launched from one thread only");
  // The backward's first kernel before the forward's last one ends: the two
  // overlap on the GPU, no boundary between them.
  one_job(read_trace(dir.write("both.pt.trace.json", trace(overlap_action(17, "125")))),
          "whose forward's and backward's kernels overlap on the GPU");
}

TEST(TorchTraceReader, AbsoluteMicrosecondsWithoutBase) {
  TempDir dir;
  const std::string path =
      dir.write("r.pt.trace.json",
                trace({span("user_annotation", "PP:0F0", "1712195495984501.2", "1.0005")}));
  const FileResult r = read_trace(path);
  // 1712195495984501.2 us does not fit a double exactly; the ns are exact.
  EXPECT_EQ(
      jobs_of(r),
      (std::vector<JobText>{{"forward", 0, 1'712'195'495'984'501'200, 1'712'195'495'984'502'201}}));
  EXPECT_FALSE(r.first_step.has_value());
}

TEST(TorchTraceReader, ChunksFromTheStagesOfTheRank) {
  TempDir dir;
  // V: rank 1 of P=4 holds stages 1 and 6; looped: rank 1 holds 1, 5, 9.
  const FileResult v = read_trace(dir.write(
      "v.pt.trace.json",
      trace(
          {span("user_annotation", "PP:1F0", "0", "1"), span("user_annotation", "PP:6F0", "2", "1"),
           span("user_annotation", "PP:6I0", "4", "1"), span("user_annotation", "PP:1W0", "6", "1"),
           span("user_annotation", "PP:6SEND_B0", "8", "1")})));
  EXPECT_EQ(jobs_of(v), (std::vector<JobText>{{"forward0", 0, 0, 1000},
                                              {"forward1", 0, 2000, 3000},
                                              {"backward_b1", 0, 4000, 5000},
                                              {"backward_w0", 0, 6000, 7000},
                                              {"send_backward", 0, 8000, 9000}}));
  const FileResult looped = read_trace(
      dir.write("l.pt.trace.json", trace({span("user_annotation", "PP:9F0", "0", "1"),
                                          span("user_annotation", "PP:5B0", "2", "1"),
                                          span("user_annotation", "PP:1F1", "4", "1")})));
  EXPECT_EQ(jobs_of(looped), (std::vector<JobText>{{"forward2", 0, 0, 1000},
                                                   {"backward1", 0, 2000, 3000},
                                                   {"forward0", 1, 4000, 5000}}));
}

TEST(TorchTraceReader, CutShortKeepsTheEventsBeforeTheDamage) {
  TempDir dir;
  const std::string doc = trace({span("user_annotation", "PP:0F0", "0", "1"),
                                 span("user_annotation", "PP:0F1", "2", "1"),
                                 span("user_annotation", "PP:0F2", "4", "1")});
  const std::size_t cut = doc.find("PP:0F2") + 3;
  const FileResult r = read_trace(dir.write("r.pt.trace.json", doc.substr(0, cut)));
  EXPECT_EQ(r.device.jobs.size(), 2u);
  const std::size_t third = doc.rfind("{\"ph\"", cut);
  EXPECT_EQ(r.stats.error,
            fmt::format("byte offset {}: the JSON ends early (cut off at byte {}): every event "
                        "before byte {} was read",
                        third, cut, third));
  // Junk inside an event: that event is skipped, the rest is read.
  std::string junk = doc;
  junk.replace(junk.find("\"ts\": 2"), 7, "\"ts\": ?");
  const FileResult j = read_trace(dir.write("j.pt.trace.json", junk));
  EXPECT_EQ(j.device.jobs.size(), 2u);
  EXPECT_EQ(j.stats.malformed, 1u);
  EXPECT_EQ(j.stats.error, "");
}

// The fuzz target's checks on seeded random damage, so that every build
// (and the sanitizer builds) runs them: flipped, dropped and inserted bytes
// and cuts of a real-shaped trace never crash, the events found chunk by
// chunk equal those found whole, and no job appears that was not there.
TEST(TorchTraceReader, RandomDamageNeverCrashes) {
  TempDir dir;
  std::vector<std::string> events = {span("user_annotation", "ProfilerStep#3", "0", "100")};
  for (int mb = 0; mb < 6; ++mb) {
    const std::string ts = std::to_string(10 + mb * 10);
    const std::string corr = fmt::format(R"({{"correlation": {}, "External id": {}}})", mb, mb);
    events.push_back(span("user_annotation", fmt::format("PP:1F{}", mb), ts, "2", corr));
    events.push_back(span("cuda_runtime", "cudaLaunchKernel", ts + ".5", "1", corr));
    events.push_back(span("kernel", "k\\\"x", std::to_string(15 + mb * 10), "3", corr));
    events.push_back(span("gpu_user_annotation", fmt::format("PP:1F{}", mb),
                          std::to_string(15 + mb * 10), "3", corr));
  }
  const std::string good = trace(events, ",\n \"baseTimeNanoseconds\": 1000");
  const std::string path = dir / "d.pt.trace.json";
  std::uint64_t state = 20240403;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (int round = 0; round < 400; ++round) {
    std::string doc = good;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits && !doc.empty(); ++e) {
      const std::size_t at = next() % doc.size();
      switch (next() % 4) {
        case 0:
          doc[at] = static_cast<char>(next() % 256);
          break;
        case 1:
          doc.erase(at, 1 + next() % 8);
          break;
        case 2:
          doc.insert(at, 1, "{}[]\",:\\"[next() % 8]);
          break;
        case 3:
          doc.resize(at);
          break;
      }
    }
    Tokens whole = tokenize(doc, doc.size() + 1), chunked = tokenize(doc, 1 + next() % 17);
    ASSERT_EQ(whole.events, chunked.events) << round;
    ASSERT_EQ(whole.error, chunked.error) << round;
    TempDir::write_to(path, doc);
    const FileResult r = read_trace(path);
    EXPECT_LE(r.device.jobs.size(), 6u) << round;
    EXPECT_EQ(r.stats.matched, r.device.jobs.size()) << round;
    for (const Job& j : r.device.jobs) EXPECT_LE(j.start_ns, j.end_ns) << round;
  }
}

TEST(TorchTraceReader, JobPattern) {
  TempDir dir;
  const std::vector<std::string> events = {
      span("user_annotation", "ProfilerStep#7", "0", "100"),
      span("user_annotation", "## forward ##", "1", "10"),
      span("user_annotation", "## forward ##", "20", "10"),
      span("user_annotation", "## backward ##", "40", "10"),
      span("user_annotation", "## backward ##", "60", "10"),
      span("user_annotation", "ProfilerStep#8", "100", "100"),
      span("user_annotation", "## forward ##", "101", "10"),
      span("user_annotation", "## backward ##", "140", "10"),
      span("user_annotation", "## forward ##", "300", "10"),  // outside every step
  };
  const std::string path = dir.write("p.pt.trace.json", trace(events));
  IngestOptions options;
  options.job_pattern = std::make_shared<const JobPattern>("## (?P<op>forward|backward) ##", "");
  const FileResult r = read_trace(path, options);
  EXPECT_EQ(jobs_of(r), (std::vector<JobText>{{"forward", 0, 1000, 11000},
                                              {"forward", 1, 20000, 30000},
                                              {"backward", 0, 40000, 50000},
                                              {"backward", 1, 60000, 70000},
                                              {"forward", 0, 101000, 111000},
                                              {"backward", 0, 140000, 150000}}));
  EXPECT_EQ(r.first_step, 7);
  EXPECT_EQ(r.stats.malformed, 1u);

  // With mb, stage and kinds.
  options.job_pattern = std::make_shared<const JobPattern>(
      R"(mb(?P<mb>\d+)/(?P<op>fwd|bwd)@(?P<stage>\d+))", "fwd=forward,bwd=backward");
  const FileResult k = read_trace(
      dir.write("k.pt.trace.json", trace({span("gpu_user_annotation", "mb3/fwd@2", "5", "1"),
                                          span("user_annotation", "mb3/fwd@2", "1", "1"),
                                          span("user_annotation", "mb3/bwd@6", "10", "1")})),
      options);
  EXPECT_EQ(jobs_of(k),
            (std::vector<JobText>{{"forward0", 3, 5000, 6000}, {"backward1", 3, 10000, 11000}}));

  // Without mb, a trace without ProfilerStep spans cannot be split into steps.
  options.job_pattern = std::make_shared<const JobPattern>("## (?P<op>forward|backward) ##", "");
  const std::string bare = dir.write("b.pt.trace.json", trace({events[1], events[3]}));
  try {
    read_trace(bare, options);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              bare +
                  ": the job pattern has no 'mb' group, so steps must come from "
                  "ProfilerStep#N spans, and this trace has none");
  }

  EXPECT_THROW(JobPattern("(?P<mb>\\d+)", ""), std::invalid_argument);
  EXPECT_THROW(JobPattern("(?P<op>F", ""), std::invalid_argument);
  EXPECT_THROW(JobPattern("(?P<op>F)(?P<what>x)", ""), std::invalid_argument);
  EXPECT_THROW(JobPattern("(?P<op>F)", "F=fwd"), std::invalid_argument);
  EXPECT_THROW(JobPattern("(?P<op>F)(?=x)", ""), std::invalid_argument);
}

TEST(TorchTraceReader, JobPatternOnANameOfHundredsOfKilobytes) {
  // A tensor-shape string of 200 KB before the job's tag: a backtracking
  // matcher recursed per character and crashed the reader (SIGSEGV).
  TempDir dir;
  std::string shapes;
  while (shapes.size() < 200'000) shapes += "ab";
  const std::string path =
      dir.write("long.pt.trace.json",
                trace({span("user_annotation", shapes + "_mb3_fwd", "1", "10"),
                       span("user_annotation", shapes + "_mb3_bwd", "20", "10"),
                       span("user_annotation", shapes, "40", "10")}));  // no tag: no job
  IngestOptions options;
  options.job_pattern = std::make_shared<const JobPattern>(
      R"((?:a|b)*_?mb(?P<mb>\d+)_(?P<op>fwd|bwd))", "fwd=forward,bwd=backward");
  const FileResult r = read_trace(path, options);
  EXPECT_EQ(r.stats.error, "");
  EXPECT_EQ(r.stats.oversized, 0u);
  EXPECT_EQ(jobs_of(r),
            (std::vector<JobText>{{"forward", 3, 1000, 11000}, {"backward", 3, 20000, 30000}}));
  // The ECMAScript spelling of a named group reads the same jobs.
  options.job_pattern = std::make_shared<const JobPattern>(
      R"((?:a|b)*_?mb(?<mb>\d+)_(?<op>fwd|bwd))", "fwd=forward,bwd=backward");
  EXPECT_EQ(jobs_of(read_trace(path, options)), jobs_of(r));
}

TEST(TorchTraceReader, DiscoveryByNameRankAndContent) {
  TempDir dir;
  dir.write("run/host_2.1.pt.trace.json", trace({}, "", 2));
  dir.write("run/host_1.2.pt.trace.json", trace({}, "", 1));
  dir.write("run/expected.json", "{}");
  const auto inputs = discover_inputs({dir / "run"});
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].path, dir / "run/host_1.2.pt.trace.json");
  EXPECT_EQ(inputs[0].format, InputFormat::torch_trace);
  EXPECT_EQ(inputs[0].rank, 0);  // global ranks 1, 2 less the lowest
  EXPECT_EQ(inputs[1].rank, 1);
  EXPECT_EQ(format_by_name("x.pt.trace.json.gz"), InputFormat::torch_trace);
  // Given directly under another name: sniffed, compressed or not.
  const std::string other = dir.write("other.json", trace({}));
  EXPECT_EQ(format_by_content(other), InputFormat::torch_trace);
  EXPECT_EQ(format_by_content(std::string(PIPESCOPE_TESTDATA) +
                              "/kineto/mi250_minitoy_train_ROCm6_2_kineto.json.gz"),
            InputFormat::torch_trace);
  EXPECT_FALSE(trace_json_content(R"({"jobs": 3})"));
  EXPECT_EQ(torch_trace_rank(dir / "run/host_2.1.pt.trace.json"), 2);
}

TEST(TorchTraceReader, JobsBeforeTheFirstStepSpanAreTheStepBefore) {
  // The profiler started mid-step: ProfilerStep#5's span is not in the
  // trace, only its last jobs. They are step 5, as the profiler numbers it,
  // and the next ones step 6 (not 6 and 7).
  TempDir dir;
  const std::string path =
      dir.write("r.pt.trace.json", trace({
                                       span("user_annotation", "PP:0B3", "10", "5"),
                                       span("user_annotation", "ProfilerStep#6", "100", "200"),
                                       span("user_annotation", "PP:0F0", "110", "5"),
                                       span("user_annotation", "PP:0B0", "150", "5"),
                                   }));
  const FileResult r = read_trace(path);
  ASSERT_TRUE(r.first_step.has_value());
  EXPECT_EQ(*r.first_step, 5);
  EXPECT_EQ(r.stats.matched, 3u);
}

/// A labelled 1F1B run of `jobs` jobs, 10 a step, each in its groups of
/// events: host (its step's ProfilerStep#N span first, its PP: span, the
/// record_param_comms of its send) and device (4 launches at host + 5..8 us,
/// their kernels at host + 50.5 + 5k us, 4 us each, stream 2's (odd k)
/// written after stream 1's; a NCCL send launched at host + 45, running
/// from host + 80 for 9 us). host = 1000 + 100 * job us.
struct LabelledRun {
  std::vector<std::vector<std::string>> host, device;
};

LabelledRun labelled_run(int jobs) {
  LabelledRun run;
  for (int job = 0; job < jobs; ++job) {
    const std::int64_t host = 1000 + job * 100;
    std::vector<std::string> h, d;
    if (job % 10 == 0) {
      h.push_back(span("user_annotation", fmt::format("ProfilerStep#{}", job / 10),
                       std::to_string(host - 1), "1000"));
    }
    h.push_back(span("user_annotation",
                     fmt::format("PP:0{}{}", job % 2 ? 'B' : 'F', (job % 10) / 2),
                     std::to_string(host), "60"));
    h.push_back(span("cpu_op", "record_param_comms", std::to_string(host + 40), "10",
                     R"({"Collective name": "send", "Dst Rank": 1})"));
    for (int k = 0; k < 4; ++k) {
      d.push_back(span("cuda_runtime", "cudaLaunchKernel", std::to_string(host + 5 + k), "1",
                       fmt::format(R"({{"correlation": {}}})", job * 10 + k)));
    }
    for (int k : {0, 2, 1, 3}) {
      d.push_back(span("kernel", "gemm", fmt::format("{}.5", host + 50 + k * 5), "4",
                       fmt::format(R"({{"correlation": {}}})", job * 10 + k)));
    }
    d.push_back(span("cuda_runtime", "cudaLaunchKernel", std::to_string(host + 45), "1",
                     fmt::format(R"({{"correlation": {}}})", job * 10 + 9)));
    d.push_back(span("kernel", "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
                     std::to_string(host + 80), "9",
                     fmt::format(R"({{"correlation": {}}})", job * 10 + 9)));
    run.host.push_back(std::move(h));
    run.device.push_back(std::move(d));
  }
  return run;
}

/// What a labelled_run reads as, worked out from its times: each job from
/// its first kernel's start (host + 50.5 us) to the end of its NCCL kernel
/// (host + 89 us), all of them launched inside its PP: span; 4 disjoint
/// compute intervals a job; every NCCL kernel a send to rank 1 in its job's
/// step; each step from its first job's first kernel to its last job's end.
void expect_labelled_run(const FileResult& r, int jobs, const std::string& order) {
  SCOPED_TRACE(order);
  std::vector<JobText> expected;
  std::vector<TimeSpan> compute;
  for (int job = 0; job < jobs; ++job) {
    const std::int64_t host = (1000 + job * 100) * std::int64_t{1000};
    expected.push_back(
        {job % 2 ? "backward" : "forward", (job % 10) / 2, host + 50'500, host + 89'000});
    for (int k = 0; k < 4; ++k)
      compute.push_back({host + 50'500 + k * 5000, host + 54'500 + k * 5000});
  }
  EXPECT_EQ(jobs_of(r), expected);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels.front().activities, static_cast<std::uint64_t>(5 * jobs));
  EXPECT_EQ(r.kernels.front().without_launch, 0u);
  EXPECT_EQ(r.kernels.front().compute, compute);
  ASSERT_EQ(r.kernels.front().comm.size(), static_cast<std::size_t>(jobs));
  for (int job = 0; job < jobs; ++job) {
    const CommKernel& c = r.kernels.front().comm[static_cast<std::size_t>(job)];
    EXPECT_EQ(c.p2p, (std::vector<PeerOp>{{CommOp::send, 1}})) << job;
    EXPECT_EQ(c.step, std::optional<std::int64_t>(job / 10)) << job;
  }
  ASSERT_EQ(r.kernels.front().steps.size(), static_cast<std::size_t>(jobs / 10));
  for (int step = 0; step < jobs / 10; ++step) {
    const RankKernels::StepExtent& e = r.kernels.front().steps[static_cast<std::size_t>(step)];
    EXPECT_EQ(e.step, step);
    EXPECT_EQ(e.first_start, (1000 + step * 1000) * std::int64_t{1000} + 50'500);
    EXPECT_EQ(e.last_end, (1000 + step * 1000 + 900) * std::int64_t{1000} + 89'000);
  }
  EXPECT_FALSE(r.kernels.front().partial_step);
}

TEST(TorchTraceReader, SpansAndKernelsInAnyOrderJoinAsInKinetosOrder) {
  // One run written in Kineto's order (every CPU event first) and in the
  // orders it is not: each job's host spans after earlier jobs' kernels
  // with every step span after its step (the reader then holds the joined
  // kernels and places them at the end of the file); every span after
  // every kernel; each kernel just before its own launch (as Kineto writes
  // them now and then), spans late; too little room to hold the joined
  // kernels (they are read a second time); and a Kineto-order file over
  // several chunks whose step span #5 comes last, after the kernels it
  // holds were placed (read a second time too). Each reads as the run's own
  // times say (expect_labelled_run).
  const LabelledRun run = labelled_run(40);
  std::vector<std::string> kineto, late, spans_last, kernels_first;
  for (const auto& h : run.host) kineto.insert(kineto.end(), h.begin(), h.end());
  for (const auto& d : run.device) kineto.insert(kineto.end(), d.begin(), d.end());
  std::string step_span;
  for (std::size_t job = 0; job < run.host.size(); ++job) {
    for (const std::string& e : run.host[job]) {
      if (e.find("ProfilerStep#") == std::string::npos) {
        late.push_back(e);
        kernels_first.push_back(e);
        continue;
      }
      if (!step_span.empty()) {
        late.push_back(step_span);
        kernels_first.push_back(step_span);
      }
      step_span = e;
    }
    late.insert(late.end(), run.device[job].begin(), run.device[job].end());
    const std::vector<std::string>& d = run.device[job];  // launches 0-3, kernels 0 2 1 3, NCCL's
    for (const std::size_t k : {4, 0, 6, 1, 5, 2, 7, 3, 9, 8}) kernels_first.push_back(d[k]);
    spans_last.insert(spans_last.end(), run.device[job].begin(), run.device[job].end());
  }
  late.push_back(step_span);
  kernels_first.push_back(step_span);
  for (const auto& h : run.host) spans_last.insert(spans_last.end(), h.begin(), h.end());

  TempDir dir;
  expect_labelled_run(read_trace(dir.write("kineto.pt.trace.json", trace(kineto))), 40, "kineto");
  expect_labelled_run(read_trace(dir.write("late.pt.trace.json", trace(late))), 40, "late");
  expect_labelled_run(read_trace(dir.write("last.pt.trace.json", trace(spans_last))), 40,
                      "spans last");
  expect_labelled_run(read_trace(dir.write("first.pt.trace.json", trace(kernels_first))), 40,
                      "kernels first");
  IngestOptions tight;
  tight.trace_held_bytes = 2 * sizeof(LaunchPair);
  expect_labelled_run(read_trace(dir.write("tight.pt.trace.json", trace(late)), tight), 40,
                      "late, read twice");

  // 400 jobs (about 0.66 MB): chunks of 256 KiB, the kernels of the first
  // (step 5's among them) placed before the step's span is read.
  const LabelledRun big = labelled_run(400);
  std::vector<std::string> moved;
  for (const auto& h : big.host) moved.insert(moved.end(), h.begin(), h.end());
  const auto it = std::find_if(moved.begin(), moved.end(), [&](const std::string& e) {
    return e.find("ProfilerStep#5\"") != std::string::npos;
  });
  ASSERT_NE(it, moved.end());
  const std::string span_event = *it;
  moved.erase(it);
  for (const auto& d : big.device) moved.insert(moved.end(), d.begin(), d.end());
  moved.push_back(span_event);
  const std::string path = dir.write("moved.pt.trace.json", trace(moved));
  ASSERT_GT(std::filesystem::file_size(path), std::size_t{2} << 18);
  expect_labelled_run(read_trace(path), 400, "a step span last, read twice");
}

TEST(TorchTraceReader, EveryHostsTracesInOneFolderAreOneMachinePerHost) {
  // Megatron's one --tensorboard-dir: torch.profiler names each file
  // <host>_<pid>.<stamp>.pt.trace.json. Hosts may hold '_'; node_10 comes
  // after node_2 (numbers compared as numbers). A second file of one process
  // is that rank's next profiling window, with or without a rank of its own.
  TempDir dir;
  dir.write("tb/node_10_77.1700000000001.pt.trace.json", trace({}, "", 2));
  dir.write("tb/node_10_78.1700000000001.pt.trace.json", trace({}, "", 3));
  dir.write("tb/node_2_51.1700000000000.pt.trace.json", trace({}, "", 0));
  dir.write("tb/node_2_52.1700000000000.pt.trace.json", trace({}, "", 1));
  dir.write("tb/node_2_52.1700000009999.pt.trace.json",
            "{\"traceEvents\": []}\n");  // its second window, no distributedInfo
  const auto inputs = discover_inputs({dir / "tb"});
  ASSERT_EQ(inputs.size(), 5u);
  EXPECT_EQ(inputs[0].machine_name, "node_2");
  EXPECT_EQ(inputs[0].machine, 0);
  EXPECT_EQ(inputs[1].rank, 1);
  EXPECT_EQ(inputs[2].rank, 1);  // the window: rank 1 again, one device
  EXPECT_EQ(inputs[2].device, inputs[1].device);
  EXPECT_EQ(inputs[3].machine_name, "node_10");
  EXPECT_EQ(inputs[3].machine, 1);
  EXPECT_EQ(inputs[3].rank, 0);  // global rank 2, the machine's lowest
  EXPECT_EQ(inputs[4].device, 3);
  // One host's traces in a folder stay the folder's machine.
  TempDir one;
  one.write("run/gpu7_1.1.pt.trace.json", trace({}, "", 0));
  one.write("run/gpu7_2.1.pt.trace.json", trace({}, "", 1));
  const auto single = discover_inputs({one / "run"});
  ASSERT_EQ(single.size(), 2u);
  EXPECT_EQ(single[0].machine_name, "");
  EXPECT_EQ(single[1].machine, 0);
}

TEST(TorchTraceReader, RealKinetoTraces) {
  const std::string base = std::string(PIPESCOPE_TESTDATA) + "/kineto/";
  struct Case {
    const char* file;
    std::uint64_t events;
  };
  for (const Case c : {Case{"rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 68692},
                       Case{"benchmark_result_2869224_1695835535_trace.json.gz", 1408},
                       Case{"mi250_minitoy_train_ROCm6_2_kineto.json.gz", 220}}) {
    const FileResult r = read_trace(base + c.file);
    EXPECT_EQ(r.stats.error, "") << c.file;
    EXPECT_EQ(r.stats.lines, c.events) << c.file;
    EXPECT_EQ(r.stats.malformed, 0u) << c.file;
    EXPECT_EQ(r.device.jobs.size(), 0u) << c.file;  // none is pipeline-parallel
  }
  // The ResNet trace's `## forward ##` / `## backward ##` annotations: the
  // backward's GPU span (28 us) misses its kernels, the forward has none.
  IngestOptions options;
  options.job_pattern = std::make_shared<const JobPattern>("## (?P<op>forward|backward) ##", "");
  const FileResult r = read_trace(base + "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", options);
  ASSERT_EQ(r.device.jobs.size(), 10u);
  EXPECT_EQ(r.first_step, 101);
  for (const Job& j : r.device.jobs) {
    EXPECT_GT(j.duration_ns(), r.types.name(j.type) == "backward" ? 50'000'000 : 20'000'000);
  }
}

}  // namespace
}  // namespace pipescope

// Both line readers (sequential LineChunker, parallel RangeFile) over the same
// files with many chunk sizes: every line must come out exactly once, at its
// offset, either as text or as a skipped over-long line; a line within the
// limit is never skipped.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ingest/ingest.h"
#include "source/line_chunker.h"
#include "source/range_reader.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

struct Line {
  std::uint64_t offset;
  std::uint64_t length;  // without '\n'
  bool skipped;
  bool operator==(const Line&) const = default;
};

/// Random lines of 0..max_length bytes (some far over the limit); the last
/// line has no newline when `unterminated`.
std::string random_text(std::uint32_t seed, int lines, std::size_t max_length, bool unterminated) {
  std::mt19937 rng(seed);
  std::string text;
  for (int i = 0; i < lines; ++i) {
    std::size_t length = rng() % 100 == 0 ? rng() % max_length : rng() % 120;
    for (std::size_t j = 0; j < length; ++j) text += static_cast<char>('a' + j % 26);
    if (i + 1 < lines || !unterminated) text += '\n';
  }
  return text;
}

void add_text(std::string_view text, std::uint64_t offset, std::vector<Line>& out) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    out.push_back({offset + pos, end - pos, false});
    pos = end + 1;
  }
}

void add_chunk(const LineChunk& chunk, std::vector<Line>& out) {
  for (const SkippedLine& s : chunk.skipped_before) out.push_back({s.offset, s.length, true});
  add_text(chunk.text, chunk.file_offset, out);
  if (chunk.skipped_after) out.push_back({chunk.skipped_after->offset, chunk.skipped_after->length, true});
}

void check_lines(const std::string& text, const std::vector<Line>& got, std::size_t max_line,
                 const std::string& what) {
  std::vector<Line> expected;
  add_text(text, 0, expected);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].offset, expected[i].offset) << what << " line " << i;
    EXPECT_EQ(got[i].length, expected[i].length) << what << " line " << i;
    if (expected[i].length <= max_line) {
      EXPECT_FALSE(got[i].skipped) << what << " line " << i;
    }
  }
}

TEST(LineReaders, EveryLineExactlyOnceWhateverTheChunkSize) {
  TempDir dir;
  for (const bool unterminated : {false, true}) {
    const std::string text = random_text(unterminated ? 7 : 8, 3000, 5000, unterminated);
    const std::string path = dir.write("log", text);
    for (const std::size_t chunk_bytes : {1ul, 3ul, 100ul, 1000ul, 4096ul, 10000ul, 1ul << 20}) {
      ReadLimits limits;
      limits.chunk_bytes = chunk_bytes;
      limits.max_line_bytes = 1024;
      ChunkBuffer buffer(limits);
      LineChunk chunk;

      std::vector<Line> sequential;
      LineChunker chunker(path, limits);
      while (chunker.next(buffer, chunk)) add_chunk(chunk, sequential);
      check_lines(text, sequential, limits.max_line_bytes,
                  "sequential, chunk " + std::to_string(chunk_bytes));

      std::vector<Line> ranges;
      const RangeFile file(path);
      for (std::uint64_t begin = 0; begin < file.size(); begin += chunk_bytes) {
        file.read_lines(begin, begin + chunk_bytes, limits, buffer, chunk);
        add_chunk(chunk, ranges);
      }
      check_lines(text, ranges, limits.max_line_bytes, "ranges, chunk " + std::to_string(chunk_bytes));
    }
  }
}

TEST(LineReaders, APipeIsReadInOrderWithTheSameResult) {
  TempDir dir;
  std::string log;
  for (int i = 0; i < 2000; ++i) {
    log += "noise line " + std::to_string(i) + "\n";
    log += "Profiler Info: Job (" + std::to_string(i) + "), type = forward, micro_batch_id = " +
           std::to_string(i % 4) + ", job_start_time = " + std::to_string(1000 + i) +
           ".5, job_end_time = " + std::to_string(1001 + i) + ".25\n";
  }
  const std::string regular = dir.write("workerlog.0", log);
  const std::string fifo = dir / "workerlog.1";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { TempDir::write_to(fifo, log); });

  InputFile a, b;
  a.path = regular;
  b.path = fifo;
  b.device = b.rank = 1;
  IngestOptions options;
  options.limits.chunk_bytes = 4096;
  const auto run = ingest_inputs({a, b}, options);
  writer.join();
  ASSERT_EQ(run.devices[0].jobs.size(), 2000u);
  ASSERT_EQ(run.devices[1].jobs.size(), 2000u);
  for (std::size_t i = 0; i < 2000; ++i) {
    EXPECT_EQ(run.devices[0].jobs[i].start_ns, run.devices[1].jobs[i].start_ns);
    EXPECT_EQ(run.devices[0].jobs[i].line, run.devices[1].jobs[i].line);
  }
  EXPECT_EQ(run.inputs[0].lines, run.inputs[1].lines);
  EXPECT_EQ(run.inputs[0].bytes, run.inputs[1].bytes);
}

}  // namespace
}  // namespace pipescope

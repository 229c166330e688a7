// The parallel pipeline at its edges: many files (plain, gzip and zstd), many
// threads, tiny chunks and line limits so that lines straddle every range and
// chunk boundary. The result must equal a one-thread, one-big-chunk scan.
// Small enough for the ThreadSanitizer build (dev.sh sanitize tsan).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "ingest/ingest.h"
#include "support/compress_util.h"
#include "ingest/discovery.h"
#include "support/temp_dir.h"
#include "support/wild_util.h"

namespace pipescope {
namespace {

using testing::TempDir;

using Jobs = std::vector<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::uint32_t>>;

Jobs jobs_of(const Run& run) {
  Jobs jobs;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    for (const Job& j : run.devices[d].jobs) {
      jobs.emplace_back(static_cast<int>(d), j.start_ns, j.end_ns, j.job_id, j.line);
    }
  }
  return jobs;
}

TEST(WildParallel, ManyFilesManyThreadsTinyChunksEqualOneThread) {
  TempDir dir;
  for (int r = 0; r < 48; ++r) {
    std::string log = testing::wild_log(40 + r * 3, 1000 + r);
    // An over-long line in some files, a missing final newline in others.
    // (The over-long line holds the job literal: the chunk scanner measures
    // candidate lines only, the readers measure lines at chunk edges.)
    if (r % 5 == 0) {
      log += "Profiler Info: Job " + std::string(700, 'x') + "\n" +
             testing::wild_job_line(9, 1, 5000, 5001);
    }
    if (r % 7 == 0) log.pop_back();
    const std::string name = "logs/workerlog." + std::to_string(r);
    if (r % 6 == 1) {
      dir.write(name + ".gz", testing::gzip(log));
    } else if (r % 6 == 2) {
      dir.write(name + ".zst", testing::zstd(log));
    } else {
      dir.write(name, log);
    }
  }
  const auto inputs = discover_inputs({dir / "logs"});
  ASSERT_EQ(inputs.size(), 48u);

  IngestOptions reference;
  reference.threads = 1;
  reference.limits.chunk_bytes = std::size_t{8} << 20;
  reference.limits.max_line_bytes = 512;
  const pipescope::Run expected = ingest_inputs(inputs, reference);
  ASSERT_GT(expected.job_count(), 3000u);

  for (const std::size_t chunk : {std::size_t{64}, std::size_t{997}, std::size_t{4096}}) {
    IngestOptions options = reference;
    options.threads = 8;
    options.limits.chunk_bytes = chunk;
    const pipescope::Run run = ingest_inputs(inputs, options);
    EXPECT_EQ(jobs_of(run), jobs_of(expected)) << "chunk " << chunk;
    std::uint64_t oversized = 0, expected_oversized = 0;
    for (const auto& s : run.inputs) oversized += s.oversized;
    for (const auto& s : expected.inputs) expected_oversized += s.oversized;
    EXPECT_EQ(oversized, expected_oversized) << "chunk " << chunk;
    EXPECT_EQ(expected_oversized, 10u);
  }
}

}  // namespace
}  // namespace pipescope

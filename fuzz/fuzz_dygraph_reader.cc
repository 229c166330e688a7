// Fuzzes the Paddle dygraph record reader (ingest/dygraph_reader.h): any bytes,
// as one rank's file (first byte even) or as the concatenation
// pipeline_profile.json (odd), must be read without a crash, every job
// ending no earlier than it starts, and every byte accounted for. Seeded with
// simulated records and their concatenation.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ingest/discovery.h"
#include "ingest/dygraph_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  pipescope::InputFile input;
  input.path = (data[0] & 1) ? "/fuzz/pipeline_profile.json"
                             : "/fuzz/profile_record_tmp_file_for_rank_0";
  input.format = pipescope::InputFormat::paddle_dygraph;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const pipescope::DygraphFile file = pipescope::parse_dygraph_bytes(bytes, input, 5);
  std::uint64_t jobs = 0;
  for (const auto& rank : file.ranks) {
    for (const auto& job : rank.device.jobs) {
      if (job.end_ns < job.start_ns) std::abort();
      ++jobs;
    }
  }
  if (jobs != file.result.stats.matched || file.result.stats.bytes != bytes.size()) std::abort();
  return 0;
}

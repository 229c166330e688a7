// Helper of the kill -9 test (records/ivl_kill_test.cc): writes .ivl records in
// blocks of random sizes, forever, until it is killed.
//   ivl_kill_writer PATH SEED
// Record k has start_ns = k * 1000, end_ns = start + 7, micro_batch = k, so
// the test can check that what it recovers is exactly records 0..n-1.
// Prints "ready" on stdout once the header is on disk.
#include <cstdio>
#include <cstdlib>
#include <random>

#include "records/ivl_writer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ivl_kill_writer PATH SEED\n");
    return 2;
  }
  using namespace pipescope::ivl;
  FileInfo info;
  info.producer = "ivl_kill_writer";
  info.types = {"forward", "backward"};
  WriterOptions options;
  options.records_per_block = kMaxRecordsPerBlock;
  Writer writer(argv[1], info, options);
  std::printf("ready\n");
  std::fflush(stdout);
  std::mt19937_64 random(std::strtoull(argv[2], nullptr, 10));
  std::int64_t k = 0;
  for (;;) {
    // Mostly the largest blocks (2 MiB: a write(2) that a kill can cut
    // between pages, leaving a torn tail), sometimes small ones.
    const std::int64_t n = random() % 4 != 0 ? kMaxRecordsPerBlock : 1 + random() % 300;
    for (std::int64_t i = 0; i < n; ++i, ++k) {
      writer.append({k * 1000, k * 1000 + 7, static_cast<std::uint32_t>(k % 2),
                     static_cast<std::int32_t>(k), 0, 0});
    }
    writer.flush();
  }
}

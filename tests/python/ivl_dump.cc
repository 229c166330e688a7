// Prints an .ivl file's records, one per line: "step type micro_batch stream
// start_ns end_ns" (the Python module's tests read the files with it, not
// with the module they test). Exit 1 when the file has problems.
#include <cstdio>
#include <string>

#include "records/ivl_reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ivl_dump FILE.ivl\n");
    return 2;
  }
  pipescope::ivl::ReadCallbacks cb;
  cb.on_records = [](const pipescope::ivl::RecordBlock& block) {
    for (std::uint32_t i = 0; i < block.count; ++i) {
      const pipescope::ivl::Record r = block.record(i);
      std::printf("%d %s %d %u %lld %lld\n", r.step, (*block.types)[r.type].c_str(), r.micro_batch,
                  r.stream, static_cast<long long>(r.start_ns), static_cast<long long>(r.end_ns));
    }
  };
  const pipescope::ivl::ReadResult result = pipescope::ivl::read_file(argv[1], cb);
  if (!result.header_ok || result.problems != 0) {
    std::fprintf(stderr, "ivl_dump: %s: header_ok=%d problems=%llu\n", argv[1], result.header_ok,
                 static_cast<unsigned long long>(result.problems));
    return 1;
  }
  return 0;
}

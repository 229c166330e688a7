// Fuzzes the .ivl record reader (records/ivl_reader.h) and the importer that
// turns records into jobs (ingest/ivl_import.h). Seeded with valid files.
// Checksums would stop almost every mutation at the first CRC, so when the
// input's first byte is odd the target first recomputes the header checksum
// and the checksum of every plausible block, letting mutations reach the
// field checks behind them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz_input.h"
#include "records/crc32c.h"
#include "records/ivl_format.h"
#include "records/ivl_reader.h"
#include "ingest/ivl_import.h"
#include "ingest/discovery.h"

namespace {

namespace ivl = pipescope::ivl;

void fix_checksums(std::vector<unsigned char>& file) {
  if (file.size() < ivl::kFixedHeaderBytes) return;
  const auto header_bytes = ivl::load_le<std::uint32_t>(&file[ivl::header::kHeaderBytes]);
  std::size_t pos = ivl::kFixedHeaderBytes;
  if (header_bytes >= ivl::kFixedHeaderBytes && header_bytes <= file.size()) {
    ivl::store_le(&file[ivl::header::kHeaderCrc], std::uint32_t{0});
    ivl::store_le(&file[ivl::header::kHeaderCrc], ivl::crc32c(file.data(), header_bytes));
    pos = header_bytes;
  }
  while (pos + ivl::kBlockHeaderBytes <= file.size()) {
    unsigned char* h = &file[pos];
    const auto payload = ivl::load_le<std::uint32_t>(h + ivl::block::kPayloadBytes);
    if (std::memcmp(h, ivl::kBlockMagic, sizeof(ivl::kBlockMagic)) != 0 ||
        payload > file.size() - pos - ivl::kBlockHeaderBytes) {
      ++pos;
      continue;
    }
    std::uint32_t crc = ivl::crc32c(h, ivl::block::kCrc);
    crc = ivl::crc32c_extend(crc, h + ivl::kBlockHeaderBytes, payload);
    ivl::store_le(h + ivl::block::kCrc, crc);
    pos += ivl::kBlockHeaderBytes + payload;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<unsigned char> file(data + 1, data + size);
  if (data[0] & 1) fix_checksums(file);
  static pipescope::fuzz::ScratchFile scratch(".ivl");
  const std::string& path = scratch.write(file.data(), file.size());

  ivl::ReadCallbacks callbacks;
  std::uint64_t records = 0;
  callbacks.on_records = [&](const ivl::RecordBlock& block) {
    for (std::uint32_t i = 0; i < block.count; ++i) {
      const ivl::Record r = block.record(i);
      // Touch the type name the record points at, as the importer does.
      if (r.type < block.types->size() && (*block.types)[r.type].empty()) std::abort();
      ++records;
    }
  };
  callbacks.on_problem = [&](const ivl::Problem& problem) {
    if (problem.message.empty()) std::abort();
    if (problem.offset > file.size()) std::abort();
  };
  const ivl::ReadResult result = ivl::read_file(path, callbacks);
  if (result.records != records) std::abort();
  if (result.header_ok && result.bytes != file.size()) std::abort();

  std::string error;
  (void)ivl::read_header(path, error);

  pipescope::InputFile input;
  input.path = path;
  input.format = pipescope::InputFormat::ivl;
  input.size_bytes = file.size();
  (void)pipescope::import_ivl_file(input);
  return 0;
}

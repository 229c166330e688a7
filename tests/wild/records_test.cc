// .ivl record files in the wild: from a newer pipescope, from a big-endian
// writer, with a string table that points outside itself, with absurd counts.
// Each is refused or skipped with a specific message (end to end through
// `analyze`, beside a good log that is still analysed); nothing a header
// merely claims is allocated. The reader's own unit tests are in
// records/ivl_format_test.cc (IvlCorruption.*).
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/command_runner.h"
#include "records/crc32c.h"
#include "records/ivl_format.h"
#include "records/ivl_reader.h"
#include "records/ivl_writer.h"
#include "support/temp_dir.h"
#include "support/wild_util.h"

namespace pipescope {
namespace {

using testing::run_cli;
using testing::shell_quote;
using testing::TempDir;
using Bytes = std::vector<unsigned char>;

Bytes header_for(std::vector<std::string> types, int rank = 1) {
  ivl::FileInfo info;
  info.rank = rank;
  info.types = std::move(types);
  return ivl::encode_header(info);
}

void reseal_header(Bytes& file) {
  const auto size = ivl::load_le<std::uint32_t>(&file[ivl::header::kHeaderBytes]);
  ivl::store_le(&file[ivl::header::kHeaderCrc], std::uint32_t{0});
  ivl::store_le(&file[ivl::header::kHeaderCrc], ivl::crc32c(file.data(), size));
}

/// Appends a block with a correct checksum over whatever it claims.
void add_block(Bytes& file, ivl::BlockKind kind, std::uint32_t count, const Bytes& payload,
               std::uint32_t claimed_payload_bytes) {
  Bytes h(ivl::kBlockHeaderBytes, 0);
  std::memcpy(h.data(), ivl::kBlockMagic, sizeof(ivl::kBlockMagic));
  ivl::store_le(&h[ivl::block::kKind], static_cast<std::uint16_t>(kind));
  ivl::store_le(&h[ivl::block::kCount], count);
  ivl::store_le(&h[ivl::block::kPayloadBytes], claimed_payload_bytes);
  std::uint32_t crc = ivl::crc32c(h.data(), ivl::block::kCrc);
  crc = ivl::crc32c_extend(crc, payload.data(), payload.size());
  ivl::store_le(&h[ivl::block::kCrc], crc);
  file.insert(file.end(), h.begin(), h.end());
  file.insert(file.end(), payload.begin(), payload.end());
}

Bytes record_payload(std::uint32_t type, int n) {
  Bytes payload(ivl::kRecordBytes * n, 0);
  for (int i = 0; i < n; ++i) {
    unsigned char* p = &payload[ivl::kRecordBytes * i];
    ivl::store_le(p, std::int64_t{1'000'000'000} + i * 10'000'000);
    ivl::store_le(p + 8, std::int64_t{1'005'000'000} + i * 10'000'000);
    ivl::store_le(p + 16, type);
  }
  return payload;
}

/// Writes `file` as rank 1 next to a good workerlog.0 and runs analyze.
testing::CommandResult analyze_beside_a_log(const TempDir& dir, const Bytes& file) {
  dir.write("run/workerlog.0", testing::wild_log(6));
  dir.write("run/rank1.ivl", std::string(file.begin(), file.end()));
  return run_cli("analyze " + shell_quote(dir / "run") + " --no-trace -o " + shell_quote(dir / "out"));
}

TEST(WildRecords, FileFromTheFutureIsRefusedByName) {
  TempDir dir;
  Bytes file = header_for({"forward"});
  ivl::store_le(&file[ivl::header::kMajor], std::uint16_t{7});
  reseal_header(file);
  const auto result = analyze_beside_a_log(dir, file);
  EXPECT_EQ(result.status, 0) << result.output;  // the log is still analysed
  EXPECT_NE(result.output.find(".ivl format version 7.0 is newer than this reader"),
            std::string::npos)
      << result.output;
}

TEST(WildRecords, FileOfTheOtherByteOrderIsNamed) {
  TempDir dir;
  Bytes file = header_for({"forward"});
  ivl::store_le(&file[ivl::header::kByteOrder], std::uint32_t{0x04030201});
  reseal_header(file);
  const auto result = analyze_beside_a_log(dir, file);
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("big-endian .ivl file"), std::string::npos) << result.output;
}

TEST(WildRecords, StringTablePointingOutsideItself) {
  TempDir dir;
  // A type name whose length runs past the end of its table.
  Bytes file = header_for({"forward", "backward"});
  std::size_t pos = ivl::kFixedHeaderBytes;
  for (;;) {
    const auto tag = ivl::load_le<std::uint16_t>(&file[pos]);
    const auto length = ivl::load_le<std::uint32_t>(&file[pos + 4]);
    if (tag == static_cast<std::uint16_t>(ivl::Extension::types)) break;
    pos += 8 + (length + 7) / 8 * 8;
  }
  ivl::store_le(&file[pos + 8 + 4], std::uint16_t{1000});  // first name's length
  reseal_header(file);
  auto result = analyze_beside_a_log(dir, file);
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("type name 0 has a bad length (1000)"), std::string::npos)
      << result.output;

  // Records whose type ids point past the table: skipped one by one, counted.
  Bytes good = header_for({"forward"});
  add_block(good, ivl::BlockKind::records, 2, record_payload(5, 2), 2 * ivl::kRecordBytes);
  add_block(good, ivl::BlockKind::records, 3, record_payload(0, 3), 3 * ivl::kRecordBytes);
  result = analyze_beside_a_log(dir, good);
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("has undefined job type id 5; skipped"), std::string::npos)
      << result.output;
  const std::string summary = testing::read_file(dir / "out/summary.json");
  EXPECT_NE(summary.find("\"malformed\": 2"), std::string::npos) << summary;
}

TEST(WildRecords, AbsurdCountsAreNeverAllocated) {
  TempDir dir;
  Bytes file = header_for({"forward"});
  // A record block claiming 4 G records, a type block claiming 2^31 names in
  // 8 bytes, and a block claiming 4 GiB of payload: each rejected by its
  // bounds, then a good block that is still read.
  add_block(file, ivl::BlockKind::records, 0xffffffffu, record_payload(0, 1), ivl::kRecordBytes);
  add_block(file, ivl::BlockKind::types, 1u << 31, Bytes(8, 'x'), 8);
  add_block(file, ivl::BlockKind::records, 1, record_payload(0, 1), 0xffffffe0u);
  add_block(file, ivl::BlockKind::records, 4, record_payload(0, 4), 4 * ivl::kRecordBytes);
  const std::string path = dir.write("c.ivl", std::string(file.begin(), file.end()));
  std::vector<std::string> problems;
  std::uint64_t records = 0;
  ivl::ReadCallbacks cb;
  cb.on_records = [&](const ivl::RecordBlock& block) { records += block.count; };
  cb.on_problem = [&](const ivl::Problem& p) { problems.push_back(p.message); };
  const ivl::ReadResult result = ivl::read_file(path, cb);
  EXPECT_TRUE(result.header_ok);
  EXPECT_EQ(records, 4u);
  EXPECT_GE(problems.size(), 2u);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("bad type block: too many types"), std::string::npos) << all;
  EXPECT_NE(all.find("block header has impossible fields"), std::string::npos) << all;
  struct rusage usage {};
  ASSERT_EQ(::getrusage(RUSAGE_SELF, &usage), 0);
  EXPECT_LT(usage.ru_maxrss, 1024L * 1024) << "KiB: something claimed was allocated";
}

}  // namespace
}  // namespace pipescope

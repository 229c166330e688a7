// The .ivl format: round trips, the checksum, and every corruption case the
// reader must survive (records/ivl_reader.h).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "records/crc32c.h"
#include "records/ivl_reader.h"
#include "records/ivl_writer.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

ivl::Record make_record(int i, std::uint32_t type) {
  ivl::Record r;
  r.start_ns = 1'700'000'000'000'000'000 + std::int64_t{i} * 1000;
  r.end_ns = r.start_ns + 500 + i;
  r.type = type;
  r.micro_batch = i % 8;
  r.step = i / 100;
  r.stream = static_cast<std::uint32_t>(i % 3);
  return r;
}

struct ReadBack {
  ivl::ReadResult result;
  std::vector<ivl::Record> records;
  std::vector<std::string> type_names;  // of each record
  std::vector<ivl::Problem> problems;
};

ReadBack read_back(const std::string& path) {
  ReadBack out;
  ivl::ReadCallbacks cb;
  cb.on_records = [&](const ivl::RecordBlock& block) {
    for (std::uint32_t i = 0; i < block.count; ++i) {
      const ivl::Record r = block.record(i);
      out.records.push_back(r);
      out.type_names.push_back(r.type < block.types->size() ? (*block.types)[r.type] : "?");
    }
  };
  cb.on_problem = [&](const ivl::Problem& p) { out.problems.push_back(p); };
  out.result = ivl::read_file(path, cb);
  return out;
}

bool same(const ivl::Record& a, const ivl::Record& b) {
  return a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.type == b.type &&
         a.micro_batch == b.micro_batch && a.step == b.step && a.stream == b.stream;
}

/// Writes `blocks` blocks of `per_block` records; returns the block offsets.
std::vector<std::uint64_t> write_blocks(const std::string& path, int blocks, int per_block) {
  ivl::FileInfo info;
  info.types = {"forward", "backward"};
  ivl::WriterOptions options;
  options.records_per_block = static_cast<std::uint32_t>(per_block);
  ivl::Writer writer(path, info, options);
  std::vector<std::uint64_t> offsets;
  for (int b = 0; b < blocks; ++b) {
    offsets.push_back(writer.bytes_written());
    for (int i = 0; i < per_block; ++i) writer.append(make_record(b * per_block + i, b % 2));
  }
  writer.close();
  return offsets;
}

TEST(Crc32c, KnownVectorsAndPortableAgree) {
  EXPECT_EQ(ivl::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(ivl::crc32c("", 0), 0u);
  std::string data(1000, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  for (std::size_t n : {0, 1, 7, 8, 9, 63, 64, 999, 1000}) {
    EXPECT_EQ(ivl::crc32c(data.data(), n), ivl::crc32c_extend_portable(0, data.data(), n)) << n;
  }
  // Extending in pieces equals one pass.
  const std::uint32_t a = ivl::crc32c_extend(ivl::crc32c(data.data(), 333), data.data() + 333, 667);
  EXPECT_EQ(a, ivl::crc32c(data.data(), 1000));
}

TEST(IvlFormat, RoundTripHeaderAndRecords) {
  TempDir dir;
  const std::string path = dir / "r.ivl";
  ivl::FileInfo info;
  info.machine = 3;
  info.rank = 7;
  info.machine_name = "machine3";
  info.producer = "test producer";
  info.anchor_realtime_ns = 1'700'000'000'123'456'789;
  info.anchor_steady_ns = 42;
  info.first_step = 5;
  info.types = {"forward", "backward"};
  std::vector<ivl::Record> written;
  {
    ivl::WriterOptions options;
    options.records_per_block = 100;
    ivl::Writer writer(path, info, options);
    EXPECT_EQ(writer.type_id("backward"), 1u);
    const std::uint32_t opt = writer.type_id("optimizer");  // added after the header
    EXPECT_EQ(opt, 2u);
    for (int i = 0; i < 250; ++i) {
      written.push_back(make_record(i, static_cast<std::uint32_t>(i % 3)));
      writer.append(written.back());
    }
    writer.flush();
    const std::uint32_t late = writer.type_id("forward(chunk1)");
    written.push_back(make_record(250, late));
    writer.append(written.back());
    writer.close();
    EXPECT_EQ(writer.records_written(), 251u);
  }
  const ReadBack back = read_back(path);
  ASSERT_TRUE(back.result.header_ok);
  EXPECT_TRUE(back.problems.empty());
  const ivl::Header& h = back.result.header;
  EXPECT_EQ(h.major, ivl::kMajorVersion);
  EXPECT_EQ(h.machine, 3);
  EXPECT_EQ(h.rank, 7);
  EXPECT_EQ(h.machine_name, "machine3");
  EXPECT_EQ(h.producer, "test producer");
  EXPECT_EQ(h.anchor_realtime_ns, 1'700'000'000'123'456'789);
  EXPECT_EQ(h.anchor_steady_ns, 42);
  EXPECT_EQ(h.first_step, 5);
  EXPECT_EQ(h.types, (std::vector<std::string>{"forward", "backward"}));
  ASSERT_EQ(back.records.size(), written.size());
  for (std::size_t i = 0; i < written.size(); ++i)
    EXPECT_TRUE(same(back.records[i], written[i])) << i;
  EXPECT_EQ(back.type_names[2], "optimizer");
  EXPECT_EQ(back.type_names[250], "forward(chunk1)");
  EXPECT_EQ(back.result.records, 251u);
  EXPECT_FALSE(back.result.torn_offset);
  EXPECT_EQ(back.result.bytes, testing::read_file(path).size());
  // 251 records: 32 bytes each plus 4 record blocks and 2 type blocks.
  EXPECT_EQ(sizeof(ivl::Record), 32u);
}

TEST(IvlFormat, NoFirstStepWhenUnset) {
  TempDir dir;
  const std::string path = dir / "r.ivl";
  { ivl::Writer writer(path, {}); }
  const ReadBack back = read_back(path);
  ASSERT_TRUE(back.result.header_ok);
  EXPECT_FALSE(back.result.header.first_step);
  EXPECT_EQ(back.records.size(), 0u);
  EXPECT_TRUE(back.problems.empty());
}

TEST(IvlFormat, WriterRejectsBadNamesAndIds) {
  TempDir dir;
  ivl::Writer writer(dir / "r.ivl", {});
  EXPECT_THROW(writer.type_id(""), std::invalid_argument);
  EXPECT_THROW(writer.type_id(std::string(2000, 'x')), std::invalid_argument);
  EXPECT_THROW(writer.append(make_record(0, 0)), std::invalid_argument);  // no type 0 yet
  ivl::FileInfo bad;
  bad.types = {""};
  EXPECT_THROW(ivl::Writer(dir / "s.ivl", bad), std::invalid_argument);
  EXPECT_THROW(ivl::Writer(dir / "no/such/folder.ivl", {}), std::system_error);
}

TEST(IvlCorruption, ZeroLengthFile) {
  TempDir dir;
  const std::string path = dir.write("z.ivl", "");
  const ReadBack back = read_back(path);
  EXPECT_FALSE(back.result.header_ok);
  ASSERT_EQ(back.problems.size(), 1u);
  EXPECT_EQ(back.problems[0].kind, ivl::ProblemKind::header);
  EXPECT_EQ(back.problems[0].message, "file is empty");
}

TEST(IvlCorruption, WrongMagic) {
  TempDir dir;
  const std::string path = dir.write("w.ivl", std::string(200, 'x'));
  const ReadBack back = read_back(path);
  EXPECT_FALSE(back.result.header_ok);
  ASSERT_EQ(back.problems.size(), 1u);
  EXPECT_NE(back.problems[0].message.find("wrong magic"), std::string::npos);
  std::string error;
  EXPECT_FALSE(ivl::read_header(path, error));
  EXPECT_NE(error.find("wrong magic"), std::string::npos);
}

TEST(IvlCorruption, TruncatedHeader) {
  TempDir dir;
  const std::string full = dir / "full.ivl";
  write_blocks(full, 1, 4);
  const std::string bytes = testing::read_file(full);
  for (std::size_t cut : {3ul, 8ul, 40ul, 70ul}) {
    const std::string path = dir.write("cut.ivl", bytes.substr(0, cut));
    const ReadBack back = read_back(path);
    EXPECT_FALSE(back.result.header_ok) << cut;
    ASSERT_EQ(back.problems.size(), 1u) << cut;
    EXPECT_NE(back.problems[0].message.find("truncated header"), std::string::npos)
        << cut << ": " << back.problems[0].message;
  }
}

TEST(IvlCorruption, NewerMajorVersionIsRefusedClearly) {
  TempDir dir;
  const std::string path = dir / "v.ivl";
  write_blocks(path, 1, 4);
  std::string bytes = testing::read_file(path);
  bytes[ivl::header::kMajor] = 2;
  spit(path, bytes);
  const ReadBack back = read_back(path);
  EXPECT_FALSE(back.result.header_ok);
  ASSERT_EQ(back.problems.size(), 1u);
  EXPECT_EQ(
      back.problems[0].message,
      ".ivl format version 2.0 is newer than this reader (1.0); upgrade pipescope to read it");
  EXPECT_TRUE(back.records.empty());
}

TEST(IvlCorruption, FlippedHeaderByteFailsTheChecksum) {
  TempDir dir;
  const std::string path = dir / "h.ivl";
  write_blocks(path, 1, 4);
  std::string bytes = testing::read_file(path);
  bytes[ivl::header::kRank] ^= 0x10;
  spit(path, bytes);
  const ReadBack back = read_back(path);
  EXPECT_FALSE(back.result.header_ok);
  ASSERT_EQ(back.problems.size(), 1u);
  EXPECT_EQ(back.problems[0].message, "header checksum mismatch");
}

TEST(IvlCorruption, BigEndianFileIsNamed) {
  TempDir dir;
  const std::string path = dir / "b.ivl";
  write_blocks(path, 1, 4);
  std::string bytes = testing::read_file(path);
  const char swapped[4] = {1, 2, 3, 4};
  std::memcpy(&bytes[ivl::header::kByteOrder], swapped, 4);
  spit(path, bytes);
  const ReadBack back = read_back(path);
  ASSERT_EQ(back.problems.size(), 1u);
  EXPECT_NE(back.problems[0].message.find("big-endian"), std::string::npos);
}

TEST(IvlCorruption, UnknownHeaderExtensionIsSkipped) {
  TempDir dir;
  const std::string path = dir / "e.ivl";
  write_blocks(path, 2, 10);
  const std::string bytes = testing::read_file(path);
  ivl::FileInfo info;
  info.types = {"forward", "backward"};
  const std::vector<unsigned char> header = ivl::encode_header(info);
  ASSERT_EQ(bytes.compare(0, header.size(), std::string(header.begin(), header.end())), 0);
  // Insert an extension with tag 77 (12 bytes of payload, padded to 16)
  // before the others, as a newer minor version might, and re-checksum.
  std::string ext(8 + 16, '\0');
  ext[0] = 77;
  ext[4] = 12;
  std::string modified =
      bytes.substr(0, ivl::kFixedHeaderBytes) + ext + bytes.substr(ivl::kFixedHeaderBytes);
  ivl::store_le(&modified[ivl::header::kMinor], std::uint16_t{3});
  ivl::store_le(&modified[ivl::header::kHeaderBytes],
                static_cast<std::uint32_t>(header.size() + ext.size()));
  ivl::store_le(&modified[ivl::header::kHeaderCrc], std::uint32_t{0});
  ivl::store_le(&modified[ivl::header::kHeaderCrc],
                ivl::crc32c(modified.data(), header.size() + ext.size()));
  spit(path, modified);
  const ReadBack back = read_back(path);
  ASSERT_TRUE(back.result.header_ok) << (back.problems.empty() ? "" : back.problems[0].message);
  EXPECT_EQ(back.result.header.minor, 3);
  EXPECT_EQ(back.result.header.types, info.types);
  EXPECT_EQ(back.records.size(), 20u);
  EXPECT_TRUE(back.problems.empty());
}

TEST(IvlCorruption, HeaderClaimsAreBounded) {
  TempDir dir;
  const std::string path = dir / "c.ivl";
  ivl::FileInfo info;
  info.types = {"forward"};
  std::vector<unsigned char> header = ivl::encode_header(info);
  // The type table's count field claims 2^31 names.
  std::size_t pos = ivl::kFixedHeaderBytes;
  for (;;) {
    const auto tag = ivl::load_le<std::uint16_t>(&header[pos]);
    const auto length = ivl::load_le<std::uint32_t>(&header[pos + 4]);
    if (tag == static_cast<std::uint16_t>(ivl::Extension::types)) break;
    pos += 8 + (length + 7) / 8 * 8;
  }
  ivl::store_le(&header[pos + 8], std::uint32_t{1u << 31});
  ivl::store_le(&header[ivl::header::kHeaderCrc], std::uint32_t{0});
  ivl::store_le(&header[ivl::header::kHeaderCrc], ivl::crc32c(header.data(), header.size()));
  spit(path, std::string(header.begin(), header.end()));
  const ReadBack back = read_back(path);
  EXPECT_FALSE(back.result.header_ok);
  ASSERT_EQ(back.problems.size(), 1u);
  EXPECT_NE(back.problems[0].message.find("type table claims"), std::string::npos);
}

TEST(IvlCorruption, TornLastBlockAtEveryCut) {
  TempDir dir;
  const std::string full = dir / "full.ivl";
  const auto offsets = write_blocks(full, 3, 5);
  const std::string bytes = testing::read_file(full);
  const std::uint64_t last = offsets[2];
  for (std::uint64_t cut = last + 1; cut < bytes.size(); ++cut) {
    const std::string path = dir.write("torn.ivl", bytes.substr(0, cut));
    const ReadBack back = read_back(path);
    ASSERT_TRUE(back.result.header_ok);
    ASSERT_EQ(back.records.size(), 10u) << cut;  // both complete blocks
    ASSERT_TRUE(back.result.torn_offset) << cut;
    EXPECT_EQ(*back.result.torn_offset, last) << cut;
    ASSERT_EQ(back.problems.size(), 1u) << cut;
    EXPECT_EQ(back.problems[0].kind, ivl::ProblemKind::torn_tail);
    EXPECT_EQ(back.problems[0].offset, last);
    EXPECT_EQ(back.problems[0].bytes, cut - last);
    EXPECT_EQ(back.result.corrupt_blocks, 0u);
  }
  // Cut exactly at a block boundary: clean.
  const ReadBack exact = read_back(dir.write("exact.ivl", bytes.substr(0, last)));
  EXPECT_EQ(exact.records.size(), 10u);
  EXPECT_TRUE(exact.problems.empty());
}

TEST(IvlCorruption, FlippedByteInTheMiddleBlockSkipsOnlyThatBlock) {
  TempDir dir;
  const std::string full = dir / "full.ivl";
  const auto offsets = write_blocks(full, 3, 5);
  const std::string bytes = testing::read_file(full);
  const std::uint64_t middle = offsets[1];
  const std::uint64_t middle_size = offsets[2] - offsets[1];
  // Every byte of the middle block, header included (magic, kind, count,
  // size, sequence, checksum) and payload.
  for (std::uint64_t at = middle; at < middle + middle_size; ++at) {
    std::string corrupt = bytes;
    corrupt[at] ^= 0x20;
    const ReadBack back = read_back(dir.write("flip.ivl", corrupt));
    ASSERT_TRUE(back.result.header_ok);
    ASSERT_EQ(back.records.size(), 10u) << "flip at " << at;
    EXPECT_EQ(back.records[5].start_ns, make_record(10, 0).start_ns) << at;  // block 3 read
    ASSERT_EQ(back.problems.size(), 1u) << at;
    EXPECT_EQ(back.problems[0].offset, middle) << at;
    EXPECT_EQ(back.problems[0].bytes, middle_size) << at;
    EXPECT_FALSE(back.result.torn_offset) << at;
  }
}

TEST(IvlCorruption, CorruptSizeFieldOfTheLastBlockIsNotLost) {
  TempDir dir;
  const std::string full = dir / "full.ivl";
  const auto offsets = write_blocks(full, 3, 5);
  std::string bytes = testing::read_file(full);
  // The last block claims more bytes than the file has: nothing follows, so
  // it reads as a torn tail; the earlier blocks are all there.
  bytes[offsets[2] + ivl::block::kCount] = 100;
  bytes[offsets[2] + ivl::block::kPayloadBytes + 1] = 100 * 32 / 256;
  bytes[offsets[2] + ivl::block::kPayloadBytes] = static_cast<char>((100 * 32) % 256);
  const ReadBack back = read_back(dir.write("size.ivl", bytes));
  EXPECT_EQ(back.records.size(), 10u);
  EXPECT_TRUE(back.result.torn_offset);
}

TEST(IvlCorruption, JunkBetweenBlocksIsSkipped) {
  TempDir dir;
  const std::string full = dir / "full.ivl";
  const auto offsets = write_blocks(full, 2, 5);
  const std::string bytes = testing::read_file(full);
  std::string junk = bytes.substr(0, offsets[1]) + std::string(37, 'j') + bytes.substr(offsets[1]);
  const ReadBack back = read_back(dir.write("junk.ivl", junk));
  EXPECT_EQ(back.records.size(), 10u);
  ASSERT_EQ(back.problems.size(), 1u);
  EXPECT_EQ(back.problems[0].kind, ivl::ProblemKind::junk);
  EXPECT_EQ(back.problems[0].offset, offsets[1]);
  EXPECT_EQ(back.problems[0].bytes, 37u);
}

TEST(IvlCorruption, MissingFileIsAnIoProblem) {
  TempDir dir;
  const ReadBack back = read_back(dir / "missing.ivl");
  EXPECT_FALSE(back.result.header_ok);
  ASSERT_EQ(back.problems.size(), 1u);
  EXPECT_EQ(back.problems[0].kind, ivl::ProblemKind::io);
  EXPECT_NE(back.problems[0].message.find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace pipescope

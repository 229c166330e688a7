// Writes one .ivl file (records/ivl_format.h): the header at creation, then
// whole blocks. The one writer behind every producer: the executor-side timer
// (timer/job_timer.h) feeds it records resolved from GPU events, while
// `pipescope simulate --ivl` and `pipescope convert` feed it known times.
//
// Crash safety: records are buffered in memory and reach the file only as
// complete blocks, each in one write(2) sequence appended at the end, so a
// process killed at any moment leaves every earlier block intact and at most
// one torn block at the tail (which the reader reports and ignores).
// Records still buffered when the process dies are lost: call flush() at
// each step boundary (the timer does).
//
// Usage:
//   ivl::FileInfo info;  info.machine = 0;  info.rank = 3;  info.producer = "my-executor";
//   ivl::Writer writer("rank3.ivl", info);               // throws std::system_error
//   const std::uint32_t fwd = writer.type_id("forward");
//   writer.append({start_ns, end_ns, fwd, /*micro_batch=*/0, /*step=*/5, /*stream=*/0});
//   writer.flush();                                       // a step's records, one block
//   writer.close();                                       // or let the destructor flush
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "records/ivl_format.h"

namespace pipescope::ivl {

/// What the header says about the file's device and producer.
struct FileInfo {
  std::int32_t machine = 0;
  std::int32_t rank = 0;
  /// Machine name for reports (`machine3`); may be empty.
  std::string machine_name;
  /// Name of the writing program.
  std::string producer = "pipescope";
  /// The clock anchor: CLOCK_REALTIME and the producer's monotonic clock read
  /// together when the file was created (informational: records already hold
  /// wall-clock times).
  std::int64_t anchor_realtime_ns = 0;
  std::int64_t anchor_steady_ns = 0;
  /// The first profiled step (`Schedule Profiler start at step N` of a log).
  std::optional<std::int64_t> first_step;
  /// Job types known up front (ids 0..n-1); more can be added by type_id().
  std::vector<std::string> types;
};

struct WriterOptions {
  /// Records per block (at most kMaxRecordsPerBlock); append() writes a block
  /// when this many are buffered.
  std::uint32_t records_per_block = 4096;
  /// fsync(2) at close() (survives a power loss, not only a process crash).
  bool sync_on_close = false;
};

class Writer {
 public:
  /// Creates (or truncates) `path` and writes the header. Throws
  /// std::system_error naming the path for an I/O failure, and
  /// std::invalid_argument for a type name that is empty or longer than
  /// kMaxTypeNameBytes or strings that do not fit the header.
  Writer(const std::string& path, const FileInfo& info, const WriterOptions& options = {});
  /// Flushes and closes; errors are swallowed here (call close() to see them).
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// The id of a job type, adding it to the table when new (the name is
  /// written in a type block just before the next record block). Throws
  /// std::invalid_argument like the constructor.
  std::uint32_t type_id(std::string_view name);
  std::size_t type_count() const { return types_.size(); }

  /// Buffers one record (its type must be an id from type_id() or the
  /// header table: std::invalid_argument otherwise). Writes a block when
  /// records_per_block are buffered; throws std::system_error on I/O failure.
  void append(const Record& record);
  /// Writes the buffered records (and new type names) as whole blocks.
  void flush();
  /// flush(), optional fsync, close. Throws std::system_error on failure.
  void close();

  std::uint64_t records_written() const { return records_written_; }
  std::uint64_t blocks_written() const { return sequence_; }
  /// Bytes in the file so far (header and blocks written).
  std::uint64_t bytes_written() const { return bytes_written_; }
  const std::string& path() const { return path_; }

 private:
  void add_block(BlockKind kind, std::uint32_t count, const unsigned char* payload,
                 std::size_t payload_bytes);
  void write_all(const unsigned char* data, std::size_t size);

  std::string path_;
  WriterOptions options_;
  int fd_ = -1;
  std::vector<std::string> types_;
  std::unordered_map<std::string, std::uint32_t> type_ids_;
  std::size_t types_written_ = 0;  // names already in the header or a type block
  std::vector<Record> pending_;
  std::vector<unsigned char> out_;  // blocks assembled for one write
  std::uint32_t sequence_ = 0;
  std::uint64_t records_written_ = 0;
  std::uint64_t bytes_written_ = 0;
};

/// The header bytes a Writer writes for `info` (exposed for tests that craft
/// corrupt files). Throws std::invalid_argument like Writer.
std::vector<unsigned char> encode_header(const FileInfo& info);

}  // namespace pipescope::ivl

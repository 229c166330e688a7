// The reader of Paddle's dygraph pipeline profiler records (docs/formats.md,
// "Paddle dygraph pipeline records"). With
// `strategy.hybrid_configs["pp_configs"].profiling = True`, every rank of a
// hybrid-parallel pipeline appends to `profile_record_tmp_file_for_rank_<N>`
// one JSON object per line, a "B" and an "E" record per job:
//
//   {"name": "F3", "cat": "pipeline timeline", "ph": "B", "pid": 0, "tid": 2,
//    "ts": 1700000000123, "cname": "thread_state_running"}
//
// `F`/`B` and the micro-batch counter of the step, `_VP<k>` for chunk k of the
// interleaved pipeline; `tid` is the stage + 1; `ts` whole milliseconds.
// Paddle's helper concatenates every file into `pipeline_profile.json`
// (`[ ` record `,\n` record ... ` ]`): read too, cut back into ranks where the
// stage changes or the time goes back.
//
// Each line is parsed on its own with simdjson's On-Demand parser, in place
// in the reading loop's bounded chunks (reading_loop.h: plain, gzip or zstd;
// cut into lines by line_cutter.h), so no file becomes one document in memory and damage stays in
// the line it hit: every complete record before and after it is kept, and the bad line is reported
// with its byte offset.
//
// Jobs are B/E pairs of one rank and one name; a half without its partner,
// an E before its B, or a record that is not one of these is counted in
// InputStats::malformed and described in the diagnostics. Stored types:
// `forward`, `backward`, `forward(chunkK)`, `backward(chunkK)`.
//
// Records of several pipelines (data-parallel replicas: two ranks record the
// same stage) are never mixed: pipeline k is the k-th rank of each stage in
// rank order (for the concatenation: in file order); pipeline 0 (or
// PipelineChoice::pipeline) is analysed, its devices indexed by stage, and a
// note lists the others.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/pipeline_choice.h"
#include "ingest/read_options.h"
#include "ingest/reading_loop.h"
#include "source/chunk.h"

namespace pipescope {

/// The time resolution of the records: whole milliseconds, in ns.
inline constexpr std::int64_t kDygraphResolutionNs = 1'000'000;

/// True when `first_bytes` begin like a record line or the concatenation
/// (`{` or `[ {`, and "pipeline timeline" among them).
bool looks_like_dygraph_records(std::string_view first_bytes);

/// One rank's records as read: a per-rank file, or one run of the
/// concatenation. `result.device` holds its jobs (not yet placed).
struct DygraphRank {
  /// tid - 1; -1 when no record named it.
  int stage = -1;
  /// Global rank from the file name, or the run's position in the concatenation.
  int rank = 0;
  /// Byte offset of its first record.
  std::uint64_t offset = 0;
  /// Complete jobs read (kept when `device` moves on).
  std::uint64_t jobs_read = 0;
  Device device;
};

/// What one file holds: its ranks in file order, and its stats, types and
/// diagnostics (shared by its ranks). Never throws for content or I/O.
struct DygraphFile {
  std::vector<DygraphRank> ranks;
  FileResult result;  ///< stats, types, diagnostics; device unused
};

DygraphFile parse_dygraph_file(const InputFile& input, const ReadLimits& limits,
                               std::size_t max_diagnostics);

/// The same from bytes in memory (tests, the fuzz target): `name` decides
/// whether it is a concatenation (`pipeline_profile.json`) or one rank's file.
DygraphFile parse_dygraph_bytes(std::string_view bytes, const InputFile& input,
                                std::size_t max_diagnostics);

class DygraphRecordParser;

/// One rank's record file still being written (`pipescope watch`): whole
/// lines in as they are appended, the jobs they complete out, through the same
/// parser as parse_dygraph_file() (a B record waits for its E across calls;
/// line numbers and byte offsets go on). Not for the concatenation, which
/// Paddle's helper writes once the run is over.
class DygraphFollowReader {
 public:
  DygraphFollowReader(InputFile input, std::size_t max_diagnostics = 5);
  ~DygraphFollowReader();
  DygraphFollowReader(const DygraphFollowReader&) = delete;
  DygraphFollowReader& operator=(const DygraphFollowReader&) = delete;

  /// Whole lines (each ending in '\n'). Returns the jobs they completed in
  /// `device.jobs` (not placed), the file's types so far (ids as in every
  /// earlier call) and the problems found in them.
  FileResult lines(std::string_view text);
  /// tid - 1 of the file's records; -1 until one was read.
  int stage() const { return stage_; }

 private:
  InputFile input_;
  std::unique_ptr<DygraphRecordParser> parser_;
  std::uint64_t offset_ = 0;
  int stage_ = -1;
};

/// The format table's reading of a run's record files (the reading loop
/// reads them side by side), then the pipeline picked: one result per file,
/// in order (the concatenation's ranks in `device` and `more_devices`; a
/// file of another pipeline without a device). Its gather() throws
/// InputError when the pipeline asked for does not exist. The arguments
/// must outlive the reading.
std::unique_ptr<ChunkedFormat> dygraph_format(const std::vector<InputFile>& files,
                                              const ReadOptions& read,
                                              const PipelineChoice& choice);

}  // namespace pipescope

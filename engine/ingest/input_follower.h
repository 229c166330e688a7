// One input read while another process is still appending to it (`pipescope
// watch`), by its format's own reader: the second face of the reader a row
// of the format table (input_formats.h) names. As a chunked trace reader is
// fed, each look hands the reader what was appended since the last one, and
// the reader keeps back what is not whole yet (a line without its '\n', an
// .ivl block being written, a trace document not yet complete) until a later
// look completes it. A file that was truncated or replaced is read again from
// its start, and the look says so.
//
//   std::unique_ptr<InputFollower> follower =
//       input_format_spec(input.format).follow(input, options);
//   FollowedData got = follower->look();
//   if (got.kind == FollowedData::Kind::records) live.add_jobs(path, got.records, got.restarted);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/ingest_options.h"

namespace pipescope {

struct FollowOptions {
  /// Reader options: limits, diagnostics kept, trace job patterns.
  IngestOptions ingest;
  /// A look reads at most this much of a file (the rest waits for the next),
  /// so memory follows the open steps, not the backlog.
  std::uint64_t look_bytes = std::uint64_t{1} << 20;
};

/// What one look at a growing input found.
struct FollowedData {
  enum class Kind {
    nothing,  ///< nothing new, and the file did not restart
    lines,    ///< `lines`: whole text lines, for the job-line scanner (scan/)
    records,  ///< `records`: the jobs the format's reader made of the new data
  };
  Kind kind = Kind::nothing;
  /// Whole lines, each ending in '\n' (Kind::lines).
  std::string lines;
  /// The new jobs in file order (`device.jobs`, line numbers going on from
  /// the last look), the file's types so far (ids as in every earlier look),
  /// and its step starts (Kind::records).
  FileResult records;
  /// The file was truncated or replaced (or rewritten): the data begins its
  /// new content.
  bool restarted = false;
  /// The file has more to read at once (the look stopped at look_bytes).
  bool more = false;
  /// What a person should be told (damage, problems in the new data), each
  /// said once, in the order found.
  std::vector<std::string> notes;
};

/// Follows one input. Never throws from look().
class InputFollower {
 public:
  explicit InputFollower(InputFile input) : input_(std::move(input)) {}
  virtual ~InputFollower() = default;
  InputFollower(const InputFollower&) = delete;
  InputFollower& operator=(const InputFollower&) = delete;

  /// The input's place as discovery gives it now (a machine folder that
  /// appears moves devices); the path stays. A reader started again after a
  /// restart starts from it.
  void set_input(const InputFile& input) { input_ = input; }
  const InputFile& input() const { return input_; }

  /// Reads what is new since the last look.
  virtual FollowedData look() = 0;
  /// True when the records themselves say which device the file is (Paddle
  /// dygraph records name their stage; several pipelines are chosen among),
  /// not discovery.
  virtual bool places_itself() const { return false; }
  /// The stage the records named (places_itself()); -1 until one did.
  virtual int stage() const { return -1; }

 private:
  InputFile input_;
};

/// A row's follower: the format's reader fed one growing file.
using FollowerFactory = std::unique_ptr<InputFollower> (*)(const InputFile& input,
                                                           const FollowOptions& options);

/// The follower of a text format scanned line by line (Kind::lines): the
/// appended whole lines of the file (source/file_follower.h: plain, gzip or
/// zstd; a truncated or replaced file restarts). Corrupt compressed data
/// stops the file until it is truncated or replaced (said once).
std::unique_ptr<InputFollower> follow_text_lines(const InputFile& input,
                                                 const FollowOptions& options);

/// Parses the whole lines of one file of a line-record format, keeping what
/// a record needs across calls (a begin record waiting for its end; line
/// numbers and offsets going on).
class LineRecordParser {
 public:
  virtual ~LineRecordParser() = default;
  /// Whole lines (each ending in '\n') → the jobs they complete, the file's
  /// types so far and the problems found in them (FollowedData::records).
  virtual FileResult lines(std::string_view text) = 0;
  /// The stage the records named, for a format whose records place their
  /// file (InputFollower::places_itself); -1 otherwise.
  virtual int stage() const { return -1; }
};

/// The follower of a line-record format (Kind::records): the lines
/// follow_text_lines() reads, through a parser that `make_parser` makes
/// (again at each restart, for the input's place then). A parser's
/// diagnostics become notes `PATH line N: message`.
std::unique_ptr<InputFollower> follow_line_records(
    const InputFile& input, const FollowOptions& options,
    std::function<std::unique_ptr<LineRecordParser>(const InputFile&, std::size_t max_diagnostics)>
        make_parser,
    bool places_itself = false);

}  // namespace pipescope

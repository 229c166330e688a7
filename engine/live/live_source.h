// The inputs of a run still being written, each read the way its format
// allows, by the follower its row of the format table gives
// (ingest/input_formats.h, ingest/input_follower.h: the reader `analyze` uses
// for it, fed the appended data), and handed to a LiveRun (live_run.h). No
// format is named here; the built-in rows follow:
//   - text worker logs, plain or compressed (.gz, .zst): appended whole lines
//     (source/file_follower.h; a compressed file through a decoder that keeps
//     its state between looks);
//   - .ivl records: appended whole blocks (ingest/ivl_import.h), never a
//     block still being written;
//   - Paddle dygraph records, one file per rank: appended whole lines
//     (ingest/dygraph_reader.h; a B record waits for its E), each file placed
//     at its stage once a record names it (InputFollower::places_itself), as
//     analyze places them; of several pipelines (two ranks of one stage) the
//     one chosen (the K-th rank of the stage among the files that named it,
//     decided at the end of a look), the others left out;
//   - PyTorch profiler traces, one JSON document written when profiling
//     stops: each file once it is a complete document (it reads to its end
//     without damage) and stable (the same size and time over two looks).
// A truncated or replaced file is read again from its start, and the look
// says so (LiveRun notes it).
//
//   LiveSources sources(options);
//   sources.set_inputs(find_inputs(paths), live);
//   LiveSources::Look look = sources.look(live);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "live/live_run.h"

namespace pipescope {

struct LiveSourceOptions {
  /// Reader options: limits, the dygraph pipeline chosen, trace job patterns.
  IngestOptions ingest;
  /// Each look reads at most this much of a file (the rest waits for the
  /// next), so memory follows the open steps, not the backlog.
  std::uint64_t look_bytes = std::uint64_t{1} << 20;
  /// When set, a folder where the lines read of each text input are kept
  /// (one file per input, appended at each look), so that a run rotated
  /// under the watch (copytruncate) can be analysed whole at the end:
  /// read_copies(). Created when missing.
  std::string keep_read_dir;
};

class LiveSources {
 public:
  explicit LiveSources(LiveSourceOptions options = {});
  ~LiveSources();
  LiveSources(const LiveSources&) = delete;
  LiveSources& operator=(const LiveSources&) = delete;

  /// Follows the inputs found now; new paths are added (to `live` too).
  void set_inputs(const std::vector<InputFile>& inputs, LiveRun& live);

  struct Look {
    /// Something new was read (or a file restarted).
    bool got_any = false;
    /// Some input has more to read at once (a look reads at most look_bytes).
    bool more = false;
  };
  /// Reads what every input has new and hands it to `live`.
  Look look(LiveRun& live);

  /// What a person should be told (a corrupt compressed file, a trace that
  /// cannot be read, records of another pipeline), once each; cleared.
  std::vector<std::string> take_notes();

  /// The text inputs that were truncated or replaced while followed, each
  /// with the file (under keep_read_dir) holding every line read of it, in
  /// the order read: what the run wrote there, the rotated part included.
  std::map<std::string, std::string> read_copies() const;

 private:
  struct Source;
  void look_at(Source& source, LiveRun& live, Look& look);
  void place_by_stage(LiveRun& live);
  void keep_copy(Source& source, std::string_view lines);

  LiveSourceOptions options_;
  std::map<std::string, std::unique_ptr<Source>> sources_;  // by path
  std::vector<std::string> notes_;
};

}  // namespace pipescope

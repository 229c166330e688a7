// Moving read files between ranks: each rank cuts the per-file results of its
// own files (ingest/ingest.h, read_input_files) into bounded messages
// (BatchEncoder) and rank 0 collects the results of every rank and hands
// them to the same merge a single process uses (ingest/run_merge.h), so the
// Run is the one a single process would have built (RunAssembler). Pure: no
// MPI here, so the round trip is unit-tested.
//
// A message is a sequence of records, each a kind byte and its fields:
//   file       (global index, device, input stats, diagnostics, first step,
//               job type names, job count; whether it has a device, its time
//               resolution, notes, its further devices (FileResult::
//               more_devices) with their job counts, the size of its extras)
//   extra      (global index, count, count bytes of its extras: its GPU
//               activities, FileResult::kernels, and its format's placement
//               facts, FileResult::placement)
//   jobs       (global index, device (0: `device`, k: more_devices[k-1]),
//               count, count x 40-byte Job)
// A file's extras, then its devices' jobs, follow its header, split over as
// many messages as needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/wire.h"
#include "ingest/file_result.h"
#include "model/run.h"

namespace pipescope::distributed {

/// A device's place and what its input printed besides jobs (index,
/// machine, rank, path, cut, step-start lines, log events), without jobs.
void put_device(ByteWriter& w, const Device& device);
Device get_device(ByteReader& r);

/// A warning (a file's note), every field.
void put_warning(ByteWriter& w, const Warning& warning);
Warning get_warning(ByteReader& r);

/// A file's header record fields, as the file record above carries them
/// (device, input stats, diagnostics, first step, type names, job count):
/// every rank of the partitioned load gathers every file's.
void put_file_header(ByteWriter& w, const FileResult& file);
/// What put_file_header wrote, into `file` (its jobs untouched); returns
/// the job count. Throws WireError.
std::uint64_t get_file_header(ByteReader& r, FileResult& file);

/// Default bound of one message: small enough for any MPI transport and for
/// rank 0 to receive from many ranks at once, large enough to amortise the
/// per-message cost (about 100,000 jobs).
inline constexpr std::size_t kDefaultMessageBytes = std::size_t{4} << 20;

class BatchEncoder {
 public:
  /// `files`: read_input_files() over this rank's files (kept alive by the
  /// caller); `global_index[i]`: where files[i] is in the global input list.
  /// A message holds at most `max_bytes`, except a single file header larger
  /// than that (paths, type names and a few diagnostics: never in practice).
  BatchEncoder(const std::vector<FileResult>& files, std::vector<std::size_t> global_index,
               std::size_t max_bytes);

  /// Fills `message` with the next batch; false when everything was sent.
  bool next(std::string& message);

 private:
  void put_file_header(std::size_t file, std::string& out) const;

  const std::vector<FileResult>& files_;
  std::vector<std::size_t> global_index_;
  std::size_t max_bytes_;
  std::size_t next_file_ = 0;
  bool header_sent_ = false;
  std::string extras_;  // the current file's, encoded
  std::size_t extras_sent_ = 0;
  std::size_t next_device_ = 0;
  std::size_t next_job_ = 0;
};

class RunAssembler {
 public:
  /// `files`: the number of inputs in the global list.
  explicit RunAssembler(std::size_t files);

  /// Adds one message from rank `source`. Throws WireError for a message
  /// that does not decode or contradicts what arrived before.
  void add_message(int source, std::string_view message);
  /// Adds rank `source`'s own results without encoding them.
  void add_local(int source, std::vector<FileResult>&& files,
                 const std::vector<std::size_t>& global_index);

  /// Files whose header, extras or some jobs have not arrived yet.
  std::size_t missing() const;
  /// Every file's result, in global input order, as its rank read it (a
  /// format's join not yet run: ingest.h, join_file_results). Throws
  /// WireError when something is missing or does not decode.
  std::vector<FileResult> take();
  /// The merged run (merge_file_results over take()), for inputs of formats
  /// without a join.
  Run finish();

 private:
  struct Slot {
    bool seen = false;
    int source = -1;
    std::vector<std::uint64_t> expected_jobs;  // per device: `device`, then more_devices
    std::uint64_t expected_extras = 0;
    std::string extras;
    FileResult file;
  };
  Slot& slot(std::uint64_t file);
  void add_header(int source, ByteReader& r);

  std::vector<Slot> slots_;
};

}  // namespace pipescope::distributed

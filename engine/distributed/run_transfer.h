// Moving scanned runs between ranks: each rank cuts the Run of its own files
// into bounded messages (BatchEncoder) and rank 0 puts the messages of every
// rank back together into the Run a single process would have built
// (RunAssembler). Pure: no MPI here, so the round trip is unit-tested.
//
// A message is a sequence of records, each a kind byte and its fields:
//   types      (first id, count, names)      the sender's job type table, in pieces
//   file       (global index, device, input stats, diagnostics, job count)
//   jobs       (global index, count, count x 40-byte Job)
//   first step (step)
// A file's jobs follow its header, split over as many messages as needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/run.h"

namespace pipescope::distributed {

/// Default bound of one message: small enough for any MPI transport and for
/// rank 0 to receive from many ranks at once, large enough to amortise the
/// per-message cost (about 100,000 jobs).
inline constexpr std::size_t kDefaultMessageBytes = std::size_t{4} << 20;

class BatchEncoder {
 public:
  /// `run`: scan_worker_logs() over this rank's files (kept alive by the
  /// caller); `global_index[i]`: where run.devices[i]'s file is in the global
  /// input list. A message holds at most `max_bytes`, except a single file
  /// header larger than that (paths and a few diagnostics: never in practice).
  BatchEncoder(const Run& run, std::vector<std::size_t> global_index, std::size_t max_bytes);

  /// Fills `message` with the next batch; false when everything was sent.
  bool next(std::string& message);

 private:
  void put_file_header(std::size_t file, std::string& out) const;

  const Run& run_;
  std::vector<std::size_t> global_index_;
  std::size_t max_bytes_;
  std::vector<std::vector<const Diagnostic*>> diagnostics_;  // per local file
  std::size_t next_type_ = 0;
  std::size_t next_file_ = 0;
  bool header_sent_ = false;
  std::size_t next_job_ = 0;
  bool first_step_sent_ = false;
};

class RunAssembler {
 public:
  /// `files`: the number of inputs in the global list.
  explicit RunAssembler(std::size_t files);

  /// Adds one message from rank `source`. Throws WireError for a message
  /// that does not decode or contradicts what arrived before.
  void add_message(int source, std::string_view message);
  /// Adds rank `source`'s own run without encoding it.
  void add_local(int source, Run&& run, const std::vector<std::size_t>& global_index);

  /// Files whose header or some jobs have not arrived yet.
  std::size_t missing() const;
  /// The merged run: devices, inputs and diagnostics in global input order,
  /// one type table (ids given in that order), smallest first step,
  /// finalized. Throws WireError when something is missing.
  Run finish();

 private:
  struct Slot {
    bool seen = false;
    int source = -1;
    std::uint64_t expected_jobs = 0;
    Device device;
    InputStats stats;
    std::vector<Diagnostic> diagnostics;
  };
  Slot& slot(std::uint64_t file);

  std::vector<Slot> slots_;
  std::map<int, std::vector<std::string>> types_;  // per source rank
  std::optional<std::int64_t> first_step_;
};

}  // namespace pipescope::distributed

// The table of input formats, in the manner of a forwarding reader: the only
// place that knows what each format is. A row says which file names the
// format claims, which first bytes it recognises, which family of sources it
// belongs to, how a file tells its rank, where discovery places its files,
// what the commands must know of it, and its one reader, which reads a file
// at rest (FormatReader: text logs as byte ranges in parallel) and is fed a
// growing one (FollowerFactory, input_follower.h: `watch`). Discovery
// (discovery.h), ingest (ingest.h), `watch` (live/live_source.h),
// `analyze --mpi` (distributed/wire.h) and the commands ask the table and
// never name a format.
//
// Adding a format is one reader file (its ChunkedFileReader, and its options
// header if it takes any) and one row in input_formats.cc (and an
// InputFormat id before `count`). A format can also be registered at run
// time (InputFormatRegistration): a program embedding the engine, or a test,
// adds its row without touching any other file (tests/ingest/toy_format_test.cc).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/input_follower.h"
#include "ingest/reading_loop.h"

namespace pipescope {

struct IngestOptions;
class ProgressMeter;

/// A format's reading of its files of a run through the reading loop
/// (reading_loop.h): a ChunkedFileReader per file, then what is done with
/// all the results. `files` and `options` outlive it.
using ChunkedFormatFactory = std::unique_ptr<ChunkedFormat> (*)(const std::vector<InputFile>& files,
                                                                const IngestOptions& options);

/// A format with its own reading loop (the text logs: text_log_reader.h says
/// why): reads `files` into one result per file, in order; never throws for
/// a file's content or I/O.
using FormatReader = std::vector<FileResult> (*)(const std::vector<InputFile>& files,
                                                 const IngestOptions& options,
                                                 ProgressMeter& progress);

/// A format's step over the results of every file of a run once all are
/// read, wherever each was read (read_input_files may read them apart:
/// `analyze --mpi`): what only every file together decides (an export's
/// processes placed as ranks among every export's). `results[i]` is
/// `files[i]`'s, in input order.
using FormatJoin = void (*)(std::vector<FileResult>& results, const std::vector<InputFile>& files,
                            const IngestOptions& options);

/// How many ranks (devices) one file of a format holds.
enum class FileRanks {
  /// One: the file is one device (a rank's profiling windows, several files
  /// of one rank, are still one device: InputFormatSpec::rank_windows).
  one,
  /// Several (a report of every GPU of a node): FileOrigin::ranks says how
  /// many, discovery gives the file that many consecutive device indices
  /// (InputFile::ranks), and the reader returns them in `device` then
  /// `more_devices` (and their GPU activities in `kernels`), in rank order.
  several,
};

/// Where discovery puts a format's files (discovery.h says how machines and
/// ranks are ordered).
enum class Placement {
  /// The files of one folder are one machine, ranked by the rank their name
  /// gives (FileOrigin::rank; a file given directly without one takes the
  /// next position). Such files make a folder a machine's own (its
  /// sub-folders other than machineK/ are then not looked into), and a
  /// broken link among them is kept, so that reading it says why it fails.
  folder_ranks,
  /// Machine and rank come from the file itself (the .ivl header): files
  /// naming one machine form one machine, ordered by the name it gives; a
  /// file that cannot say goes to a last machine of its own.
  named_machine,
  /// The files of one folder are one machine, ordered by the global rank
  /// each names (its rank within the machine: that rank less the folder's
  /// lowest, a gap staying a gap); a file that names none takes the next
  /// free rank, in name order.
  folder_global_ranks,
};

/// What a file says of its own place.
struct FileOrigin {
  /// Its rank (Placement says which); -1 when it says none. A file of
  /// several ranks (FileRanks::several): its first.
  int rank = -1;
  /// How many ranks it holds (FileRanks::several; 1 otherwise).
  int ranks = 1;
  /// Placement::named_machine: the machine index and name it gives; unset
  /// when it cannot be read.
  std::optional<long> machine = std::nullopt;
  std::string machine_name = {};
};

struct InputFormatSpec {
  InputFormat format = InputFormat::worker_log;
  /// For messages, in the plural: "worker logs", ".ivl records".
  std::string_view name = {};
  /// True when the file name alone says the file is of this format.
  bool (*claims_name)(std::string_view file_name) = nullptr;
  /// True when a file's first bytes (at most kSniffBytes; fewer for a short
  /// file) are of this format.
  bool (*claims_content)(std::string_view first_bytes) = nullptr;
  /// What discovery looks for, for the message when a folder holds none:
  /// "*.ivl", "files named workerlog.N (N = rank)".
  std::string_view looked_for = {};
  /// The family of sources, as a message names it ("a worker log or .ivl
  /// record file"): formats of one family share machine and rank numbering
  /// and mix in one run; discovery refuses a run mixing two families
  /// (nothing says which pipeline each describes).
  std::string_view family = {};
  Placement placement = Placement::folder_ranks;
  FileRanks file_ranks = FileRanks::one;
  /// Where the file at `path` says it belongs (its name, header or head).
  FileOrigin (*origin)(const std::string& path) = nullptr;
  /// Placement::folder_ranks: a file the format claims whose name gives no
  /// rank holds every rank's records (Paddle's pipeline_profile.json): in a
  /// folder it is read only when no per-rank file of the format is there
  /// (ranked after the folder's others), and discovery refuses it given
  /// together with per-rank files.
  bool rankless_concatenates = false;
  /// The reader, not discovery, decides each file's device (the stage its
  /// records name, the pipeline chosen among the files): a stage map that
  /// names devices can be checked only once the files are read.
  bool reader_places_devices = false;
  /// The reader needs all files of the format at once (it chooses a pipeline
  /// over them), so they cannot be shared out among processes
  /// (`analyze --mpi`).
  bool reads_files_together = false;
  /// What is decided over every file once each is read (FormatJoin; null:
  /// nothing): `analyze --mpi` shares such files out, gathers their
  /// results on rank 0, which joins them and analyses the run as one
  /// process does.
  FormatJoin join = nullptr;
  /// The reader makes jobs of user annotations (`PP:` labels, or a job
  /// pattern: TorchTraceOptions::job_pattern); said when no job was found.
  bool takes_job_pattern = false;
  /// Several files of one rank are its profiling windows (a PyTorch
  /// profiler schedule with repeat: one trace per window): discovery gives
  /// them one device, and the reader joins them, a launch segment each.
  bool rank_windows = false;
  /// The reader looks for log events (TextLogOptions::events) in the file's
  /// lines: a run with such an input reports its events, or that none was.
  bool log_events = false;
  /// Why a file of this name cannot be followed while it grows (written
  /// whole once the run is over), completing "PATH ..."; empty when it can.
  /// Null: every file can.
  std::string_view (*unfollowable)(std::string_view file_name) = nullptr;
  /// The one reader: files at rest through the reading loop (`chunked`), or
  /// through the format's own (`read`: set for the text logs alone); and one
  /// growing file.
  ChunkedFormatFactory chunked = nullptr;
  FormatReader read = nullptr;
  FollowerFactory follow = nullptr;
};

/// Bytes read from a file to sniff its format.
inline constexpr std::size_t kSniffBytes = 128;

/// Every format, in the order sniffing tries them: the fallback (text worker
/// log) last, formats registered at run time just before it. Valid until a
/// registration begins or ends.
std::span<const InputFormatSpec> input_formats();
/// The row of `format`; InputError for an id no row has.
const InputFormatSpec& input_format_spec(InputFormat format);
/// True when a row has this id (an id read from elsewhere: analyze --mpi).
bool is_input_format(std::uint8_t id);

/// The format a file name claims, if any.
std::optional<InputFormat> format_by_name(std::string_view file_name);
/// The format of a file whose name claims none, from its first bytes; the
/// fallback when they cannot be read (the reader then reports why).
InputFormat format_by_content(const std::string& path);

/// Adds a row to the table for the life of the object, under a new id
/// (`spec.format` is ignored; format() gives it), sniffed after the built-in
/// formats and before the fallback. Registration is not synchronised with
/// reading the table: register before discovering or reading inputs, and
/// end registrations in the reverse order.
class InputFormatRegistration {
 public:
  explicit InputFormatRegistration(InputFormatSpec spec);
  ~InputFormatRegistration();
  InputFormatRegistration(const InputFormatRegistration&) = delete;
  InputFormatRegistration& operator=(const InputFormatRegistration&) = delete;

  InputFormat format() const { return format_; }

 private:
  InputFormat format_;
};

}  // namespace pipescope

#include "ingest/input_formats.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ingest/dygraph_reader.h"
#include "ingest/ingest_options.h"
#include "ingest/ivl_import.h"
#include "ingest/nsys_reader.h"
#include "ingest/progress_meter.h"
#include "ingest/text_log_reader.h"
#include "ingest/torch_trace_reader.h"
#include "io/file_descriptor.h"
#include "records/ivl_format.h"
#include "records/ivl_reader.h"
#include "source/byte_stream.h"

namespace pipescope {

namespace {

std::string file_name_of(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// ---- worker logs ----------------------------------------------------------

bool worker_log_name(std::string_view name) { return worker_log_rank(name) >= 0; }

// Any bytes can be scanned as text: the fallback, so it claims everything.
bool any_content(std::string_view) { return true; }

FileOrigin worker_log_origin(const std::string& path) {
  return {.rank = worker_log_rank(file_name_of(path))};
}

// ---- .ivl records -----------------------------------------------------------

bool ivl_name(std::string_view name) { return name.size() > 4 && name.ends_with(".ivl"); }

bool ivl_content(std::string_view bytes) {
  return bytes.size() >= sizeof(ivl::kMagic) &&
         std::memcmp(bytes.data(), ivl::kMagic, sizeof(ivl::kMagic)) == 0;
}

FileOrigin ivl_origin(const std::string& path) {
  std::string error;
  const auto header = ivl::read_header(path, error);
  if (!header) return {};
  return {.rank = header->rank, .machine = header->machine, .machine_name = header->machine_name};
}

/// What stat(2) said of a followed file at the last look: a file replaced
/// (another inode) or shrunk is read again from its start.
struct FileSeen {
  dev_t dev = 0;
  ino_t inode = 0;
  std::int64_t size = -1;
  std::int64_t mtime_ns = -1;

  struct Change {
    bool replaced = false;  ///< another file under the name
    bool shrank = false;
    bool changed = false;  ///< size, time or file differ from the last look
  };
  /// Looks again; nullopt when the file is missing now (it may appear again).
  std::optional<Change> look(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    const auto now_size = static_cast<std::int64_t>(st.st_size);
    const std::int64_t now_mtime =
        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    Change change;
    change.replaced = size >= 0 && (st.st_dev != dev || st.st_ino != inode);
    change.changed = now_size != size || now_mtime != mtime_ns || change.replaced;
    change.shrank = size >= 0 && now_size < size;
    dev = st.st_dev;
    inode = st.st_ino;
    size = now_size;
    mtime_ns = now_mtime;
    return change;
  }
};

/// Appended whole blocks (IvlFollowImport), never a block still being written.
class IvlFollower final : public InputFollower {
 public:
  IvlFollower(const InputFile& input, const FollowOptions& options)
      : InputFollower(input),
        look_bytes_(options.look_bytes),
        import_(std::make_unique<IvlFollowImport>(input)) {}

  FollowedData look() override {
    FollowedData out;
    const auto change = seen_.look(input().path);
    if (!change) return out;
    if (change->replaced || change->shrank) {
      import_ = std::make_unique<IvlFollowImport>(input());
      out.restarted = true;
    }
    const auto size = static_cast<std::uint64_t>(seen_.size);
    if (!out.restarted && size <= import_->offset()) return out;
    FileResult batch = import_->read_more(look_bytes_);
    for (const Diagnostic& d : batch.diagnostics) {
      out.notes.push_back(fmt::format("{}: {}", input().path, d.message));
    }
    if (batch.device.jobs.empty() && batch.device.step_starts.empty() && !out.restarted) return out;
    out.kind = FollowedData::Kind::records;
    out.more = import_->offset() + look_bytes_ / 2 < size;
    out.records = std::move(batch);
    return out;
  }

 private:
  std::uint64_t look_bytes_;
  std::unique_ptr<IvlFollowImport> import_;
  FileSeen seen_;
};

std::unique_ptr<InputFollower> follow_ivl(const InputFile& input, const FollowOptions& options) {
  return std::make_unique<IvlFollower>(input, options);
}

// ---- Paddle dygraph records -------------------------------------------------

bool dygraph_name(std::string_view name) {
  return dygraph_record_rank(name) >= 0 || is_dygraph_concatenation(name);
}

FileOrigin dygraph_origin(const std::string& path) {
  return {.rank = dygraph_record_rank(file_name_of(path))};
}

std::string_view dygraph_unfollowable(std::string_view name) {
  if (!is_dygraph_concatenation(name)) return {};
  return "is Paddle's concatenation of the dygraph records, written once the run is over: "
         "watch the per-rank files (profile_record_tmp_file_for_rank_N) instead";
}

/// One rank's record file, a B record waiting for its E (DygraphFollowReader).
class DygraphLines final : public LineRecordParser {
 public:
  DygraphLines(const InputFile& input, std::size_t max_diagnostics)
      : reader_(input, max_diagnostics) {}
  FileResult lines(std::string_view text) override { return reader_.lines(text); }
  int stage() const override { return reader_.stage(); }

 private:
  DygraphFollowReader reader_;
};

std::unique_ptr<InputFollower> follow_dygraph(const InputFile& input,
                                              const FollowOptions& options) {
  return follow_line_records(
      input, options,
      [](const InputFile& file, std::size_t max_diagnostics) {
        return std::make_unique<DygraphLines>(file, max_diagnostics);
      },
      /*places_itself=*/true);
}

// ---- PyTorch profiler traces ------------------------------------------------

FileOrigin torch_trace_origin(const std::string& path) {
  return {.rank = torch_trace_rank(path).value_or(-1)};
}

/// A file written whole, then perhaps written again whole (a trace when
/// profiling stops, an export): read once its size and time are the same at
/// two looks in a row, once per such settled state (a read that fails is
/// tried again only after the file changes), and read again as a file that
/// restarted when it settles anew (the jobs read before stay the run's).
/// Each format gives only its read (`read_settled`).
class SettledFileFollower : public InputFollower {
 public:
  explicit SettledFileFollower(const InputFile& input) : InputFollower(input) {}

  FollowedData look() final {
    FollowedData out;
    const auto change = seen_.look(input().path);
    if (!change) return out;
    if (change->changed) {
      tried_ = false;  // written (again): read it when it settles
      return out;
    }
    if (tried_ || seen_.size == 0) return out;
    tried_ = true;
    InputFile file = input();
    file.size_bytes = static_cast<std::uint64_t>(seen_.size);
    std::optional<FileResult> result;
    try {
      result = read_settled(file, out);
    } catch (const std::exception& e) {
      say(out, fmt::format("{}: {}", file.path, e.what()));
      return out;
    }
    if (!result) return out;
    out.kind = FollowedData::Kind::records;
    out.restarted = reads_++ > 0;
    out.records = std::move(*result);
    return out;
  }

 protected:
  /// The records of the settled `file`; nullopt when there are none to give
  /// yet (a note in `out` may say why). May throw: the message is noted.
  virtual std::optional<FileResult> read_settled(const InputFile& file, FollowedData& out) = 0;
  /// Adds `why` to the notes unless it is the last one said.
  void say(FollowedData& out, std::string why) {
    if (said_ != why) out.notes.push_back(said_ = std::move(why));
  }

 private:
  FileSeen seen_;
  bool tried_ = false;
  int reads_ = 0;
  std::string said_;
};

/// One JSON document written when profiling stops: read once it is complete
/// (it reads to its end without damage) and settled; read again once
/// rewritten (a new profiling window under the same name).
class TorchTraceFollower final : public SettledFileFollower {
 public:
  TorchTraceFollower(const InputFile& input, const FollowOptions& options)
      : SettledFileFollower(input), ingest_(options.ingest) {}

 private:
  std::optional<FileResult> read_settled(const InputFile& file, FollowedData&) override {
    FileResult result = read_torch_trace(file, ingest_, ingest_);
    if (!result.stats.error.empty()) return std::nullopt;  // not a whole document yet
    return result;
  }
  IngestOptions ingest_;
};

std::unique_ptr<InputFollower> follow_torch_trace(const InputFile& input,
                                                  const FollowOptions& options) {
  return std::make_unique<TorchTraceFollower>(input, options);
}

// ---- Nsight Systems exports -------------------------------------------------

FileOrigin nsys_origin(const std::string& path) { return {.ranks = nsys_export_ranks(path)}; }

/// An export is written whole by `nsys export` once the run is over: read
/// once settled, and again (a restart) when written again. A file that
/// cannot be read yet (still being written: a damaged database) is said once
/// and tried again when it changes. watch's devices are one per file, so an
/// export of several GPU processes (a node's report) is named once and left
/// to `analyze`.
class NsysFollower final : public SettledFileFollower {
 public:
  NsysFollower(const InputFile& input, const FollowOptions& options)
      : SettledFileFollower(input), ingest_(options.ingest) {}

 private:
  std::optional<FileResult> read_settled(const InputFile& file, FollowedData& out) override {
    const std::vector<InputFile> files{file};
    const ProgressCallback none;
    ProgressMeter progress(files, none);
    std::vector<FileResult> results =
        read_nsys_exports(files, ingest_, ingest_, ingest_.job_pattern.get(), progress);
    if (results.empty()) return std::nullopt;
    if (!results.front().more_devices.empty()) {
      say(out, fmt::format("{}: holds {} GPU processes; watch follows exports of one rank "
                           "each (`nsys profile -o rank_%q{{RANK}}`): analyse it with "
                           "`pipescope analyze`",
                           file.path, results.front().more_devices.size() + 1));
      return std::nullopt;
    }
    return std::move(results.front());
  }
  IngestOptions ingest_;
};

std::unique_ptr<InputFollower> follow_nsys(const InputFile& input, const FollowOptions& options) {
  return std::make_unique<NsysFollower>(input, options);
}

// ---- each format's part of the options ----------------------------------------

std::vector<FileResult> read_ivl(const std::vector<InputFile>& files, const IngestOptions& options,
                                 ProgressMeter& progress) {
  return read_ivl_files(files, options, progress);
}

std::unique_ptr<ChunkedFormat> read_torch_traces(const std::vector<InputFile>& files,
                                                 const IngestOptions& options) {
  return torch_trace_format(files, options, options, options);
}

std::unique_ptr<ChunkedFormat> read_dygraph_records(const std::vector<InputFile>& files,
                                                    const IngestOptions& options) {
  return dygraph_format(files, options, options);
}

std::vector<FileResult> read_nsys(const std::vector<InputFile>& files, const IngestOptions& options,
                                  ProgressMeter& progress) {
  // The job pattern is the one PyTorch traces take (--job-pattern).
  return read_nsys_files(files, options, options, options.job_pattern.get(), progress);
}

void join_nsys(std::vector<FileResult>& results, const std::vector<InputFile>& files,
               const IngestOptions& options) {
  join_nsys_files(results, files, options);
}

std::vector<FileResult> read_worker_logs(const std::vector<InputFile>& files,
                                         const IngestOptions& options, ProgressMeter& progress) {
  return read_text_logs(files, options, options, progress);
}

// ---- the table --------------------------------------------------------------

constexpr std::string_view kStaticGraph = "a worker log or .ivl record file";

// The fallback (text) last: sniffing tries the formats in this order, the
// stricter sniffers first (a trace's first key before the dygraph records'
// marker anywhere in the first bytes). A folder's message lists what it
// looked for from the fallback on, then in this order.
// clang-format off
const InputFormatSpec kBuiltIn[] = {
    {.format = InputFormat::ivl, .name = ".ivl records",
     .claims_name = ivl_name, .claims_content = ivl_content, .looked_for = "*.ivl",
     .family = kStaticGraph, .placement = Placement::named_machine, .origin = ivl_origin,
     .read = read_ivl, .follow = follow_ivl},
    {.format = InputFormat::torch_trace, .name = "PyTorch profiler traces",
     .claims_name = torch_trace_name, .claims_content = trace_json_content,
     .looked_for = "*.pt.trace.json[.gz]", .family = "a PyTorch profiler trace",
     .placement = Placement::folder_global_ranks, .origin = torch_trace_origin,
     .reader_places_devices = true, .takes_job_pattern = true, .rank_windows = true,
     .chunked = read_torch_traces, .follow = follow_torch_trace},
    {.format = InputFormat::paddle_dygraph, .name = "Paddle dygraph records",
     .claims_name = dygraph_name, .claims_content = looks_like_dygraph_records,
     .looked_for = "Paddle dygraph records (profile_record_tmp_file_for_rank_N, "
                   "pipeline_profile.json)",
     .family = "a Paddle dygraph pipeline record file",
     .placement = Placement::folder_ranks, .origin = dygraph_origin,
     .rankless_concatenates = true, .reader_places_devices = true,
     .reads_files_together = true, .unfollowable = dygraph_unfollowable,
     .chunked = read_dygraph_records, .follow = follow_dygraph},
    {.format = InputFormat::nsys_export, .name = "Nsight Systems exports",
     .claims_name = nsys_export_name, .claims_content = nsys_export_content,
     .looked_for = "*.sqlite (Nsight Systems exports)", .family = "an Nsight Systems export",
     .placement = Placement::folder_ranks, .file_ranks = FileRanks::several,
     .origin = nsys_origin, .reader_places_devices = true, .join = join_nsys,
     .takes_job_pattern = true,
     .read = read_nsys, .follow = follow_nsys},
    {.format = InputFormat::worker_log, .name = "worker logs",
     .claims_name = worker_log_name, .claims_content = any_content,
     .looked_for = "files named workerlog.N (N = rank)", .family = kStaticGraph,
     .placement = Placement::folder_ranks, .origin = worker_log_origin, .log_events = true,
     .read = read_worker_logs, .follow = follow_text_lines},
};
// clang-format on
static_assert(std::size(kBuiltIn) == static_cast<std::size_t>(InputFormat::count),
              "every built-in InputFormat has one row");

/// The table: the built-in rows, registered rows before the fallback.
std::vector<InputFormatSpec>& table() {
  static std::vector<InputFormatSpec> rows(std::begin(kBuiltIn), std::end(kBuiltIn));
  return rows;
}

const InputFormatSpec* find_row(InputFormat format) {
  const auto& rows = table();
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [format](const InputFormatSpec& f) { return f.format == format; });
  return it == rows.end() ? nullptr : &*it;
}

}  // namespace

std::span<const InputFormatSpec> input_formats() { return table(); }

const InputFormatSpec& input_format_spec(InputFormat format) {
  if (const InputFormatSpec* row = find_row(format)) return *row;
  throw InputError(fmt::format("no input format has id {}", static_cast<int>(format)));
}

bool is_input_format(std::uint8_t id) { return find_row(static_cast<InputFormat>(id)) != nullptr; }

std::optional<InputFormat> format_by_name(std::string_view file_name) {
  for (const InputFormatSpec& f : table()) {
    if (f.claims_name(file_name)) return f.format;
  }
  return std::nullopt;
}

InputFormat format_by_content(const std::string& path) {
  char bytes[kSniffBytes];
  std::size_t size = 0;
  if (compression_of(path) != Compression::none) {
    // A compressed file is sniffed by its first decompressed bytes.
    try {
      const auto stream = open_byte_stream(path);
      while (size < sizeof bytes) {
        const std::size_t n = stream->read(bytes + size, sizeof bytes - size);
        if (n == 0) break;
        size += n;
      }
    } catch (const std::exception&) {
      size = 0;
    }
  } else {
    const io::FileDescriptor fd = io::FileDescriptor::open(path.c_str(), O_RDONLY);
    if (fd.valid()) io::pread_full(fd.get(), bytes, sizeof bytes, 0, &size);
  }
  const std::string_view first(bytes, size);
  for (const InputFormatSpec& f : table()) {
    if (f.claims_content(first)) return f.format;
  }
  return table().back().format;
}

InputFormatRegistration::InputFormatRegistration(InputFormatSpec spec) {
  auto& rows = table();
  int id = static_cast<int>(InputFormat::count);
  while (find_row(static_cast<InputFormat>(id))) ++id;
  if (id > 255) throw InputError("too many input formats registered");
  format_ = static_cast<InputFormat>(id);
  spec.format = format_;
  rows.insert(rows.end() - 1, spec);  // before the fallback
}

InputFormatRegistration::~InputFormatRegistration() {
  auto& rows = table();
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [this](const InputFormatSpec& f) { return f.format == format_; }),
             rows.end());
}

}  // namespace pipescope

#include "distributed/run_transfer.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "distributed/kernels_wire.h"
#include "distributed/wire.h"
#include "ingest/run_merge.h"

namespace pipescope::distributed {

namespace {

// Every field of these travels; a new field must be added to put_* and get_*
// below (the sizes catch a forgotten one on the usual 64-bit targets).
static_assert(sizeof(void*) != 8 || sizeof(InputStats) == 2 * sizeof(std::string) + 7 * 8,
              "InputStats changed: update put_stats/get_stats");
// Device::segment_begin does not travel: segments are found after the merge.
static_assert(sizeof(void*) != 8 || sizeof(Device) == 2 * sizeof(std::string) + 16 +
                                                          sizeof(JobVector) +
                                                          sizeof(std::vector<StepStartLine>) +
                                                          sizeof(std::vector<std::size_t>) + 8 +
                                                          sizeof(std::vector<LogEvent>),
              "Device changed: update put_device/get_device");
static_assert(sizeof(Job) == 40, "Job changed: records travel as 40-byte copies");

enum Record : std::uint8_t { kFile = 2, kJobs = 3, kExtra = 4 };

constexpr std::size_t kJobsHeader = 1 + 8 + 4 + 4;  // kind, file, device, count
constexpr std::size_t kExtraHeader = 1 + 8 + 4;     // kind, file, count

}  // namespace

void put_device(ByteWriter& w, const Device& d) {
  w.put(static_cast<std::int32_t>(d.index));
  w.put(static_cast<std::int32_t>(d.machine));
  w.str(d.machine_name);
  w.put(static_cast<std::int32_t>(d.rank));
  w.str(d.path);
  w.put(d.cut_ns);
  w.put(static_cast<std::uint32_t>(d.step_starts.size()));
  for (const StepStartLine& s : d.step_starts) {
    w.put(s.line);
    w.put(s.step);
    w.put(static_cast<std::uint8_t>(s.window ? 1 : 0));
  }
  w.put(static_cast<std::uint32_t>(d.events.size()));
  for (const LogEvent& e : d.events) {
    w.put(e.kind);
    w.put(static_cast<std::uint8_t>(e.time_kind));
    w.put(e.line);
    w.put(e.time_ns);
    w.put(static_cast<std::uint32_t>(e.captures.size()));
    for (const auto& [name, value] : e.captures) {
      w.str(name);
      w.str(value);
    }
  }
}

Device get_device(ByteReader& r) {
  Device d;
  d.index = r.get<std::int32_t>();
  d.machine = r.get<std::int32_t>();
  d.machine_name = r.str();
  d.rank = r.get<std::int32_t>();
  d.path = r.str();
  d.cut_ns = r.get<std::int64_t>();
  const auto step_starts = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < step_starts; ++i) {
    StepStartLine s;
    s.line = r.get<std::uint64_t>();
    s.step = r.get<std::int64_t>();
    s.window = r.get<std::uint8_t>() != 0;
    d.step_starts.push_back(s);
  }
  const auto events = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < events; ++i) {
    LogEvent e;
    e.kind = r.get<std::uint32_t>();
    const auto time_kind = r.get<std::uint8_t>();
    if (time_kind > static_cast<std::uint8_t>(EventTime::unplaced)) {
      throw WireError(fmt::format("bad event time kind {}", time_kind));
    }
    e.time_kind = static_cast<EventTime>(time_kind);
    e.line = r.get<std::uint64_t>();
    e.time_ns = r.get<std::int64_t>();
    const auto captures = r.get<std::uint32_t>();
    for (std::uint32_t c = 0; c < captures; ++c) {
      std::string name = r.str();
      e.captures.emplace_back(std::move(name), r.str());
    }
    d.events.push_back(std::move(e));
  }
  return d;
}

void put_warning(ByteWriter& w, const Warning& warning) {
  w.put(static_cast<std::uint32_t>(warning.code));
  w.str(warning.message);
  w.put(static_cast<std::int32_t>(warning.device));
  w.put(static_cast<std::int32_t>(warning.stage));
  w.put(warning.count);
}

Warning get_warning(ByteReader& r) {
  Warning warning;
  const auto code = r.get<std::uint32_t>();
  if (code >= kWarningCount) throw WireError(fmt::format("unknown warning code {}", code));
  warning.code = static_cast<WarningCode>(code);
  warning.message = r.str();
  warning.device = r.get<std::int32_t>();
  warning.stage = r.get<std::int32_t>();
  warning.count = r.get<std::uint64_t>();
  return warning;
}

namespace {

void put_stats(ByteWriter& w, const InputStats& s) {
  w.str(s.path);
  w.put(s.bytes);
  w.put(s.lines);
  w.put(s.matched);
  w.put(s.malformed);
  w.put(s.oversized);
  w.put(s.partial_last_line_bytes);
  w.str(s.error);
  w.put(static_cast<std::uint8_t>(s.unreadable ? 1 : 0));
  w.put(static_cast<std::uint8_t>(s.time_base));
  w.put(static_cast<std::uint8_t>(s.job_annotations ? 1 : 0));
}

InputStats get_stats(ByteReader& r) {
  InputStats s;
  s.path = r.str();
  s.bytes = r.get<std::uint64_t>();
  s.lines = r.get<std::uint64_t>();
  s.matched = r.get<std::uint64_t>();
  s.malformed = r.get<std::uint64_t>();
  s.oversized = r.get<std::uint64_t>();
  s.partial_last_line_bytes = r.get<std::uint64_t>();
  s.error = r.str();
  s.unreadable = r.get<std::uint8_t>() != 0;
  const auto base = r.get<std::uint8_t>();
  if (base > static_cast<std::uint8_t>(TimeBase::missing)) {
    throw WireError(fmt::format("bad time base {} in the input stats", base));
  }
  s.time_base = static_cast<TimeBase>(base);
  s.job_annotations = r.get<std::uint8_t>() != 0;
  return s;
}

}  // namespace

void put_file_header(ByteWriter& w, const FileResult& f) {
  put_device(w, f.device);
  put_stats(w, f.stats);
  w.put(static_cast<std::uint32_t>(f.diagnostics.size()));
  for (const Diagnostic& d : f.diagnostics) {
    w.str(d.path);
    w.put(d.line);
    w.str(d.message);
  }
  w.put(static_cast<std::uint8_t>(f.first_step.has_value()));
  w.put(static_cast<std::int64_t>(f.first_step.value_or(0)));
  w.put(static_cast<std::uint32_t>(f.types.size()));
  for (const std::string& name : f.types.names()) w.str(name);
  w.put(static_cast<std::uint64_t>(f.device.jobs.size()));
}

std::uint64_t get_file_header(ByteReader& r, FileResult& f) {
  f.device = get_device(r);
  f.stats = get_stats(r);
  const auto diagnostics = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < diagnostics; ++i) {
    Diagnostic d;
    d.path = r.str();
    d.line = r.get<std::uint64_t>();
    d.message = r.str();
    f.diagnostics.push_back(std::move(d));
  }
  const bool has_first_step = r.get<std::uint8_t>() != 0;
  const auto first_step = r.get<std::int64_t>();
  if (has_first_step) f.first_step = first_step;
  const auto types = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < types; ++i) {
    if (f.types.intern(r.str()) != i) throw WireError("a job type arrived twice");
  }
  const auto jobs = r.get<std::uint64_t>();
  if (jobs > std::numeric_limits<std::size_t>::max() / sizeof(Job)) {
    throw WireError("impossible job count");
  }
  return jobs;
}

namespace {

/// What a file's result holds beyond its header and jobs: its GPU
/// activities and its format's placement facts (FileResult::kernels,
/// FileResult::placement), possibly large, sent in pieces.
std::string encode_extras(const FileResult& f) {
  if (f.kernels.empty() && f.placement.empty()) return {};
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(f.kernels.size()));
  for (const RankKernels& k : f.kernels) put_rank_kernels(w, k);
  w.put(static_cast<std::uint64_t>(f.placement.size()));
  w.bytes(f.placement.data(), f.placement.size());
  return w.take();
}

void decode_extras(std::string_view bytes, FileResult& f) {
  if (bytes.empty()) return;
  ByteReader r(bytes);
  const auto kernels = r.get<std::uint64_t>();
  if (kernels > r.left()) throw WireError("more GPU activity records than bytes");
  for (std::uint64_t i = 0; i < kernels; ++i) f.kernels.push_back(get_rank_kernels(r));
  const auto placement = r.get<std::uint64_t>();
  if (placement != r.left()) throw WireError("a file's placement facts cut or followed by bytes");
  f.placement.assign(r.bytes(placement), placement);
}

/// The devices of a file's result: `device`, then `more_devices`.
std::size_t file_device_count(const FileResult& f) { return 1 + f.more_devices.size(); }
const Device& file_device(const FileResult& f, std::size_t k) {
  return k == 0 ? f.device : f.more_devices[k - 1];
}
Device& file_device(FileResult& f, std::size_t k) {
  return k == 0 ? f.device : f.more_devices[k - 1];
}

}  // namespace

BatchEncoder::BatchEncoder(const std::vector<FileResult>& files,
                           std::vector<std::size_t> global_index, std::size_t max_bytes)
    : files_(files),
      global_index_(std::move(global_index)),
      max_bytes_(std::max<std::size_t>(max_bytes, kJobsHeader + sizeof(Job))) {
  if (global_index_.size() != files.size()) {
    throw std::invalid_argument("BatchEncoder: one global index per file expected");
  }
}

void BatchEncoder::put_file_header(std::size_t file, std::string& out) const {
  const FileResult& f = files_[file];
  ByteWriter w;
  w.put(static_cast<std::uint8_t>(kFile));
  w.put(static_cast<std::uint64_t>(global_index_[file]));
  distributed::put_file_header(w, f);
  w.put(static_cast<std::uint8_t>(f.has_device ? 1 : 0));
  w.put(f.time_resolution_ns);
  w.put(static_cast<std::uint32_t>(f.notes.size()));
  for (const Warning& note : f.notes) put_warning(w, note);
  w.put(static_cast<std::uint32_t>(f.more_devices.size()));
  for (const Device& more : f.more_devices) {
    put_device(w, more);
    w.put(static_cast<std::uint64_t>(more.jobs.size()));
  }
  w.put(static_cast<std::uint64_t>(extras_.size()));
  out = w.take();
}

bool BatchEncoder::next(std::string& message) {
  message.clear();
  const auto room = [&] { return max_bytes_ - std::min(max_bytes_, message.size()); };
  std::string header;
  while (next_file_ < files_.size()) {
    const FileResult& f = files_[next_file_];
    const auto file = static_cast<std::uint64_t>(global_index_[next_file_]);
    if (!header_sent_) {
      extras_ = encode_extras(f);
      put_file_header(next_file_, header);
      if (!message.empty() && header.size() > room()) return true;
      message += header;
      header_sent_ = true;
      extras_sent_ = 0;
      next_device_ = 0;
      next_job_ = 0;
    }
    while (extras_sent_ < extras_.size()) {
      if (room() < kExtraHeader + 1) return true;
      const std::size_t n = std::min({room() - kExtraHeader, extras_.size() - extras_sent_,
                                      std::size_t{std::numeric_limits<std::uint32_t>::max()}});
      ByteWriter w;
      w.put(static_cast<std::uint8_t>(kExtra));
      w.put(file);
      w.put(static_cast<std::uint32_t>(n));
      message += w.data();
      message.append(extras_, extras_sent_, n);
      extras_sent_ += n;
    }
    for (; next_device_ < file_device_count(f); ++next_device_, next_job_ = 0) {
      const JobVector& jobs = file_device(f, next_device_).jobs;
      while (next_job_ < jobs.size()) {
        if (room() < kJobsHeader + sizeof(Job)) return true;
        const std::size_t n =
            std::min((room() - kJobsHeader) / sizeof(Job), jobs.size() - next_job_);
        ByteWriter w;
        w.put(static_cast<std::uint8_t>(kJobs));
        w.put(file);
        w.put(static_cast<std::uint32_t>(next_device_));
        w.put(static_cast<std::uint32_t>(n));
        message += w.data();
        message.append(reinterpret_cast<const char*>(jobs.data() + next_job_), n * sizeof(Job));
        next_job_ += n;
      }
    }
    ++next_file_;
    header_sent_ = false;
    extras_.clear();
  }
  return !message.empty();
}

RunAssembler::RunAssembler(std::size_t files) : slots_(files) {}

RunAssembler::Slot& RunAssembler::slot(std::uint64_t file) {
  if (file >= slots_.size()) {
    throw WireError(fmt::format("file {} is not in the input list of {}", file, slots_.size()));
  }
  return slots_[file];
}

void RunAssembler::add_header(int source, ByteReader& r) {
  Slot& s = slot(r.get<std::uint64_t>());
  if (s.seen) throw WireError(fmt::format("file {} arrived twice", s.file.device.path));
  s.seen = true;
  s.source = source;
  FileResult& f = s.file;
  s.expected_jobs.assign(1, get_file_header(r, f));
  f.has_device = r.get<std::uint8_t>() != 0;
  f.time_resolution_ns = r.get<std::int64_t>();
  const auto notes = r.get<std::uint32_t>();
  for (std::uint32_t n = 0; n < notes; ++n) f.notes.push_back(get_warning(r));
  const auto more = r.get<std::uint32_t>();
  for (std::uint32_t m = 0; m < more; ++m) {
    f.more_devices.push_back(get_device(r));
    s.expected_jobs.push_back(r.get<std::uint64_t>());
  }
  s.expected_extras = r.get<std::uint64_t>();
  for (std::size_t k = 0; k < s.expected_jobs.size(); ++k) {
    if (s.expected_jobs[k] > std::numeric_limits<std::size_t>::max() / sizeof(Job)) {
      throw WireError("impossible job count");
    }
    file_device(f, k).jobs.reserve(s.expected_jobs[k]);
  }
}

void RunAssembler::add_message(int source, std::string_view message) {
  ByteReader r(message);
  while (!r.done()) {
    const auto kind = r.get<std::uint8_t>();
    switch (kind) {
      case kFile:
        add_header(source, r);
        break;
      case kExtra: {
        Slot& s = slot(r.get<std::uint64_t>());
        const auto count = r.get<std::uint32_t>();
        if (!s.seen || s.source != source || s.extras.size() + count > s.expected_extras) {
          throw WireError("a file's GPU activities arrived out of order");
        }
        s.extras.append(r.bytes(count), count);
        break;
      }
      case kJobs: {
        Slot& s = slot(r.get<std::uint64_t>());
        const auto device = r.get<std::uint32_t>();
        const auto count = r.get<std::uint32_t>();
        if (!s.seen || s.source != source || device >= s.expected_jobs.size() ||
            file_device(s.file, device).jobs.size() + count > s.expected_jobs[device]) {
          throw WireError("jobs of a file arrived out of order");
        }
        JobVector& jobs = file_device(s.file, device).jobs;
        const char* bytes = r.bytes(std::size_t{count} * sizeof(Job));
        const std::size_t first = jobs.size();
        jobs.resize(first + count);
        std::memcpy(static_cast<void*>(jobs.data() + first), bytes,
                    std::size_t{count} * sizeof(Job));
        for (std::size_t i = first; i < jobs.size(); ++i) {
          if (jobs[i].type >= s.file.types.size()) throw WireError("job with an unknown type id");
        }
        break;
      }
      default:
        throw WireError(fmt::format("unknown record kind {}", kind));
    }
  }
}

void RunAssembler::add_local(int source, std::vector<FileResult>&& files,
                             const std::vector<std::size_t>& global_index) {
  if (global_index.size() != files.size()) {
    throw std::invalid_argument("RunAssembler: one global index per file expected");
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    Slot& s = slot(global_index[i]);
    if (s.seen) throw WireError(fmt::format("file {} arrived twice", files[i].device.path));
    s.seen = true;
    s.source = source;
    s.file = std::move(files[i]);
    s.expected_jobs.clear();
    for (std::size_t k = 0; k < file_device_count(s.file); ++k) {
      s.expected_jobs.push_back(file_device(s.file, k).jobs.size());
    }
    s.expected_extras = 0;  // its kernels and facts are in place
  }
}

std::size_t RunAssembler::missing() const {
  return static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) {
    if (!s.seen || s.extras.size() != s.expected_extras) return true;
    for (std::size_t k = 0; k < s.expected_jobs.size(); ++k) {
      if (file_device(s.file, k).jobs.size() != s.expected_jobs[k]) return true;
    }
    return false;
  }));
}

std::vector<FileResult> RunAssembler::take() {
  if (const std::size_t n = missing(); n > 0) {
    throw WireError(fmt::format("{} of {} input files did not arrive complete", n, slots_.size()));
  }
  std::vector<FileResult> files;
  files.reserve(slots_.size());
  for (Slot& s : slots_) {
    decode_extras(s.extras, s.file);
    s.extras = {};
    files.push_back(std::move(s.file));
  }
  slots_.clear();
  return files;
}

Run RunAssembler::finish() { return merge_file_results(take()); }

}  // namespace pipescope::distributed

#include "distributed/run_transfer.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

#include "distributed/wire.h"

namespace pipescope::distributed {

namespace {

// Every field of these travels; a new field must be added to put_* and get_*
// below (the sizes catch a forgotten one on the usual 64-bit targets).
static_assert(sizeof(void*) != 8 || sizeof(InputStats) == 2 * sizeof(std::string) + 6 * 8,
              "InputStats changed: update put_stats/get_stats");
static_assert(sizeof(void*) != 8 ||
                  sizeof(Device) == 2 * sizeof(std::string) + 16 + sizeof(JobVector),
              "Device changed: update put_device/get_device");
static_assert(sizeof(Job) == 40, "Job changed: records travel as 40-byte copies");

enum Record : std::uint8_t { kTypes = 1, kFile = 2, kJobs = 3, kFirstStep = 4 };

constexpr std::size_t kJobsHeader = 1 + 8 + 4;   // kind, file, count
constexpr std::size_t kTypesHeader = 1 + 4 + 4;  // kind, first, count

void put_device(ByteWriter& w, const Device& d) {
  w.put(static_cast<std::int32_t>(d.index));
  w.put(static_cast<std::int32_t>(d.machine));
  w.str(d.machine_name);
  w.put(static_cast<std::int32_t>(d.rank));
  w.str(d.path);
}

Device get_device(ByteReader& r) {
  Device d;
  d.index = r.get<std::int32_t>();
  d.machine = r.get<std::int32_t>();
  d.machine_name = r.str();
  d.rank = r.get<std::int32_t>();
  d.path = r.str();
  return d;
}

void put_stats(ByteWriter& w, const InputStats& s) {
  w.str(s.path);
  w.put(s.bytes);
  w.put(s.lines);
  w.put(s.matched);
  w.put(s.malformed);
  w.put(s.oversized);
  w.put(s.partial_last_line_bytes);
  w.str(s.error);
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
  return s;
}

}  // namespace

BatchEncoder::BatchEncoder(const Run& run, std::vector<std::size_t> global_index,
                           std::size_t max_bytes)
    : run_(run),
      global_index_(std::move(global_index)),
      max_bytes_(std::max<std::size_t>(max_bytes, kJobsHeader + sizeof(Job))),
      diagnostics_(run.devices.size()) {
  if (global_index_.size() != run.devices.size() || run.inputs.size() != run.devices.size()) {
    throw std::invalid_argument("BatchEncoder: one global index per device and input expected");
  }
  // Diagnostics carry their file's path; the scanner lists them by file.
  std::unordered_map<std::string_view, std::size_t> file_of_path;
  for (std::size_t i = 0; i < run.inputs.size(); ++i) file_of_path.emplace(run.inputs[i].path, i);
  for (const Diagnostic& d : run.diagnostics) {
    const auto it = file_of_path.find(d.path);
    diagnostics_[it == file_of_path.end() ? 0 : it->second].push_back(&d);
  }
}

void BatchEncoder::put_file_header(std::size_t file, std::string& out) const {
  ByteWriter w;
  w.put(static_cast<std::uint8_t>(kFile));
  w.put(static_cast<std::uint64_t>(global_index_[file]));
  put_device(w, run_.devices[file]);
  put_stats(w, run_.inputs[file]);
  w.put(static_cast<std::uint32_t>(diagnostics_[file].size()));
  for (const Diagnostic* d : diagnostics_[file]) {
    w.str(d->path);
    w.put(d->line);
    w.str(d->message);
  }
  w.put(static_cast<std::uint64_t>(run_.devices[file].jobs.size()));
  out = w.take();
}

bool BatchEncoder::next(std::string& message) {
  message.clear();
  const auto room = [&] { return max_bytes_ - std::min(max_bytes_, message.size()); };

  // The type table, in as many pieces as it takes.
  const auto& names = run_.types.names();
  while (next_type_ < names.size()) {
    if (room() < kTypesHeader + 4 + names[next_type_].size() && !message.empty()) return true;
    ByteWriter w;
    w.put(static_cast<std::uint8_t>(kTypes));
    w.put(static_cast<std::uint32_t>(next_type_));
    std::size_t count = 0;
    ByteWriter body;
    while (next_type_ + count < names.size()) {
      const std::string& name = names[next_type_ + count];
      if (count > 0 && message.size() + kTypesHeader + body.size() + 4 + name.size() > max_bytes_)
        break;
      body.str(name);
      ++count;
    }
    w.put(static_cast<std::uint32_t>(count));
    message += w.data();
    message += body.data();
    next_type_ += count;
  }

  std::string header;
  while (next_file_ < run_.devices.size()) {
    if (!header_sent_) {
      put_file_header(next_file_, header);
      if (!message.empty() && header.size() > room()) return true;
      message += header;
      header_sent_ = true;
      next_job_ = 0;
    }
    const JobVector& jobs = run_.devices[next_file_].jobs;
    while (next_job_ < jobs.size()) {
      if (room() < kJobsHeader + sizeof(Job)) return true;
      const std::size_t n = std::min((room() - kJobsHeader) / sizeof(Job), jobs.size() - next_job_);
      ByteWriter w;
      w.put(static_cast<std::uint8_t>(kJobs));
      w.put(static_cast<std::uint64_t>(global_index_[next_file_]));
      w.put(static_cast<std::uint32_t>(n));
      message += w.data();
      message.append(reinterpret_cast<const char*>(jobs.data() + next_job_), n * sizeof(Job));
      next_job_ += n;
    }
    ++next_file_;
    header_sent_ = false;
  }

  if (!first_step_sent_) {
    if (run_.first_step) {
      if (room() < 9 && !message.empty()) return true;
      ByteWriter w;
      w.put(static_cast<std::uint8_t>(kFirstStep));
      w.put(static_cast<std::int64_t>(*run_.first_step));
      message += w.data();
    }
    first_step_sent_ = true;
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

void RunAssembler::add_message(int source, std::string_view message) {
  ByteReader r(message);
  while (!r.done()) {
    const auto kind = r.get<std::uint8_t>();
    switch (kind) {
      case kTypes: {
        auto& names = types_[source];
        const auto first = r.get<std::uint32_t>();
        const auto count = r.get<std::uint32_t>();
        if (first != names.size()) throw WireError("job types out of order");
        for (std::uint32_t i = 0; i < count; ++i) names.push_back(r.str());
        break;
      }
      case kFile: {
        Slot& s = slot(r.get<std::uint64_t>());
        if (s.seen) throw WireError(fmt::format("file {} arrived twice", s.device.path));
        s.seen = true;
        s.source = source;
        s.device = get_device(r);
        s.stats = get_stats(r);
        const auto diagnostics = r.get<std::uint32_t>();
        for (std::uint32_t i = 0; i < diagnostics; ++i) {
          Diagnostic d;
          d.path = r.str();
          d.line = r.get<std::uint64_t>();
          d.message = r.str();
          s.diagnostics.push_back(std::move(d));
        }
        s.expected_jobs = r.get<std::uint64_t>();
        if (s.expected_jobs > std::numeric_limits<std::size_t>::max() / sizeof(Job)) {
          throw WireError("impossible job count");
        }
        s.device.jobs.reserve(s.expected_jobs);
        break;
      }
      case kJobs: {
        Slot& s = slot(r.get<std::uint64_t>());
        const auto count = r.get<std::uint32_t>();
        if (!s.seen || s.source != source || s.device.jobs.size() + count > s.expected_jobs) {
          throw WireError("jobs of a file arrived out of order");
        }
        const char* bytes = r.bytes(std::size_t{count} * sizeof(Job));
        const std::size_t first = s.device.jobs.size();
        s.device.jobs.resize(first + count);
        std::memcpy(static_cast<void*>(s.device.jobs.data() + first), bytes,
                    std::size_t{count} * sizeof(Job));
        break;
      }
      case kFirstStep: {
        const auto step = r.get<std::int64_t>();
        if (!first_step_ || step < *first_step_) first_step_ = step;
        break;
      }
      default:
        throw WireError(fmt::format("unknown record kind {}", kind));
    }
  }
}

void RunAssembler::add_local(int source, Run&& run, const std::vector<std::size_t>& global_index) {
  if (global_index.size() != run.devices.size() || run.inputs.size() != run.devices.size()) {
    throw std::invalid_argument("RunAssembler: one global index per device and input expected");
  }
  types_[source] = run.types.names();
  std::unordered_map<std::string, std::size_t> file_of_path;
  for (std::size_t i = 0; i < run.inputs.size(); ++i) file_of_path.emplace(run.inputs[i].path, i);
  for (std::size_t i = 0; i < run.devices.size(); ++i) {
    Slot& s = slot(global_index[i]);
    if (s.seen) throw WireError(fmt::format("file {} arrived twice", run.devices[i].path));
    s.seen = true;
    s.source = source;
    s.expected_jobs = run.devices[i].jobs.size();
    s.device = std::move(run.devices[i]);
    s.stats = std::move(run.inputs[i]);
  }
  for (Diagnostic& d : run.diagnostics) {
    const auto it = file_of_path.find(d.path);
    slots_[global_index[it == file_of_path.end() ? 0 : it->second]].diagnostics.push_back(
        std::move(d));
  }
  if (run.first_step && (!first_step_ || *run.first_step < *first_step_))
    first_step_ = run.first_step;
}

std::size_t RunAssembler::missing() const {
  return static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) {
    return !s.seen || s.device.jobs.size() != s.expected_jobs;
  }));
}

Run RunAssembler::finish() {
  if (const std::size_t n = missing(); n > 0) {
    throw WireError(fmt::format("{} of {} input files did not arrive complete", n, slots_.size()));
  }
  Run run;
  // Type ids are given in global input order, whatever rank read what, so
  // that the merged run does not depend on the number of ranks.
  constexpr TypeId kUnmapped = std::numeric_limits<TypeId>::max();
  std::map<int, std::vector<TypeId>> maps;
  for (auto& [source, names] : types_) maps[source].assign(names.size(), kUnmapped);
  for (Slot& s : slots_) {
    const auto& names = types_[s.source];
    auto& map = maps[s.source];
    map.resize(names.size(), kUnmapped);
    for (Job& job : s.device.jobs) {
      if (job.type >= names.size()) throw WireError("job with an unknown type id");
      TypeId& to = map[job.type];
      if (to == kUnmapped) to = run.types.intern(names[job.type]);
      job.type = to;
    }
    run.devices.push_back(std::move(s.device));
    run.inputs.push_back(std::move(s.stats));
    for (Diagnostic& d : s.diagnostics) run.diagnostics.push_back(std::move(d));
  }
  run.first_step = first_step_;
  slots_.clear();
  types_.clear();
  run.finalize();
  return run;
}

}  // namespace pipescope::distributed

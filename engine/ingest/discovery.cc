#include "ingest/discovery.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "ingest/input_formats.h"
#include "ingest/torch_trace_reader.h"
#include "records/ivl_reader.h"

namespace pipescope {

namespace fs = std::filesystem;

namespace {

/// The number after `prefix` when the whole name is prefix + digits, else -1.
long numbered_name(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return -1;
  std::string_view digits = name.substr(prefix.size());
  if (digits.size() > 9) return -1;
  long value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return -1;
  return value;
}

struct Machine {
  std::string name;              // InputFile::machine_name
  std::vector<InputFile> ranks;  // machine/device filled in at the end
  // Where the machine goes in the run (machine_order_less): the machine
  // folder's name (for .ivl files the machine name in their header) and the
  // folder's full path; `last` for .ivl files whose header cannot be read.
  std::string order_name;
  std::string folder;
  bool last = false;
};

/// The absolute, normalised form of `path` without a trailing separator.
fs::path full_path(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) p = path;
  p = p.lexically_normal();
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "run/machine0/"
  return p;
}

/// The machine name a folder stands for: its name when it is `machineK`.
std::string machine_name_of(const fs::path& folder) {
  const std::string name = folder.filename().string();
  return numbered_name(name, "machine") >= 0 ? name : std::string();
}

bool machine_order_less(const Machine& a, const Machine& b) {
  if (a.last != b.last) return b.last;
  if (const int c = natural_compare(a.order_name, b.order_name); c != 0) return c < 0;
  return a.folder < b.folder;
}

std::uint64_t file_size_or_zero(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

/// Lists the entries of `dir` or throws InputError saying why not.
std::vector<fs::directory_entry> list_folder(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw InputError(fmt::format("cannot list folder {}: {}", dir.string(), ec.message()));
  std::vector<fs::directory_entry> entries;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    entries.push_back(*it);
  }
  if (ec) throw InputError(fmt::format("cannot list folder {}: {}", dir.string(), ec.message()));
  return entries;
}

bool is_regular(const fs::directory_entry& entry) {
  std::error_code ec;
  return entry.is_regular_file(ec);  // follows symlinks; a dangling link is not a file
}

bool is_folder(const fs::directory_entry& entry) {
  std::error_code ec;
  return entry.is_directory(ec);
}

/// A symbolic link that does not resolve (dangling, or a loop). Such a
/// `workerlog.N` is kept as an input so that the scan reports why it cannot be
/// opened ("Too many levels of symbolic links"), instead of the rank
/// silently vanishing from the run.
bool is_broken_link(const fs::directory_entry& entry) {
  std::error_code ec;
  if (!entry.is_symlink(ec) || ec) return false;
  return !fs::exists(entry.path(), ec);  // ELOOP or ENOENT through the link
}

/// The worker logs (and Paddle dygraph records) directly inside `dir`,
/// ordered by rank. The concatenated `pipeline_profile.json` is taken only
/// when no per-rank record file is there: it repeats their records.
std::vector<InputFile> worker_logs_in(const std::vector<fs::directory_entry>& entries) {
  std::vector<InputFile> logs;
  std::vector<InputFile> concatenations;
  bool per_rank_records = false;
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    int rank = worker_log_rank(name);
    InputFormat format = InputFormat::worker_log;
    const bool concatenation = rank < 0 && is_dygraph_concatenation(name);
    if (rank < 0) {
      rank = dygraph_record_rank(name);
      format = InputFormat::paddle_dygraph;
      per_rank_records = per_rank_records || rank >= 0;
    }
    if ((rank < 0 && !concatenation) || !(is_regular(entry) || is_broken_link(entry))) continue;
    InputFile file;
    file.path = entry.path().string();
    file.format = format;
    file.size_bytes = file_size_or_zero(entry.path());
    file.rank = std::max(rank, 0);
    (concatenation ? concatenations : logs).push_back(std::move(file));
  }
  if (!per_rank_records && !concatenations.empty()) {
    for (InputFile& file : concatenations) {
      file.rank = static_cast<int>(logs.size());
      logs.push_back(std::move(file));
    }
  }
  std::sort(logs.begin(), logs.end(),
            [](const InputFile& a, const InputFile& b) { return a.rank < b.rank; });
  return logs;
}

bool is_ivl_file(const fs::directory_entry& entry) {
  return format_by_name(entry.path().filename().string()) == InputFormat::ivl && is_regular(entry);
}

/// Places .ivl files by their headers: files naming one machine index form
/// one machine (ordered by that index), ranks from the header. A file whose
/// header cannot be read goes to a last machine of its own kind, so that the
/// importer reports it and the other files are still analysed.
/// `machine_of_key` maps header machine index -> position in `machines`.
void add_ivl_files(std::vector<fs::path> files, std::vector<Machine>& machines,
                   std::map<long, std::size_t>& machine_of_key) {
  std::sort(files.begin(), files.end());
  constexpr long kUnreadable = LONG_MAX;
  std::map<long, std::vector<InputFile>> found;
  std::map<long, std::string> names;
  for (const auto& path : files) {
    InputFile input;
    input.path = path.string();
    input.format = InputFormat::ivl;
    input.size_bytes = file_size_or_zero(path);
    std::string error;
    const auto header = ivl::read_header(input.path, error);
    const long key = header ? header->machine : kUnreadable;
    auto& ranks = found[key];
    input.rank = header ? header->rank : static_cast<int>(ranks.size());
    if (header && names[key].empty()) names[key] = header->machine_name;
    ranks.push_back(std::move(input));
  }
  for (auto& [key, ranks] : found) {
    auto [it, inserted] = machine_of_key.try_emplace(key, machines.size());
    if (inserted) {
      Machine machine;
      machine.name = names[key];
      machine.order_name = names[key].empty() ? fmt::format("machine{}", key) : names[key];
      machine.folder = full_path(ranks.front().path).parent_path().string();
      machine.last = key == kUnreadable;
      machines.push_back(std::move(machine));
    }
    for (auto& input : ranks) machines[it->second].ranks.push_back(std::move(input));
  }
}

bool is_torch_trace(const fs::directory_entry& entry) {
  return format_by_name(entry.path().filename().string()) == InputFormat::torch_trace &&
         is_regular(entry);
}

Machine folder_machine(const fs::path& folder, std::vector<InputFile> ranks);

/// Places PyTorch profiler traces: the traces of one folder are one
/// machine, ordered by the global rank their `distributedInfo` names (rank
/// within the machine: that rank less the folder's lowest); a trace without
/// one takes the next free rank, in name order.
void add_trace_files(std::vector<fs::path> files, std::vector<Machine>& machines,
                     std::map<std::string, std::size_t>& machine_of_parent) {
  std::sort(files.begin(), files.end());
  std::set<std::size_t> touched;
  for (const auto& path : files) {
    const fs::path parent = full_path(path).parent_path();
    auto [it, inserted] = machine_of_parent.try_emplace(parent.string(), machines.size());
    if (inserted) machines.push_back(folder_machine(parent, {}));
    InputFile input;
    input.path = path.string();
    input.format = InputFormat::torch_trace;
    input.size_bytes = file_size_or_zero(path);
    input.rank = torch_trace_rank(input.path).value_or(-1);
    machines[it->second].ranks.push_back(std::move(input));
    touched.insert(it->second);
  }
  // Ranks within the machine: the global ranks less the machine's lowest
  // (a gap stays a gap).
  for (const std::size_t m : touched) {
    int lowest = INT_MAX, next = 0;
    for (const InputFile& f : machines[m].ranks) {
      if (f.format == InputFormat::torch_trace && f.rank >= 0) lowest = std::min(lowest, f.rank);
    }
    for (InputFile& f : machines[m].ranks) {
      if (f.format == InputFormat::torch_trace && f.rank >= 0) f.rank -= lowest;
      next = std::max(next, f.rank + 1);
    }
    for (InputFile& f : machines[m].ranks) {
      if (f.rank < 0) f.rank = next++;
    }
  }
}

/// The machine of the worker logs `ranks` found in `folder`.
Machine folder_machine(const fs::path& folder, std::vector<InputFile> ranks) {
  const fs::path full = full_path(folder);
  Machine machine;
  machine.name = machine_name_of(full);
  machine.ranks = std::move(ranks);
  machine.order_name = full.filename().string();
  machine.folder = full.string();
  return machine;
}

void add_folder(const fs::path& dir, std::vector<Machine>& machines) {
  const auto entries = list_folder(dir);
  std::vector<fs::path> ivl_files, trace_files;
  for (const auto& entry : entries) {
    if (is_ivl_file(entry)) ivl_files.push_back(entry.path());
    if (is_torch_trace(entry)) trace_files.push_back(entry.path());
  }
  auto direct = worker_logs_in(entries);
  const bool has_direct = !direct.empty();
  if (has_direct) machines.push_back(folder_machine(dir, std::move(direct)));
  const std::size_t before = machines.size();
  for (const auto& entry : entries) {
    // machineK/ sub-folders always; a sub-folder of another name (a host name:
    // node-a/, gpu17/) when this folder holds no worker log of its own (then
    // it is a run folder, not a machine with stray sub-folders).
    const std::string name = entry.path().filename().string();
    const bool machine_k = numbered_name(name, "machine") >= 0;
    if (!is_folder(entry) || name.starts_with('.') || (!machine_k && has_direct)) continue;
    const auto listing = list_folder(entry.path());
    for (const auto& sub : listing) {
      if (is_ivl_file(sub)) ivl_files.push_back(sub.path());
      if (is_torch_trace(sub)) trace_files.push_back(sub.path());
    }
    auto logs = worker_logs_in(listing);
    if (!logs.empty()) {
      machines.push_back(folder_machine(entry.path(), std::move(logs)));
      machines.back().name = name;  // machineK, or the host name
    }
  }
  std::map<long, std::size_t> ivl_machines;  // .ivl machines of this folder
  add_ivl_files(std::move(ivl_files), machines, ivl_machines);
  std::map<std::string, std::size_t> trace_machines;  // trace folders of this folder
  add_trace_files(std::move(trace_files), machines, trace_machines);
  if (machines.size() == before && !has_direct) {
    throw InputError(fmt::format(
        "no worker logs in {}: looked for files named workerlog.N (N = rank), *.ivl, "
        "*.pt.trace.json[.gz] or Paddle dygraph records (profile_record_tmp_file_for_rank_N, "
        "pipeline_profile.json) in it, or in its sub-folders (machineK/, or one per host)",
        dir.string()));
  }
}

void add_file(const fs::path& file, InputFormat format, std::vector<Machine>& machines,
              std::map<std::string, std::size_t>& machine_of_parent) {
  const fs::path parent = full_path(file).parent_path();
  auto [it, inserted] = machine_of_parent.try_emplace(parent.string(), machines.size());
  if (inserted) machines.push_back(folder_machine(parent, {}));
  Machine& machine = machines[it->second];
  InputFile input;
  input.path = file.string();
  input.format = format;
  input.size_bytes = file_size_or_zero(file);
  const std::string name = file.filename().string();
  const int rank =
      format == InputFormat::paddle_dygraph ? dygraph_record_rank(name) : worker_log_rank(name);
  input.rank = rank >= 0 ? rank : static_cast<int>(machine.ranks.size());
  machine.ranks.push_back(std::move(input));
}

/// A file given directly: its name decides, else its first bytes.
InputFormat format_of_given_file(const fs::path& path) {
  if (const auto by_name = format_by_name(path.filename().string())) return *by_name;
  return format_by_content(path.string());
}

/// The sources a run is read from. Worker logs and .ivl records (what
/// `convert` makes of them) share machine and rank numbering and mix freely;
/// Paddle dygraph records and PyTorch traces carry nothing that could tell
/// their devices apart from another source's, so a run mixing them with
/// anything else is refused rather than merged into one pipeline.
enum class SourceFamily { static_graph, paddle_dygraph, torch_trace };

SourceFamily family_of(InputFormat format) {
  switch (format) {
    case InputFormat::paddle_dygraph:
      return SourceFamily::paddle_dygraph;
    case InputFormat::torch_trace:
      return SourceFamily::torch_trace;
    default:
      return SourceFamily::static_graph;
  }
}

std::string_view family_name(SourceFamily family) {
  switch (family) {
    case SourceFamily::paddle_dygraph:
      return "a Paddle dygraph pipeline record file";
    case SourceFamily::torch_trace:
      return "a PyTorch profiler trace";
    default:
      return "a worker log or .ivl record file";
  }
}

/// Refuses a run read from two families of sources, and per-rank dygraph
/// records given together with their concatenation.
void refuse_mixed_formats(const std::vector<Machine>& machines) {
  const InputFile* first = nullptr;
  const InputFile* concatenation = nullptr;
  const InputFile* per_rank = nullptr;
  for (const Machine& machine : machines) {
    for (const InputFile& input : machine.ranks) {
      if (!first) first = &input;
      if (family_of(input.format) != family_of(first->format)) {
        throw InputError(fmt::format(
            "{} is {} and {} is {}: one run is read from one kind of source (nothing in these "
            "files says that they describe different pipelines); analyse them separately",
            first->path, family_name(family_of(first->format)), input.path,
            family_name(family_of(input.format))));
      }
      if (input.format != InputFormat::paddle_dygraph) continue;
      const std::string name = fs::path(input.path).filename().string();
      if (dygraph_record_rank(name) >= 0) {
        if (!per_rank) per_rank = &input;
      } else if (!concatenation) {
        concatenation = &input;
      }
    }
  }
  if (per_rank && concatenation) {
    throw InputError(fmt::format(
        "{} concatenates the per-rank records such as {}: give one or the other, not both",
        concatenation->path, per_rank->path));
  }
}

}  // namespace

int dygraph_record_rank(std::string_view file_name) {
  for (const std::string_view suffix : {".gz", ".zst"}) {
    if (file_name.ends_with(suffix)) {
      file_name.remove_suffix(suffix.size());
      break;
    }
  }
  return static_cast<int>(numbered_name(file_name, "profile_record_tmp_file_for_rank_"));
}

bool is_dygraph_concatenation(std::string_view file_name) {
  return file_name == "pipeline_profile.json" || file_name == "pipeline_profile.json.gz" ||
         file_name == "pipeline_profile.json.zst";
}

int natural_compare(std::string_view a, std::string_view b) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && is_digit(a[ei])) ++ei;
      while (ej < b.size() && is_digit(b[ej])) ++ej;
      std::string_view x = a.substr(i, ei - i), y = b.substr(j, ej - j);
      while (x.size() > 1 && x.front() == '0') x.remove_prefix(1);
      while (y.size() > 1 && y.front() == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
      if (const int c = x.compare(y); c != 0) return c < 0 ? -1 : 1;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j])
        return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]) ? -1 : 1;
      ++i;
      ++j;
    }
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

int worker_log_rank(std::string_view file_name) {
  // Compressed logs (workerlog.3.gz, workerlog.3.zst) are the same rank.
  for (const std::string_view suffix : {".gz", ".zst"}) {
    if (file_name.ends_with(suffix)) {
      file_name.remove_suffix(suffix.size());
      break;
    }
  }
  return static_cast<int>(numbered_name(file_name, "workerlog."));
}

std::vector<InputFile> discover_inputs(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("no input paths given");
  std::vector<Machine> machines;
  std::map<std::string, std::size_t> machine_of_parent;  // files given directly
  std::map<long, std::size_t> ivl_machine_of_key;        // .ivl files given directly
  std::vector<fs::path> direct_traces;                   // traces given directly
  for (const auto& text : paths) {
    const fs::path path(text);
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) {
      throw InputError(
          fmt::format("{}: {}", text, ec ? ec.message() : std::string("no such file or folder")));
    }
    if (fs::is_directory(status)) {
      add_folder(path, machines);
    } else if (const InputFormat format = format_of_given_file(path); format == InputFormat::ivl) {
      // A file given directly is sniffed when its name says nothing: records
      // saved under another name are still read as records.
      add_ivl_files({path}, machines, ivl_machine_of_key);
    } else if (format == InputFormat::torch_trace) {
      direct_traces.push_back(path);
    } else {
      add_file(path, format, machines, machine_of_parent);
    }
  }
  std::map<std::string, std::size_t> trace_machine_of_parent;
  add_trace_files(std::move(direct_traces), machines, trace_machine_of_parent);
  refuse_mixed_formats(machines);

  // One order whatever the order of the arguments: a shell glob puts node10
  // before node2, and a reversed list would otherwise renumber the machines.
  std::stable_sort(machines.begin(), machines.end(), machine_order_less);

  std::vector<InputFile> inputs;
  std::set<std::string> seen;
  int device = 0;
  for (std::size_t m = 0; m < machines.size(); ++m) {
    auto& ranks = machines[m].ranks;
    std::stable_sort(ranks.begin(), ranks.end(),
                     [](const InputFile& a, const InputFile& b) { return a.rank < b.rank; });
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (i > 0 && ranks[i].rank == ranks[i - 1].rank) {
        throw InputError(fmt::format("{} and {} are both rank {} of one machine", ranks[i - 1].path,
                                     ranks[i].path, ranks[i].rank));
      }
      std::error_code ec;
      const auto canonical = fs::weakly_canonical(ranks[i].path, ec).string();
      if (!seen.insert(ec ? ranks[i].path : canonical).second) {
        throw InputError(fmt::format("{} is given twice", ranks[i].path));
      }
      InputFile input = std::move(ranks[i]);
      input.machine = static_cast<int>(m);
      input.machine_name = machines[m].name;
      input.device = device++;
      inputs.push_back(std::move(input));
    }
  }
  return inputs;
}

std::vector<int> parse_device_list(std::string_view text) {
  std::vector<int> devices;
  auto bad = [&] {
    return InputError(fmt::format(
        "bad device list '{}': expected device indices like 0,2,3 or ranges like 0-3", text));
  };
  auto parse_int = [&](std::string_view s) {
    int value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || value < 0) throw bad();
    return value;
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      devices.push_back(parse_int(item));
    } else {
      const int first = parse_int(item.substr(0, dash));
      const int last = parse_int(item.substr(dash + 1));
      if (last < first || last - first > 1'000'000) throw bad();
      for (int d = first; d <= last; ++d) devices.push_back(d);
    }
    pos = comma + 1;
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  return devices;
}

std::vector<InputFile> select_devices(std::vector<InputFile> inputs,
                                      const std::vector<int>& devices) {
  std::vector<InputFile> kept;
  for (const int d : devices) {
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [d](const InputFile& f) { return f.device == d; });
    if (it == inputs.end()) {
      throw InputError(fmt::format("--devices: there is no device {} (found {} device{}: 0-{})", d,
                                   inputs.size(), inputs.size() == 1 ? "" : "s",
                                   inputs.empty() ? 0 : inputs.size() - 1));
    }
    kept.push_back(*it);
  }
  return kept;
}

}  // namespace pipescope

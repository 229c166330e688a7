#include "ingest/discovery.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>

#include "ingest/input_formats.h"

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

/// The row of a file the table claims by its name, if any.
const InputFormatSpec* row_by_name(const fs::path& path) {
  const auto format = format_by_name(path.filename().string());
  return format ? &input_format_spec(*format) : nullptr;
}

/// Files of a folder that no format claims by name but whose first bytes are
/// an input format's (a profiler trace a user's handler saved as
/// `trace_rank0.json`): discovery reads folders by name only, so these are
/// said, never read in silence. Only JSON-named files are sniffed (a few
/// hundred bytes each, at most kMaxSniffed a folder): the formats that are
/// recognised by content are JSON, and a folder of logs may hold anything.
std::vector<fs::path> unnamed_inputs_in(const std::vector<fs::directory_entry>& entries) {
  constexpr std::size_t kMaxSniffed = 256;
  std::vector<fs::path> found;
  std::size_t sniffed = 0;
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    const bool json_named = name.ends_with(".json") || name.ends_with(".json.gz") ||
                            name.ends_with(".json.zst") || name.ends_with(".json.zstd");
    if (!json_named || name.starts_with('.') || !is_regular(entry) || row_by_name(entry.path())) {
      continue;
    }
    if (++sniffed > kMaxSniffed) break;
    const InputFormat format = format_by_content(entry.path().string());
    if (format != input_formats().back().format) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

/// The files of Placement::folder_ranks formats directly inside a folder,
/// ordered by rank; the files whose names give no rank after them, by name
/// (numbers as numbers: the listing's order is the file system's), of a
/// format whose rankless file concatenates the per-rank ones only when no
/// per-rank file of it is there, as it repeats their records.
std::vector<InputFile> ranked_files_in(const std::vector<fs::directory_entry>& entries) {
  std::vector<InputFile> logs;
  std::vector<InputFile> rankless;
  std::set<InputFormat> per_rank;  // formats with a per-rank file here
  for (const auto& entry : entries) {
    const InputFormatSpec* row = row_by_name(entry.path());
    if (!row || row->placement != Placement::folder_ranks) continue;
    const FileOrigin origin = row->origin(entry.path().string());
    const int rank = origin.rank;
    if (rank >= 0) per_rank.insert(row->format);
    if (!(is_regular(entry) || is_broken_link(entry))) continue;
    InputFile file;
    file.path = entry.path().string();
    file.format = row->format;
    file.size_bytes = file_size_or_zero(entry.path());
    file.rank = std::max(rank, 0);
    file.ranks = std::max(origin.ranks, 1);
    (rank < 0 ? rankless : logs).push_back(std::move(file));
  }
  std::sort(rankless.begin(), rankless.end(), [](const InputFile& a, const InputFile& b) {
    const int c =
        natural_compare(fs::path(a.path).filename().string(), fs::path(b.path).filename().string());
    return c != 0 ? c < 0 : a.path < b.path;
  });
  for (InputFile& file : rankless) {
    if (input_format_spec(file.format).rankless_concatenates && per_rank.count(file.format)) {
      continue;
    }
    file.rank = static_cast<int>(logs.size());
    logs.push_back(std::move(file));
  }
  std::sort(logs.begin(), logs.end(),
            [](const InputFile& a, const InputFile& b) { return a.rank < b.rank; });
  return logs;
}

/// Files placed by what they say (Placement::named_machine and
/// folder_global_ranks), gathered over a folder and its sub-folders and
/// placed together.
struct SelfPlaced {
  std::vector<fs::path> named_machine;
  std::vector<fs::path> global_ranks;

  void add(const fs::directory_entry& entry) {
    const InputFormatSpec* row = row_by_name(entry.path());
    if (!row || !is_regular(entry)) return;
    if (row->placement == Placement::named_machine) named_machine.push_back(entry.path());
    if (row->placement == Placement::folder_global_ranks) global_ranks.push_back(entry.path());
  }
};

/// The format of a file given directly: its name decides, else its first bytes.
InputFormat format_of_given_file(const fs::path& path) {
  if (const auto by_name = format_by_name(path.filename().string())) return *by_name;
  return format_by_content(path.string());
}

/// Places files that name their machine (.ivl headers): files naming one
/// machine index form one machine (ordered by that index), ranks from the
/// file. A file that cannot say goes to a last machine of its own kind, so
/// that its reader reports it and the other files are still analysed.
/// `machine_of_key` maps machine index -> position in `machines`.
void add_named_machine_files(std::vector<fs::path> files, std::vector<Machine>& machines,
                             std::map<long, std::size_t>& machine_of_key) {
  std::sort(files.begin(), files.end());
  constexpr long kUnreadable = LONG_MAX;
  std::map<long, std::vector<InputFile>> found;
  std::map<long, std::string> names;
  for (const auto& path : files) {
    InputFile input;
    input.path = path.string();
    input.format = format_of_given_file(path);
    input.size_bytes = file_size_or_zero(path);
    const FileOrigin origin = input_format_spec(input.format).origin(input.path);
    const long key = origin.machine.value_or(kUnreadable);
    auto& ranks = found[key];
    input.rank = origin.machine ? origin.rank : static_cast<int>(ranks.size());
    input.ranks = std::max(origin.ranks, 1);
    if (origin.machine && names[key].empty()) names[key] = origin.machine_name;
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

Machine folder_machine(const fs::path& folder, std::vector<InputFile> ranks);

/// The process that wrote a PyTorch trace, from the name torch.profiler's
/// tensorboard_trace_handler gives it: `<host>_<pid>.<stamp>.pt.trace.json`
/// (`.gz`), the host being the text before the last `_` ahead of the pid
/// (host names may hold `_`), the stamp the time in ms or ns; nullopt for
/// any other name.
struct TraceWorker {
  std::string host;
  std::string process;  // host_pid
};
std::optional<TraceWorker> trace_worker(const fs::path& path) {
  std::string name = path.filename().string();
  for (const std::string_view suffix : {".pt.trace.json.gz", ".pt.trace.json"}) {
    if (name.ends_with(suffix)) {
      name.resize(name.size() - suffix.size());
      break;
    }
  }
  const auto digits = [](std::string_view t) {
    return !t.empty() &&
           std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  // The stamp is the time the handler wrote the file: ms since the epoch (13
  // digits) or ns (19). Fewer digits are some other naming (`rank-0.1102`).
  const std::size_t dot = name.rfind('.');
  if (dot == std::string::npos || !digits(std::string_view(name).substr(dot + 1)) ||
      name.size() - dot - 1 < 12) {
    return {};
  }
  const std::string worker = name.substr(0, dot);
  const std::size_t underscore = worker.rfind('_');
  if (underscore == std::string::npos || underscore == 0 ||
      !digits(std::string_view(worker).substr(underscore + 1))) {
    return {};
  }
  return TraceWorker{worker.substr(0, underscore), worker};
}

/// Places files that name their global rank (PyTorch traces'
/// `distributedInfo`): the files of one folder are one machine, or, when
/// their names (trace_worker) name several hosts, as Megatron writes every
/// host's traces into one folder, one machine per host, named after it and
/// ordered as machine folders are. Within a machine, files are ordered by
/// that rank (rank within the machine: that rank less the machine's
/// lowest); a file without one is the rank of another file of its process
/// (a later profiling window), else takes the next free rank, in name order.
void add_global_rank_files(std::vector<fs::path> files, std::vector<Machine>& machines,
                           std::map<std::string, std::size_t>& machine_of_parent) {
  std::sort(files.begin(), files.end());
  // The hosts each folder's file names name.
  std::map<std::string, std::set<std::string>> hosts_of_folder;
  for (const auto& path : files) {
    if (const auto w = trace_worker(path)) {
      hosts_of_folder[full_path(path).parent_path().string()].insert(w->host);
    }
  }
  std::set<std::size_t> touched;
  std::map<std::string, int> rank_of_process;  // host_pid -> the global rank a file gives
  for (const auto& path : files) {
    const fs::path parent = full_path(path).parent_path();
    const auto worker = trace_worker(path);
    const bool by_host = worker && hosts_of_folder[parent.string()].size() > 1;
    const std::string key = by_host ? parent.string() + '\n' + worker->host : parent.string();
    auto [it, inserted] = machine_of_parent.try_emplace(key, machines.size());
    if (inserted) {
      machines.push_back(folder_machine(parent, {}));
      if (by_host) {
        machines.back().name = worker->host;
        machines.back().order_name = worker->host;
      }
    }
    InputFile input;
    input.path = path.string();
    input.format = format_of_given_file(path);
    input.size_bytes = file_size_or_zero(path);
    const FileOrigin origin = input_format_spec(input.format).origin(input.path);
    input.rank = origin.rank;
    input.ranks = std::max(origin.ranks, 1);
    if (worker && input.rank >= 0) rank_of_process.emplace(worker->process, input.rank);
    machines[it->second].ranks.push_back(std::move(input));
    touched.insert(it->second);
  }
  // A window's file without a rank: the rank of its process's other files.
  for (const std::size_t m : touched) {
    for (InputFile& f : machines[m].ranks) {
      if (f.rank >= 0) continue;
      if (const auto w = trace_worker(f.path)) {
        if (const auto r = rank_of_process.find(w->process); r != rank_of_process.end()) {
          f.rank = r->second;
        }
      }
    }
  }
  // Ranks within the machine: the global ranks less the machine's lowest
  // (a gap stays a gap).
  auto global = [](const InputFile& f) {
    return f.rank >= 0 && input_format_spec(f.format).placement == Placement::folder_global_ranks;
  };
  for (const std::size_t m : touched) {
    int lowest = INT_MAX, next = 0;
    for (const InputFile& f : machines[m].ranks) {
      if (global(f)) lowest = std::min(lowest, f.rank);
    }
    for (InputFile& f : machines[m].ranks) {
      if (global(f)) f.rank -= lowest;
      next = std::max(next, f.rank + 1);
    }
    // Files of one process without a rank: one rank, its windows.
    std::map<std::string, int> free_rank_of_process;
    for (InputFile& f : machines[m].ranks) {
      if (f.rank >= 0) continue;
      const auto w = trace_worker(f.path);
      if (!w) {
        f.rank = next++;
        continue;
      }
      const auto [it, fresh] = free_rank_of_process.try_emplace(w->process, next);
      if (fresh) ++next;
      f.rank = it->second;
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

/// Input files directly in a listing, by name.
std::size_t inputs_in(const std::vector<fs::directory_entry>& listing) {
  std::size_t n = 0;
  for (const auto& entry : listing) n += row_by_name(entry.path()) != nullptr && is_regular(entry);
  return n;
}

/// Sub-folders of a listing that hold input files (by name), with how many.
std::vector<std::pair<fs::path, std::size_t>> folders_with_inputs(
    const std::vector<fs::directory_entry>& listing) {
  std::vector<std::pair<fs::path, std::size_t>> out;
  for (const auto& entry : listing) {
    if (!is_folder(entry)) continue;
    std::error_code ec;
    fs::directory_iterator it(entry.path(), ec);
    if (ec) continue;
    std::size_t n = 0;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      n += row_by_name(it->path()) != nullptr && is_regular(*it);
    }
    if (n > 0) out.emplace_back(entry.path(), n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// "2 files of an input format by their first bytes but not by their names
/// (a.json, b.json)": up to 4 names, then how many more.
std::string unnamed_files_text(const std::vector<fs::path>& files) {
  std::string list;
  for (std::size_t i = 0; i < files.size() && i < 4; ++i) {
    list += fmt::format("{}{}", i ? ", " : "", files[i].filename().string());
  }
  if (files.size() > 4) list += fmt::format(" and {} more", files.size() - 4);
  const bool one = files.size() == 1;
  return fmt::format("{} file{} of an input format by {} first bytes but not by {} name{} ({})",
                     files.size(), one ? "" : "s", one ? "its" : "their", one ? "its" : "their",
                     one ? "" : "s", list);
}

/// The folders discovery did not read, said once each (Warning folder_skipped),
/// and the files of a folder it read that it did not (Warning file_skipped).
class SkippedFolders {
 public:
  explicit SkippedFolders(std::vector<Warning>* out) : out_(out) {}
  /// A folder holding inputs that are not read, and why.
  void holding(const fs::path& folder, std::size_t inputs, std::string why) {
    if (!out_) return;
    out_->push_back({WarningCode::folder_skipped,
                     fmt::format("{} was not read although it holds {} input file{}: {}",
                                 folder.string(), inputs, inputs == 1 ? "" : "s", why),
                     -1, -1, static_cast<std::uint64_t>(inputs)});
  }
  /// Files of a read folder that hold an input format under a name no
  /// format claims (unnamed_inputs_in).
  void unnamed(const fs::path& folder, const std::vector<fs::path>& files) {
    if (!out_ || files.empty()) return;
    out_->push_back(
        {WarningCode::file_skipped,
         fmt::format("{} holds {}: not read; give {} directly to read {} with the rest",
                     folder.string(), unnamed_files_text(files), files.size() == 1 ? "it" : "them",
                     files.size() == 1 ? "it" : "them"),
         -1, -1, static_cast<std::uint64_t>(files.size())});
  }
  /// A folder without inputs (one warning for all of them, at the end).
  void empty(const fs::path& folder) { empty_.push_back(folder.string()); }
  /// A link to a folder that is read under its own name.
  void link(const fs::path& folder, const fs::path& target) {
    if (!out_) return;
    out_->push_back({WarningCode::folder_skipped,
                     fmt::format("{} is a link to {}, which is read once, under its own name",
                                 folder.string(), target.string()),
                     -1, -1, 0});
  }
  void finish() {
    if (!out_ || empty_.empty()) return;
    std::sort(empty_.begin(), empty_.end());
    std::string list;
    for (std::size_t i = 0; i < empty_.size() && i < 8; ++i) {
      list += fmt::format("{}{}", i ? ", " : "", empty_[i]);
    }
    if (empty_.size() > 8) list += fmt::format(" and {} more", empty_.size() - 8);
    out_->push_back(
        {WarningCode::folder_skipped,
         fmt::format("{} sub-folder{} without input files {} not read: {}", empty_.size(),
                     empty_.size() == 1 ? "" : "s", empty_.size() == 1 ? "was" : "were", list),
         -1, -1, static_cast<std::uint64_t>(empty_.size())});
  }

 private:
  std::vector<Warning>* out_;
  std::vector<std::string> empty_;
};

/// The canonical form of a path, or the path itself when it cannot be found.
std::string canonical_or_self(const fs::path& path) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(path, ec);
  return ec ? full_path(path).string() : c.string();
}

void add_folder(const fs::path& dir, std::vector<Machine>& machines, SkippedFolders& skipped) {
  const auto entries = list_folder(dir);
  SelfPlaced self_placed;
  for (const auto& entry : entries) self_placed.add(entry);
  auto direct = ranked_files_in(entries);
  const bool has_direct = !direct.empty();
  if (has_direct) machines.push_back(folder_machine(dir, std::move(direct)));
  const std::size_t before = machines.size();
  const std::vector<fs::path> unnamed = unnamed_inputs_in(entries);
  // Real folders first: a link to one of them is then read once, under the
  // folder's own name.
  std::vector<fs::directory_entry> folders;
  for (const auto& entry : entries) {
    if (is_folder(entry)) folders.push_back(entry);
  }
  std::stable_partition(folders.begin(), folders.end(), [](const fs::directory_entry& e) {
    std::error_code ec;
    return !e.is_symlink(ec);
  });
  std::map<std::string, fs::path> read_folders;  // canonical -> as found
  read_folders.emplace(canonical_or_self(dir), dir);
  for (const auto& entry : folders) {
    // machineK/ sub-folders always; a sub-folder of another name (a host name:
    // node-a/, gpu17/) when this folder holds no worker log of its own (then
    // it is a run folder, not a machine with stray sub-folders).
    const std::string name = entry.path().filename().string();
    const bool machine_k = numbered_name(name, "machine") >= 0;
    const auto listing = list_folder(entry.path());
    const std::size_t inputs = inputs_in(listing);
    if (name.starts_with('.')) {
      if (inputs > 0) skipped.holding(entry.path(), inputs, "hidden folders are not read");
      continue;
    }
    const std::string canonical = canonical_or_self(entry.path());
    if (const auto seen = read_folders.find(canonical); seen != read_folders.end()) {
      skipped.link(entry.path(), seen->second);
      continue;
    }
    read_folders.emplace(canonical, entry.path());
    if (inputs == 0) {
      // Inputs one level further down (an older run's machineK/ folders,
      // kept in previous/): not this run's machines.
      const auto deeper = folders_with_inputs(listing);
      if (deeper.empty()) {
        skipped.empty(entry.path());
      } else {
        std::size_t n = 0;
        for (const auto& [folder, count] : deeper) n += count;
        skipped.holding(entry.path(), n,
                        fmt::format("they are in its sub-folders ({}{}), a level below this run's "
                                    "machine folders (another run?); pass it to analyse them",
                                    deeper.front().first.filename().string(),
                                    deeper.size() > 1 ? ", ..." : ""));
      }
      continue;
    }
    // Sub-folders of a machine folder are never read.
    for (const auto& [folder, count] : folders_with_inputs(listing)) {
      skipped.holding(folder, count,
                      fmt::format("it is inside the machine folder {}, and sub-folders of a "
                                  "machine are not read; pass it to analyse it",
                                  entry.path().string()));
    }
    if (!machine_k && has_direct) {
      // Logs of this folder and of a host-named sub-folder: two machines,
      // or one machine twice (a copy, an older run)? Neither is read
      // silently; the user says which.
      const auto logs = ranked_files_in(listing);
      if (logs.empty()) continue;
      const auto ranks = [](const std::vector<InputFile>& files) {
        int lo = INT_MAX, hi = INT_MIN;
        for (const InputFile& f : files) lo = std::min(lo, f.rank), hi = std::max(hi, f.rank);
        return lo == hi ? fmt::format("rank {}", lo) : fmt::format("ranks {}-{}", lo, hi);
      };
      const std::string top = full_path(dir).string();
      throw InputError(fmt::format(
          "{} holds worker logs of its own ({}) and so does its sub-folder {} ({}): two "
          "machines, or one machine twice (a copy, an older run)? Nothing is read until you say "
          "which: pass '{}'/workerlog.* '{}' for two machines, or '{}'/workerlog.* for the "
          "top-level logs alone",
          top, ranks(machines[before - 1].ranks), full_path(entry.path()).string(), ranks(logs),
          top, full_path(entry.path()).string(), top));
    }
    for (const auto& sub : listing) self_placed.add(sub);
    skipped.unnamed(entry.path(), unnamed_inputs_in(listing));
    auto logs = ranked_files_in(listing);
    if (!logs.empty()) {
      machines.push_back(folder_machine(entry.path(), std::move(logs)));
      machines.back().name = name;  // machineK, or the host name
    }
  }
  std::map<long, std::size_t> named_machines;  // machines named in this folder's files
  add_named_machine_files(std::move(self_placed.named_machine), machines, named_machines);
  std::map<std::string, std::size_t> rank_folders;  // folders of globally ranked files
  add_global_rank_files(std::move(self_placed.global_ranks), machines, rank_folders);
  if (machines.size() == before && !has_direct) {
    // The fallback (the format a folder most often holds) first.
    const auto formats = input_formats();
    std::string looked_for(formats.back().looked_for);
    for (std::size_t i = 0; i + 1 < formats.size(); ++i) {
      looked_for += i + 2 == formats.size() ? " or " : ", ";
      looked_for += formats[i].looked_for;
    }
    throw InputError(fmt::format(
        "no worker logs in {}: looked for {} in it, or in its sub-folders (machineK/, or one per "
        "host){}",
        dir.string(), looked_for,
        unnamed.empty()
            ? std::string()
            : fmt::format("; it holds {}: give {} directly", unnamed_files_text(unnamed),
                          unnamed.size() == 1 ? "it" : "them")));
  }
  skipped.unnamed(dir, unnamed);
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
  const FileOrigin origin = input_format_spec(format).origin(input.path);
  input.rank = origin.rank >= 0 ? origin.rank : static_cast<int>(machine.ranks.size());
  input.ranks = std::max(origin.ranks, 1);
  machine.ranks.push_back(std::move(input));
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
      const InputFormatSpec& row = input_format_spec(input.format);
      const std::string_view first_family = input_format_spec(first->format).family;
      if (row.family != first_family) {
        throw InputError(fmt::format(
            "{} is {} and {} is {}: one run is read from one kind of source (nothing in these "
            "files says that they describe different pipelines); analyse them separately",
            first->path, first_family, input.path, row.family));
      }
      if (!row.rankless_concatenates) continue;
      if (row.origin(input.path).rank >= 0) {
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

std::vector<InputFile> discover_inputs(const std::vector<std::string>& paths,
                                       std::vector<Warning>* notes) {
  if (paths.empty()) throw InputError("no input paths given");
  SkippedFolders skipped(notes);
  std::vector<Machine> machines;
  std::map<std::string, std::size_t> machine_of_parent;  // files given directly
  std::map<long, std::size_t> named_machine_of_key;      // named machines given directly
  std::vector<fs::path> direct_global_ranks;             // globally ranked files given directly
  for (const auto& text : paths) {
    const fs::path path(text);
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) {
      throw InputError(
          fmt::format("{}: {}", text, ec ? ec.message() : std::string("no such file or folder")));
    }
    if (fs::is_directory(status)) {
      add_folder(path, machines, skipped);
      continue;
    }
    // A file given directly is sniffed when its name says nothing: records
    // saved under another name are still read as records.
    const InputFormat format = format_of_given_file(path);
    switch (input_format_spec(format).placement) {
      case Placement::named_machine:
        add_named_machine_files({path}, machines, named_machine_of_key);
        break;
      case Placement::folder_global_ranks:
        direct_global_ranks.push_back(path);
        break;
      case Placement::folder_ranks:
        add_file(path, format, machines, machine_of_parent);
        break;
    }
  }
  std::map<std::string, std::size_t> rank_folder_of_parent;
  add_global_rank_files(std::move(direct_global_ranks), machines, rank_folder_of_parent);
  refuse_mixed_formats(machines);
  skipped.finish();

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
    // Before any input is moved out of `ranks` (the message names both).
    // Files of one rank are refused, unless their format says they are the
    // rank's profiling windows (one device, joined by the reader).
    const auto windows = [&](std::size_t i) {
      return ranks[i].format == ranks[i - 1].format &&
             input_format_spec(ranks[i].format).rank_windows;
    };
    for (std::size_t i = 1; i < ranks.size(); ++i) {
      if (ranks[i].rank == ranks[i - 1].rank && !windows(i)) {
        throw InputError(fmt::format("{} and {} are both rank {} of one machine", ranks[i - 1].path,
                                     ranks[i].path, ranks[i].rank));
      }
    }
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      std::error_code ec;
      const auto canonical = fs::weakly_canonical(ranks[i].path, ec).string();
      if (!seen.insert(ec ? ranks[i].path : canonical).second) {
        throw InputError(fmt::format("{} is given twice", ranks[i].path));
      }
      const bool same_device = i > 0 && ranks[i].rank == ranks[i - 1].rank;
      InputFile input = std::move(ranks[i]);
      input.machine = static_cast<int>(m);
      input.machine_name = machines[m].name;
      if (same_device) {
        input.device = inputs.back().device;
      } else {
        input.device = device;
        device += input.ranks;  // a file of several ranks is as many devices
      }
      inputs.push_back(std::move(input));
    }
  }
  return inputs;
}

std::string machine_order_name(const InputFile& input) {
  if (!input.machine_name.empty()) return input.machine_name;
  return full_path(input.path).parent_path().filename().string();
}

std::vector<InputFile> order_machines(std::vector<InputFile> inputs,
                                      const std::vector<std::string>& order,
                                      const OptionWords& words) {
  if (order.empty()) return inputs;
  const std::string& option = words.name(CallerOption::machine_order);
  // The machines as found: ordinal -> name.
  std::map<int, std::string> found;
  for (const InputFile& input : inputs) found.emplace(input.machine, machine_order_name(input));
  std::vector<std::string> names;
  for (const auto& [machine, name] : found) names.push_back(name);
  const auto listing = [&] { return fmt::format("{}", fmt::join(names, ",")); };
  std::map<std::string, int> position;
  for (const std::string& name : order) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw InputError(
          fmt::format("{}: the run has no machine '{}'; its machines, in the order found: {}",
                      option, name, listing()));
    }
    if (!position.emplace(name, static_cast<int>(position.size())).second) {
      throw InputError(fmt::format("{} names '{}' twice", option, name));
    }
  }
  if (position.size() != names.size()) {
    std::vector<std::string> missing;
    for (const std::string& name : names) {
      if (!position.count(name)) missing.push_back(name);
    }
    throw InputError(
        fmt::format("{} must name every machine once; missing: {} "
                    "(the machines, in the order found: {})",
                    option, fmt::join(missing, ","), listing()));
  }
  for (InputFile& input : inputs) input.machine = position.at(machine_order_name(input));
  std::stable_sort(inputs.begin(), inputs.end(),
                   [](const InputFile& a, const InputFile& b) { return a.machine < b.machine; });
  int device = 0;
  for (InputFile& input : inputs) {
    input.device = device;
    device += input.ranks;  // a file of several ranks is as many devices
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
                                      const std::vector<int>& devices, const OptionWords& words) {
  std::vector<InputFile> kept;
  const int count = inputs.empty() ? 0 : inputs.back().device + inputs.back().ranks;
  for (const int d : devices) {
    // Every input of the device (a rank's profiling windows are several),
    // and a file of several ranks once.
    const std::size_t before = kept.size();
    bool held = false;
    for (const InputFile& f : inputs) {
      if (d < f.device || d >= f.device + f.ranks) continue;
      held = true;
      const bool again = std::any_of(kept.begin(), kept.end(),
                                     [&](const InputFile& k) { return k.path == f.path; });
      if (!again) kept.push_back(f);
    }
    if (held && kept.size() == before) continue;
    if (kept.size() == before) {
      throw InputError(fmt::format("{}: there is no device {} (found {} device{}: 0-{})",
                                   words.name(CallerOption::devices), d, count,
                                   count == 1 ? "" : "s", count == 0 ? 0 : count - 1));
    }
  }
  return kept;
}

}  // namespace pipescope

// Finds the worker logs of a training run and gives every one its place:
// machine, rank and global device index.
//
// A folder holds `workerlog.N` files (one per rank) or `machineK/` folders
// each holding them. Ranks are ordered numerically (workerlog.10 after
// workerlog.9). Machines, however many paths name them and in whatever order,
// are ordered by the name of their folder, numeric-aware (machine9 before
// machine10, node2 before node10), ties broken by the folder's full path; an
// `.ivl` machine by the machine name in its header. The global device index
// counts ranks of machine 0, then of machine 1, and so on. A file given
// directly is one rank of the machine its folder stands for.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/errors.h"
#include "model/option_words.h"
#include "model/warning.h"

namespace pipescope {

/// How an input file is read: the id of its row in the format table
/// (ingest/input_formats.h), which alone knows what each format means.
enum class InputFormat : std::uint8_t {
  worker_log,  ///< text worker log, scanned line by line
  ivl,         ///< `.ivl` binary interval records (records/ivl_format.h)
  /// Paddle dygraph pipeline profiler records (JSON lines, one B and one E
  /// record per job): `profile_record_tmp_file_for_rank_<N>` files, or their
  /// concatenation `pipeline_profile.json` (ingest/dygraph_reader.h).
  paddle_dygraph,
  torch_trace,  ///< PyTorch profiler (Chrome-trace JSON) trace, ingest/torch_trace_reader.h
  nsys_export,  ///< Nsight Systems SQLite export (several ranks a file), ingest/nsys_reader.h
  /// The number of built-in formats; a format registered at run time
  /// (InputFormatRegistration) takes an id from here on.
  count,
};

struct InputFile {
  std::string path;
  InputFormat format = InputFormat::worker_log;
  std::uint64_t size_bytes = 0;
  int machine = 0;           ///< machine ordinal
  std::string machine_name;  ///< `machineK` folder name, or empty
  int rank = 0;    ///< N of workerlog.N or of profile_record_tmp_file_for_rank_N (or the position)
  int device = 0;  ///< global device index (of its first rank)
  /// Ranks the file holds (input_formats.h, FileRanks): its devices are
  /// device .. device + ranks - 1.
  int ranks = 1;
};

/// Compares two names with runs of digits taken as numbers ("node2" < "node10",
/// "machine01" == "machine1"), other bytes as bytes: <0, 0 or >0.
int natural_compare(std::string_view a, std::string_view b);

/// Returns the rank N of a `workerlog.N` name (also `workerlog.N.gz` and
/// `workerlog.N.zst`), or -1.
int worker_log_rank(std::string_view file_name);

/// Returns the global rank N of a `profile_record_tmp_file_for_rank_N` name
/// (also with `.gz` or `.zst`), or -1.
int dygraph_record_rank(std::string_view file_name);

/// True for `pipeline_profile.json` (also `.gz`, `.zst`): Paddle's helper's
/// concatenation of every rank's dygraph records.
bool is_dygraph_concatenation(std::string_view file_name);

/// Discovers the worker logs (and `.ivl` record files: any name ending in
/// `.ivl`, in a folder or its machineK/ sub-folders, or given directly, where
/// a file whose name claims no format is sniffed (input_formats.h); their
/// header names machine and rank) under `paths`. Throws InputError for a path that
/// does not exist or cannot be listed, and for a folder without worker logs
/// (naming what was looked for), or when two inputs claim the same machine
/// and rank. Paddle dygraph records (`profile_record_tmp_file_for_rank_N`,
/// `pipeline_profile.json`) are found in a folder by name; a folder holding
/// both reads the per-rank files only (the concatenation repeats them).
/// Throws InputError when dygraph records are mixed with worker logs or
/// `.ivl` records (nothing says which pipeline each describes), or when
/// per-rank records and their concatenation are both given.
/// Folders it does not read (hidden ones holding inputs, sub-folders without
/// inputs, inputs a level too deep, a link to a folder read under its own
/// name) are said in `notes` (folder_skipped warnings), when given.
std::vector<InputFile> discover_inputs(const std::vector<std::string>& paths,
                                       std::vector<Warning>* notes = nullptr);

/// The name a machine goes by in `--machine-order`: its machine name (the
/// `machineK` or host folder's name), else its folder's name.
std::string machine_order_name(const InputFile& input);

/// Puts the machines in the order `order` names them (machine_order_name),
/// renumbering machines and global device indices; ranks keep their order
/// within each machine. Throws InputError unless `order` names every
/// machine of `inputs` exactly once (the message lists them, in the order
/// found, and names the option: CallerOption::machine_order in `words`). An
/// empty `order` changes nothing.
std::vector<InputFile> order_machines(std::vector<InputFile> inputs,
                                      const std::vector<std::string>& order,
                                      const OptionWords& words = *OptionWords::engine());

/// Parses a device selection like "0,2,3" or "0-3,6" into sorted, distinct
/// device indices. Throws InputError on bad syntax.
std::vector<int> parse_device_list(std::string_view text);

/// Keeps the inputs whose device index is in `devices` (the analysed set);
/// they keep their global device index. A file of several ranks is kept
/// whole when one of its devices is selected. Throws InputError when a selected
/// device does not exist, naming the option (CallerOption::devices in `words`).
std::vector<InputFile> select_devices(std::vector<InputFile> inputs,
                                      const std::vector<int>& devices,
                                      const OptionWords& words = *OptionWords::engine());

}  // namespace pipescope

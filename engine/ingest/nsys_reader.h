// The reader of Nsight Systems SQLite exports (`nsys export --type sqlite
// --include-blobs=true`), Megatron-LM's and NeMo's profiling path: one row of
// the format table (input_formats.cc), a file of several ranks
// (FileRanks::several: a report of every GPU process of a node, or of one
// rank). It gives the kernel view (analysis/kernel_view.h) the same per-rank
// GPU activities a PyTorch trace gives (model/gpu_activity.h), read exactly
// (integer ns) through SQLite, read-only and immutable (sqlite_file.h).
//
// SQLite needs random access, so the format reads each file itself (the
// table's FormatReader slot, as .ivl records are read) rather than taking
// chunks from the reading loop: one export per thread, its queries in one
// pass each (nsys_export.h says what is read), each process's record and
// jobs made there (read_nsys_files). The run's processes are then placed as
// ranks over every export at once, from what each file's result keeps for
// it (nsys_file_facts.h): the join (join_nsys_files, the table's join
// slot), which may run elsewhere (`analyze --mpi` reads the exports on the
// ranks they are shared out to and joins them on rank 0), and does:
//
//  - Ranks (docs/guide.md, "The kernel view", rank identity): the report's
//    environment (RANK, PMI_RANK, OMPI_COMM_WORLD_RANK in META_DATA_CAPTURE,
//    else DeviceEnvironment) where it holds one GPU process; else its `Rank`
//    in NCCL's communicators of the most ranks (their NVTX payloads), when
//    those have at least as many ranks as there are GPU processes; else the
//    CUDA device on its host after the GPU processes of the hosts before;
//    else the first rank no process claims. The environment and a payload
//    that disagree are refused (InputError), as are two processes of one rank.
//  - Machines: the hosts (TARGET_INFO_SYSTEM_ENV's Hostname; else the
//    export's folder), ordered by name, numbers as numbers.
//  - NCCL kernels' operations and peers: NCCL's own NVTX ranges on the thread
//    of the kernel's launch, read as PyTorch's host calls are (the kernel
//    view's rule 1): ncclSend/ncclRecv name a peer by its rank in a
//    communicator, a global rank through the communicators' membership
//    payloads, else, for a communicator two processes use naming one peer
//    value each, the other process; ncclAllReduce & co. their group.
//  - Steps: NVTX ranges whose whole name matches NsysOptions::step_range;
//    none at all: one window.
//  - Jobs: NVTX ranges named `PP:<action>`, or matching --job-pattern, as a
//    PyTorch trace's user annotations (annotation_jobs.h): each timed by the
//    activities launched inside it in its process, the GPU's time. A rank
//    without such ranges has no job; a run with none has the kernel view.
//
// A `.nsys-rep` (the report itself) is refused, naming the command that
// exports it, unless its export (the same name, `.sqlite`) is among the
// inputs; another SQLite database is refused naming the tables it lacks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/nsys_options.h"
#include "ingest/read_options.h"

namespace pipescope {

class JobPattern;
class ProgressMeter;

/// True for `*.sqlite`, and for `*.nsys-rep` (refused with the command that
/// exports it).
bool nsys_export_name(std::string_view file_name);
/// True when the first bytes are an SQLite database's header.
bool nsys_export_content(std::string_view first_bytes);
/// How many ranks discovery gives an export (nsys_gpu_processes: its CUDA
/// streams' processes; at least 1). The join numbers the devices by the
/// processes read: a file's devices follow on from the previous file's.
int nsys_export_ranks(const std::string& path);

/// Reads the exports of a run, one result per file in order: each file's
/// ranks in FileResult::kernels, in global-rank order, and their jobs in
/// `device` and `more_devices` (`pattern`: the job pattern, shared with
/// PyTorch traces; null: `PP:` labels). Throws InputError for an input that
/// is no export, a damaged database, a step range without a group (named by
/// CallerOption::step_range in read.words), ranks that cannot be told apart,
/// and a pattern without `mb` in an export with job ranges but no step range.
/// read_nsys_files, then join_nsys_files.
std::vector<FileResult> read_nsys_exports(const std::vector<InputFile>& files,
                                          const ReadOptions& read, const NsysOptions& options,
                                          const JobPattern* pattern, ProgressMeter& progress);

/// The exports read, each on its own, not yet placed: a file's processes in
/// its `device`, `more_devices` and `kernels` in the order it lists them,
/// what the placement needs in FileResult::placement. Throws as
/// read_nsys_exports does for one file.
std::vector<FileResult> read_nsys_files(const std::vector<InputFile>& files,
                                        const ReadOptions& read, const NsysOptions& options,
                                        const JobPattern* pattern, ProgressMeter& progress);

/// Places the processes of `results` (read_nsys_files over `files`, in the
/// same order, read together or apart) as read_nsys_exports' results are:
/// the result is the same whoever read which file. Throws InputError for a
/// report without its export, ranks that cannot be told apart, and a run
/// without any GPU activity.
void join_nsys_files(std::vector<FileResult>& results, const std::vector<InputFile>& files,
                     const ReadOptions& read);

}  // namespace pipescope

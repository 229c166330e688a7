// run_on_cluster() over MPI. Every wait polls a nonblocking request with a
// deadline, so a rank that died or hangs ends the run with a message instead
// of a hang. Only the main thread calls MPI; scans, discovery and the
// analysis run on helper threads while it keeps the messages moving.
//
// Messages (tags below): rank 0 sends each rank its PLAN (its files, or the
// status to exit with); with --local, node leaders first send their NODE
// listing. While scanning, ranks send PROGRESS (bytes, files) whenever it
// changed; then DATA batches (run_transfer.h) and one DONE with the counts
// sent, so rank 0 knows it has everything. Rank 0 sends every rank a BEAT
// now and then (it is alive, keep waiting) and at the end the STATUS.
#include <fmt/core.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <stdexcept>
#include <thread>
#include <utility>

#include "distributed/assignment.h"
#include "distributed/cluster.h"
#include "distributed/input_merge.h"
#include "distributed/mpi_context.h"
#include "distributed/mpi_exchange.h"
#include "distributed/node_layout.h"
#include "distributed/run_transfer.h"
#include "distributed/wire.h"
#include "ingest/ingest.h"
#include "ingest/run_merge.h"

namespace pipescope::distributed {

namespace {

using Clock = std::chrono::steady_clock;

enum Tag : int {
  kTagPlan = 101,
  kTagNode = 102,
  kTagProgress = 103,
  kTagData = 104,
  kTagDone = 105,
  kTagStatus = 106,
  kTagBeat = 107,
};

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void nap() { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

std::string plural(std::size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

/// This rank's files.
struct Share {
  std::vector<InputFile> inputs;
  std::vector<std::size_t> global_index;
};

class Session {
 public:
  Session(const MpiContext& mpi, const ClusterOptions& options, const ClusterCallbacks& callbacks,
          int error_status)
      : mpi_(mpi),
        options_(options),
        words_(*options.scan.words),
        callbacks_(callbacks),
        error_status_(error_status),
        rank_(mpi.rank()),
        size_(mpi.size()),
        timeout_(std::max(options.timeout_s, 0.1)),
        beat_interval_(std::clamp(timeout_ / 4, 0.05, 10.0)),
        max_message_(std::max<std::size_t>(options.max_message_bytes, 1024)),
        beats_sent_(static_cast<std::size_t>(size_), 0) {
    // For tests: tiny messages exercise the batching with small inputs.
    if (const char* env = std::getenv("PIPESCOPE_MPI_MESSAGE_BYTES")) {
      const std::int64_t n = node_index_from_env(env);
      if (n > 0) max_message_ = std::max<std::size_t>(static_cast<std::size_t>(n), 64);
    }
  }

  int run() {
    identify();
    if (rank_ != 0) {
      MPI_Irecv(&beat_byte_, 0, MPI_BYTE, 0, kTagBeat, MPI_COMM_WORLD, &beat_request_);
      return run_worker();
    }
    return run_root();
  }

 private:
  // ---- set-up -----------------------------------------------------------

  /// Finds every rank's node (node_layout.h) and this node's rank count.
  void identify() {
    MPI_Comm shared;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &shared);
    MPI_Comm_size(shared, &ranks_here_);
    // The shared communicator's rank 0 is its lowest world rank (key = world rank).
    MPI_Group shared_group, world_group;
    MPI_Comm_group(shared, &shared_group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int zero = 0, leader = 0;
    MPI_Group_translate_ranks(shared_group, 1, &zero, world_group, &leader);
    MPI_Group_free(&shared_group);
    MPI_Group_free(&world_group);
    MPI_Comm_free(&shared);

    RankIdentity mine;
    mine.shared_leader = leader;
    mine.override_node = node_index_from_env(std::getenv("PIPESCOPE_NODE"));
    mine.slurm_node = node_index_from_env(std::getenv("SLURM_NODEID"));
    std::vector<RankIdentity> all(static_cast<std::size_t>(size_));
    MPI_Request request;
    MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD,
                   &request);
    wait_plain(request, "every rank to start");
    layout_ = layout_nodes(all);
  }

  int node_of(int rank) const { return layout_.node_of_rank[static_cast<std::size_t>(rank)]; }

  // ---- waiting ----------------------------------------------------------

  /// Waits for `request` at most timeout_ seconds (rank 0 keeps beating).
  void wait_plain(MPI_Request& request, const std::string& what) {
    const auto start = Clock::now();
    while (true) {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) return;
      keep_alive();
      if (since(start) > timeout_) {
        mpi_.abort(fmt::format("waited {:.0f} s for {} ({}); a rank failed or hangs", timeout_,
                               what, words_.name(CallerOption::mpi_timeout)));
      }
      nap();
    }
  }

  /// Rank 0: beats; other ranks: counts rank 0's beats.
  void keep_alive() {
    if (rank_ == 0) {
      beat();
    } else {
      poll_beat();
    }
  }

  void beat() {
    if (size_ == 1 || since(last_beat_) < beat_interval_) return;
    last_beat_ = Clock::now();
    int all_done = 1;
    if (!beat_requests_.empty()) {
      MPI_Testall(static_cast<int>(beat_requests_.size()), beat_requests_.data(), &all_done,
                  MPI_STATUSES_IGNORE);
    }
    if (all_done) beat_requests_.clear();
    for (int r = 1; r < size_; ++r) {
      beat_requests_.emplace_back();
      MPI_Isend(&beat_byte_, 0, MPI_BYTE, r, kTagBeat, MPI_COMM_WORLD, &beat_requests_.back());
      ++beats_sent_[static_cast<std::size_t>(r)];
    }
  }

  void poll_beat() {
    int done = 0;
    MPI_Test(&beat_request_, &done, MPI_STATUS_IGNORE);
    if (!done) return;
    ++beats_seen_;
    root_heard_ = Clock::now();
    MPI_Irecv(&beat_byte_, 0, MPI_BYTE, 0, kTagBeat, MPI_COMM_WORLD, &beat_request_);
  }

  /// Sends `blob` to `dest` in pieces of at most max_message_ bytes, the
  /// first one starting with the blob's total size.
  void send_blob(int dest, int tag, const std::string& blob, const std::string& what) {
    std::string piece;
    std::size_t pos = 0;
    bool first = true;
    while (first || pos < blob.size()) {
      piece.clear();
      if (first) {
        const std::uint64_t total = blob.size();
        piece.append(reinterpret_cast<const char*>(&total), sizeof total);
      }
      const std::size_t n = std::min(max_message_ - piece.size(), blob.size() - pos);
      piece.append(blob, pos, n);
      pos += n;
      first = false;
      MPI_Request request;
      MPI_Isend(piece.data(), static_cast<int>(piece.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD,
                &request);
      wait_plain(request, what);
    }
  }

  /// Receives one blob from `source`. `beats_extend`: rank 0's beats count
  /// as progress (it is busy for us: listing folders, analysing).
  std::string receive_blob(int source, int tag, const std::string& what, bool beats_extend) {
    std::string blob;
    std::uint64_t total = 0;
    bool first = true;
    while (first || blob.size() < total) {
      std::string piece = receive(source, tag, what, beats_extend);
      std::size_t offset = 0;
      if (first) {
        if (piece.size() < sizeof total) mpi_.abort("a message too short to be one");
        std::memcpy(&total, piece.data(), sizeof total);
        offset = sizeof total;
        blob.reserve(total);
        first = false;
      }
      blob.append(piece, offset);
    }
    return blob;
  }

  std::string receive(int source, int tag, const std::string& what, bool beats_extend) {
    const auto start = Clock::now();
    root_heard_ = start;
    while (true) {
      int found = 0;
      MPI_Status status;
      MPI_Iprobe(source, tag, MPI_COMM_WORLD, &found, &status);
      if (found) {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        std::string message(static_cast<std::size_t>(count), '\0');
        MPI_Recv(message.data(), count, MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return message;
      }
      keep_alive();
      const double silent = beats_extend && rank_ != 0 ? since(root_heard_) : since(start);
      if (silent > timeout_) {
        mpi_.abort(
            fmt::format("no word from rank {} for {:.0f} s while waiting for {} "
                        "({}); it failed or hangs",
                        source, silent, what, words_.name(CallerOption::mpi_timeout)));
      }
      nap();
    }
  }

  // ---- the plan: who reads what ------------------------------------------

  static std::string encode_discovery(const NodeDiscovery& d) {
    ByteWriter w;
    w.put(static_cast<std::int32_t>(d.node));
    w.put(static_cast<std::int32_t>(d.leader));
    w.str(d.folder);
    w.str(d.error);
    w.put(static_cast<std::uint64_t>(d.inputs.size()));
    for (std::size_t i = 0; i < d.inputs.size(); ++i) {
      put_input(w, d.inputs[i]);
      w.str(d.keys[i]);
    }
    return w.take();
  }

  static NodeDiscovery decode_discovery(std::string_view bytes) {
    ByteReader r(bytes);
    NodeDiscovery d;
    d.node = r.get<std::int32_t>();
    d.leader = r.get<std::int32_t>();
    d.folder = r.str();
    d.error = r.str();
    const auto n = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < n; ++i) {
      d.inputs.push_back(get_input(r));
      d.keys.push_back(r.str());
    }
    return d;
  }

  /// What this node's leader finds under its --local folder.
  NodeDiscovery discover_node() const {
    NodeDiscovery d;
    d.node = node_of(rank_);
    d.leader = rank_;
    d.folder = expand_node_template(options_.local_template, d.node);
    try {
      d.inputs = discover_inputs({d.folder});
      for (const InputFile& input : d.inputs) d.keys.push_back(file_key(input.path));
    } catch (const InputError& e) {
      d.error = e.what();
    }
    return d;
  }

  bool is_leader() const {
    return layout_.ranks_of_node[layout_.position(node_of(rank_))].front() == rank_;
  }

  /// Rank 0: the global input list and every file's owner.
  void plan_root() {
    std::vector<std::size_t> group_of_file;
    std::vector<std::vector<int>> groups;
    if (options_.local_template.empty()) {
      run_beating([&] {
        inputs_ = discover_inputs(options_.paths);
        if (!options_.devices.empty()) {
          inputs_ = select_devices(inputs_, parse_device_list(options_.devices), words_);
        }
      });
      group_of_file.assign(inputs_.size(), 0);
      groups.emplace_back();
      for (int r = 0; r < size_; ++r) groups[0].push_back(r);
    } else {
      // Every leader's listing arrives before anything can fail here, so no
      // leader is left waiting on a send.
      std::vector<NodeDiscovery> found;
      for (std::size_t n = 0; n < layout_.nodes.size(); ++n) {
        const int leader = layout_.ranks_of_node[n].front();
        if (leader == 0) {
          found.push_back(discover_node());
        } else {
          found.push_back(decode_discovery(receive_blob(
              leader, kTagNode, fmt::format("the listing of node {}", layout_.nodes[n]), false)));
        }
      }
      for (const NodeDiscovery& d : found) {
        if (!d.error.empty()) failures_.push_back({d.leader, d.node, d.folder, d.error, true});
      }
      MergedInputs merged = merge_node_inputs(found);
      if (merged.inputs.empty()) {
        std::string why;
        for (const NodeDiscovery& d : found) {
          why += fmt::format("\n  node {}: {}", d.node, d.error.empty() ? d.folder : d.error);
        }
        throw InputError(fmt::format("{} {}: no worker logs on any node:{}",
                                     words_.name(CallerOption::local), options_.local_template,
                                     why));
      }
      std::map<int, std::size_t> node_of_device;
      for (std::size_t i = 0; i < merged.inputs.size(); ++i) {
        node_of_device[merged.inputs[i].device] = merged.node_of_input[i];
      }
      inputs_ = std::move(merged.inputs);
      if (!options_.devices.empty()) {
        inputs_ = select_devices(inputs_, parse_device_list(options_.devices), words_);
      }
      for (const InputFile& input : inputs_) group_of_file.push_back(node_of_device[input.device]);
      groups = layout_.ranks_of_node;
    }
    if (callbacks_.on_plan) callbacks_.on_plan(inputs_);
    // Files a format joins (ingest.h, join_file_results) are joined on rank
    // 0, which then analyses the run as one process: their ranks are placed
    // over every file, and their GPU activities are read by the kernel view
    // together.
    if (joins_files(inputs_)) partitioned_ = false;
    std::vector<std::uint64_t> sizes;
    for (const InputFile& input : inputs_) sizes.push_back(input.size_bytes);
    owner_ = assign_files(sizes, group_of_file, groups);
  }

  /// Rank 0 to every other rank: its files, or the status to exit with.
  void send_plans(bool ok, int status) {
    std::vector<ByteWriter> plans(static_cast<std::size_t>(size_));
    for (auto& w : plans) {
      w.put(static_cast<std::uint8_t>(ok));
      w.put(static_cast<std::int32_t>(status));
      w.put(static_cast<std::uint8_t>(partitioned_));
    }
    if (ok) {
      std::vector<std::uint64_t> counts(static_cast<std::size_t>(size_), 0);
      for (const int o : owner_) ++counts[static_cast<std::size_t>(o)];
      for (int r = 0; r < size_; ++r)
        plans[static_cast<std::size_t>(r)].put(counts[static_cast<std::size_t>(r)]);
      for (std::size_t f = 0; f < inputs_.size(); ++f) {
        ByteWriter& w = plans[static_cast<std::size_t>(owner_[f])];
        w.put(static_cast<std::uint64_t>(f));
        put_input(w, inputs_[f]);
        if (owner_[f] == 0) {
          share_.inputs.push_back(inputs_[f]);
          share_.global_index.push_back(f);
        }
      }
    }
    for (int r = 1; r < size_; ++r) {
      send_blob(r, kTagPlan, plans[static_cast<std::size_t>(r)].data(),
                fmt::format("rank {} to take its plan", r));
    }
  }

  // ---- scanning -----------------------------------------------------------

  /// Scans this rank's share on a helper thread.
  class LocalScan {
   public:
    LocalScan(const Share& share, IngestOptions options) {
      options.on_progress = [this](const IngestProgress& p) {
        bytes_ = p.bytes_done;
        files_ = p.files_done;
      };
      thread_ = std::jthread([this, &share, options] {
        try {
          if (!share.inputs.empty()) files_read_ = read_input_files(share.inputs, options);
        } catch (...) {
          error_ = std::current_exception();
        }
        files_ = share.inputs.size();
        finished_ = true;
      });
    }
    bool finished() const { return finished_; }
    std::uint64_t bytes() const { return bytes_; }
    std::uint64_t files() const { return files_; }
    /// The results (after finished()); rethrows the scan's exception.
    std::vector<FileResult> take() {
      thread_.join();
      if (error_) std::rethrow_exception(error_);
      return std::move(files_read_);
    }

   private:
    std::atomic<std::uint64_t> bytes_{0};
    std::atomic<std::uint64_t> files_{0};
    std::atomic<bool> finished_{false};
    std::vector<FileResult> files_read_;
    std::exception_ptr error_;
    std::jthread thread_;
  };

  IngestOptions scan_options() const {
    IngestOptions scan = options_.scan;
    scan.on_progress = nullptr;
    if (scan.threads == 0) {
      // A rank the launcher bound to some cores uses those; an unbound one
      // the node's cores shared among the ranks that run on it.
      const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      cpu_set_t mask;
      CPU_ZERO(&mask);
      const unsigned allowed = sched_getaffinity(0, sizeof mask, &mask) == 0
                                   ? static_cast<unsigned>(CPU_COUNT(&mask))
                                   : cores;
      scan.threads = allowed > 0 && allowed < cores
                         ? allowed
                         : std::max(1u, cores / static_cast<unsigned>(std::max(ranks_here_, 1)));
    }
    return scan;
  }

  // ---- rank 0 -----------------------------------------------------------

  /// Runs `work` on a helper thread while the main thread keeps beating.
  template <typename Work>
  void run_beating(Work&& work) {
    std::atomic<bool> done{false};
    std::exception_ptr error;
    {
      std::jthread thread([&] {
        try {
          work();
        } catch (...) {
          error = std::current_exception();
        }
        done = true;
      });
      while (!done) {
        beat();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    if (error) std::rethrow_exception(error);
  }

  int run_root() {
    try {
      plan_root();
    } catch (...) {
      send_plans(false, error_status_);
      finish_root(error_status_);
      throw;
    }
    send_plans(true, 0);
    if (partitioned()) {
      gather();  // progress and the end of every scan; the jobs stay where they were read
      // The node folders that could not be listed (the files that could not
      // be read are said by the load, which every rank runs on their stats).
      ClusterScan listed;
      listed.inputs = inputs_;
      listed.failures = failures_;
      report_failures(listed);
      finish_root(kGoPartitioned);
      return run_partitioned();
    }
    ClusterScan result;
    std::vector<FileResult> files = gather();
    result.inputs = std::move(inputs_);
    try {
      run_beating([&] {
        join_file_results(files, result.inputs, options_.scan);
        result.run = merge_file_results(std::move(files));
      });
    } catch (...) {
      finish_root(error_status_);
      throw;
    }
    result.ranks = size_;
    result.nodes = static_cast<int>(layout_.nodes.size());
    for (std::size_t f = 0; f < result.run.inputs.size(); ++f) {
      const InputStats& stats = result.run.inputs[f];
      if (!stats.error.empty()) {
        failures_.push_back({owner_[f], node_of(owner_[f]), stats.path, stats.error});
      }
    }
    result.failures = failures_;
    report_failures(result);

    int status = error_status_;
    try {
      run_beating([&] { status = callbacks_.on_result ? callbacks_.on_result(result) : 0; });
    } catch (...) {
      finish_root(error_status_);
      throw;
    }
    finish_root(status);
    return status;
  }

  void report_failures(const ClusterScan& result) const {
    std::size_t files = 0;
    std::size_t folders = 0;
    for (const ReadFailure& f : result.failures) {
      ++(f.folder ? folders : files);
      fmt::print(stderr, "pipescope: warning: rank {} (node {}) could not {} {}: {}\n", f.rank,
                 f.node,
                 f.folder ? fmt::format("list its {} folder", words_.name(CallerOption::local))
                          : std::string("read"),
                 f.path, f.error);
    }
    if (folders > 0) {
      fmt::print(stderr,
                 "pipescope: warning: {} could not be listed; the figures cover the other "
                 "nodes\n",
                 plural(folders, "node folder"));
    }
    if (files > 0) {
      fmt::print(stderr,
                 "pipescope: warning: {} of {} input files could not be read; the figures cover "
                 "the {} read\n",
                 files, result.inputs.size(), result.inputs.size() - files);
    }
  }

  /// Every rank's progress until every scan ends, and (not partitioned)
  /// every file's result, in input order.
  std::vector<FileResult> gather() {
    struct Peer {
      Clock::time_point heard = Clock::now();
      std::uint64_t bytes = 0, files = 0;
      std::uint64_t batches = 0, progress = 0;
      bool done = false;
      std::uint64_t expect_batches = 0, expect_progress = 0;
      bool complete() const {
        return done && batches == expect_batches && progress == expect_progress;
      }
    };
    std::vector<Peer> peers(static_cast<std::size_t>(size_));
    std::vector<std::uint64_t> files_of(static_cast<std::size_t>(size_), 0);
    for (const int o : owner_) ++files_of[static_cast<std::size_t>(o)];
    IngestProgress total;
    total.files_total = inputs_.size();
    for (const InputFile& input : inputs_) total.bytes_total += input.size_bytes;

    RunAssembler assembler(inputs_.size());
    LocalScan own(share_, scan_options());
    bool own_merged = false;
    auto last_draw = Clock::time_point{};
    std::string message;
    while (true) {
      bool received = false;
      for (int i = 0; i < 64; ++i) {
        int found = 0;
        MPI_Status status;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &found, &status);
        if (!found) break;
        received = true;
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        message.resize(static_cast<std::size_t>(count));
        MPI_Recv(message.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        Peer& peer = peers[static_cast<std::size_t>(status.MPI_SOURCE)];
        peer.heard = Clock::now();
        try {
          ByteReader r(message);
          switch (status.MPI_TAG) {
            case kTagProgress:
              peer.bytes = r.get<std::uint64_t>();
              peer.files = r.get<std::uint64_t>();
              ++peer.progress;
              break;
            case kTagData:
              assembler.add_message(status.MPI_SOURCE, message);
              ++peer.batches;
              break;
            case kTagDone:
              peer.expect_batches = r.get<std::uint64_t>();
              peer.expect_progress = r.get<std::uint64_t>();
              peer.bytes = r.get<std::uint64_t>();
              peer.files = r.get<std::uint64_t>();
              peer.done = true;
              break;
            default:
              throw WireError(fmt::format("unexpected message (tag {})", status.MPI_TAG));
          }
        } catch (const std::exception& e) {
          mpi_.abort(fmt::format("bad message from rank {}: {}", status.MPI_SOURCE, e.what()));
        }
      }

      Peer& self = peers[0];
      if (!own_merged) {
        if (own.bytes() != self.bytes || own.files() != self.files) self.heard = Clock::now();
        self.bytes = own.bytes();
        self.files = own.files();
        if (own.finished()) {
          try {
            if (partitioned()) {
              kept_ = own.take();
            } else {
              assembler.add_local(0, own.take(), share_.global_index);
            }
          } catch (const std::exception& e) {
            mpi_.abort(fmt::format("scan failed: {}", e.what()));
          }
          own_merged = self.done = true;
        }
      }

      bool all = own_merged;
      for (int r = 1; r < size_ && all; ++r) all = peers[static_cast<std::size_t>(r)].complete();
      if (callbacks_.on_progress && (all || since(last_draw) >= 0.1)) {
        last_draw = Clock::now();
        total.bytes_done = total.files_done = 0;
        for (const Peer& p : peers) {
          total.bytes_done += p.bytes;
          total.files_done += p.files;
        }
        callbacks_.on_progress(total);
      }
      if (all) break;

      for (int r = 0; r < size_; ++r) {
        const Peer& p = peers[static_cast<std::size_t>(r)];
        if ((r == 0 ? own_merged : p.complete()) || since(p.heard) <= timeout_) continue;
        mpi_.abort(
            fmt::format("no progress from rank {} (node {}) for {:.0f} s ({}) while it {} its {} "
                        "({} bytes read so far); it failed or hangs",
                        r, node_of(r), since(p.heard), words_.name(CallerOption::mpi_timeout),
                        p.done ? "sends the records of" : "scans",
                        plural(files_of[static_cast<std::size_t>(r)], "file"), p.bytes));
      }
      beat();
      if (!received) nap();
    }
    if (partitioned()) return {};
    try {
      return assembler.take();
    } catch (const std::exception& e) {
      mpi_.abort(e.what());
    }
  }

  // ---- the partitioned analysis ---------------------------------------------

  /// Rank 0 decides (plan_root) and says in the plans.
  bool partitioned() const { return partitioned_; }

  /// Every rank, after the scans: the partitioned analysis on what each
  /// rank read, over MPI collectives; the status is the largest any rank
  /// returned.
  int run_partitioned() {
    MpiExchange exchange(mpi_, timeout_, options_.scan.words);
    PartitionedScan scan;
    scan.files = std::move(kept_);
    scan.global_index = share_.global_index;
    scan.ranks = size_;
    scan.nodes = static_cast<int>(layout_.nodes.size());
    if (rank_ == 0) {
      scan.inputs = inputs_;
      scan.failures = failures_;
    }
    int status = error_status_;
    std::exception_ptr error;
    try {
      ByteWriter w;
      w.put(static_cast<std::uint64_t>(scan.files.size()));
      for (const std::string& count : exchange.all_gather(w.take())) {
        ByteReader r(count);
        scan.file_count += r.get<std::uint64_t>();
      }
      status = callbacks_.on_partitioned(exchange, scan);
    } catch (const InputError&) {
      // Decided alike on every rank from gathered facts: every rank is here.
      error = std::current_exception();
    } catch (const std::invalid_argument&) {
      error = std::current_exception();
    } catch (const std::exception& e) {
      mpi_.abort(e.what());
    }
    // Rank 0 says what went wrong before any rank leaves the collective
    // below: mpirun ends every process once one exits with a non-zero status,
    // which could cut rank 0's message.
    if (error && rank_ == 0) {
      if (!callbacks_.on_error) std::rethrow_exception(error);
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        callbacks_.on_error(e);
      }
    }
    ByteWriter w;
    w.put(static_cast<std::int32_t>(status));
    for (const std::string& theirs : exchange.all_gather(w.take())) {
      ByteReader r(theirs);
      status = std::max(status, static_cast<int>(r.get<std::int32_t>()));
    }
    return error ? error_status_ : status;
  }

  /// Tells every rank its exit status (and how many beats to drain).
  void finish_root(int status) {
    std::vector<ByteWriter> messages(static_cast<std::size_t>(size_));
    std::vector<MPI_Request> requests;
    for (int r = 1; r < size_; ++r) {
      ByteWriter& w = messages[static_cast<std::size_t>(r)];
      w.put(static_cast<std::int32_t>(status));
      w.put(static_cast<std::uint64_t>(beats_sent_[static_cast<std::size_t>(r)]));
      requests.emplace_back();
      MPI_Isend(w.data().data(), static_cast<int>(w.size()), MPI_BYTE, r, kTagStatus,
                MPI_COMM_WORLD, &requests.back());
    }
    for (MPI_Request& request : requests) wait_plain(request, "every rank to take its exit status");
    for (MPI_Request& request : beat_requests_) wait_plain(request, "every rank to take its beats");
    beat_requests_.clear();
  }

  // ---- other ranks --------------------------------------------------------

  int run_worker() {
    if (!options_.local_template.empty() && is_leader()) {
      send_blob(0, kTagNode, encode_discovery(discover_node()),
                "rank 0 to take this node's listing");
    }
    const std::string plan = receive_blob(0, kTagPlan, "its share of the files", true);
    ByteReader r(plan);
    const bool ok = r.get<std::uint8_t>() != 0;
    const int status = r.get<std::int32_t>();
    partitioned_ = r.get<std::uint8_t>() != 0;
    if (!ok) return finish_worker();
    (void)status;
    const auto n = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < n; ++i) {
      share_.global_index.push_back(r.get<std::uint64_t>());
      share_.inputs.push_back(get_input(r));
    }
    scan_and_send();
    const int verdict = finish_worker();
    if (verdict == kGoPartitioned) return run_partitioned();
    return verdict;
  }

  void scan_and_send() {
    std::uint64_t progress_sent = 0;
    std::vector<FileResult> files;
    {
      LocalScan scan(share_, scan_options());
      std::uint64_t progress[2] = {0, 0};
      MPI_Request request = MPI_REQUEST_NULL;
      auto last_send = Clock::time_point{};
      while (!scan.finished()) {
        int idle = 1;
        if (request != MPI_REQUEST_NULL) MPI_Test(&request, &idle, MPI_STATUS_IGNORE);
        if (idle && since(last_send) >= 0.25 &&
            (scan.bytes() != progress[0] || scan.files() != progress[1])) {
          progress[0] = scan.bytes();
          progress[1] = scan.files();
          MPI_Isend(progress, sizeof progress, MPI_BYTE, 0, kTagProgress, MPI_COMM_WORLD, &request);
          ++progress_sent;
          last_send = Clock::now();
        }
        poll_beat();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (request != MPI_REQUEST_NULL) wait_plain(request, "rank 0 to take a progress message");
      try {
        files = scan.take();
      } catch (const std::exception& e) {
        mpi_.abort(fmt::format("scan failed: {}", e.what()));
      }
    }

    // Two messages in flight: one is encoded while the other travels.
    std::uint64_t batches = 0;
    std::uint64_t bytes = 0;
    for (const FileResult& f : files) bytes += f.stats.bytes;
    if (partitioned()) {
      kept_ = std::move(files);  // the jobs stay here: the analysis comes to them
      files.clear();
    }
    BatchEncoder encoder(files, partitioned() ? std::vector<std::size_t>() : share_.global_index,
                         max_message_);
    std::string buffers[2];
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    for (int k = 0; !partitioned(); k ^= 1) {
      if (requests[k] != MPI_REQUEST_NULL) wait_plain(requests[k], "rank 0 to take the records");
      if (!encoder.next(buffers[k])) break;
      MPI_Isend(buffers[k].data(), static_cast<int>(buffers[k].size()), MPI_BYTE, 0, kTagData,
                MPI_COMM_WORLD, &requests[k]);
      ++batches;
    }
    for (MPI_Request& request : requests) {
      if (request != MPI_REQUEST_NULL) wait_plain(request, "rank 0 to take the records");
    }
    ByteWriter done;
    done.put(batches);
    done.put(progress_sent);
    done.put(bytes);
    done.put(static_cast<std::uint64_t>(share_.inputs.size()));
    MPI_Request request;
    MPI_Isend(done.data().data(), static_cast<int>(done.size()), MPI_BYTE, 0, kTagDone,
              MPI_COMM_WORLD, &request);
    wait_plain(request, "rank 0 to take the end of the records");
  }

  /// Waits for rank 0's verdict (it may analyse for a long time: its beats
  /// say it is alive), drains its beats, returns the status.
  int finish_worker() {
    const std::string message = receive(0, kTagStatus, "the exit status", true);
    ByteReader r(message);
    const int status = r.get<std::int32_t>();
    const auto beats = r.get<std::uint64_t>();
    // One receive for a beat is always posted here; the ones still on their
    // way are taken before MPI_Finalize, and the last receive is cancelled.
    while (beats_seen_ < beats) {
      const auto start = Clock::now();
      int done = 0;
      while (!done) {
        MPI_Test(&beat_request_, &done, MPI_STATUS_IGNORE);
        if (!done && since(start) > timeout_) mpi_.abort("rank 0's last messages did not arrive");
        if (!done) nap();
      }
      if (++beats_seen_ < beats) {
        MPI_Irecv(&beat_byte_, 0, MPI_BYTE, 0, kTagBeat, MPI_COMM_WORLD, &beat_request_);
      }
    }
    if (beat_request_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&beat_request_);
      MPI_Wait(&beat_request_, MPI_STATUS_IGNORE);
    }
    return status;
  }

  const MpiContext& mpi_;
  const ClusterOptions& options_;
  /// How the messages name the caller's options (the scan's words).
  const OptionWords& words_;
  const ClusterCallbacks& callbacks_;
  int error_status_;
  int rank_;
  int size_;
  double timeout_;
  double beat_interval_;
  std::size_t max_message_;
  int ranks_here_ = 1;
  NodeLayout layout_;

  /// The status rank 0 sends when the ranks go on to the partitioned
  /// analysis together (no exit status is negative).
  static constexpr int kGoPartitioned = -1;
  /// Whether the analysis is partitioned (ClusterCallbacks::on_partitioned,
  /// unless the inputs are joined on rank 0).
  bool partitioned_ = static_cast<bool>(callbacks_.on_partitioned);
  std::vector<FileResult> kept_;  // partitioned: what this rank read

  std::vector<InputFile> inputs_;  // rank 0: the global list
  std::vector<int> owner_;         // rank 0: rank of every file
  std::vector<ReadFailure> failures_;
  Share share_;

  char beat_byte_ = 0;
  std::vector<std::uint64_t> beats_sent_;  // rank 0, per rank
  std::vector<MPI_Request> beat_requests_;
  Clock::time_point last_beat_ = Clock::now();
  MPI_Request beat_request_ = MPI_REQUEST_NULL;  // other ranks
  std::uint64_t beats_seen_ = 0;
  Clock::time_point root_heard_ = Clock::now();
};

}  // namespace

bool cluster_support_built() { return true; }

int run_on_cluster(const ClusterOptions& options, const ClusterCallbacks& callbacks,
                   int error_status) {
  MpiContext mpi;
  Session session(mpi, options, callbacks, error_status);
  return session.run();
}

}  // namespace pipescope::distributed

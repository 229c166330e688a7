// The pure parts of `analyze --mpi` (engine/distributed), without MPI: file
// assignment, node layout, the merge of node listings, and the round trip of
// scanned runs through bounded messages into the single-process Run.
#include "distributed/run_transfer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "distributed/assignment.h"
#include "distributed/cluster.h"
#include "distributed/input_merge.h"
#include "distributed/node_layout.h"
#include "distributed/wire.h"
#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "ingest/run_merge.h"
#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using distributed::assign_files;

TEST(DistributedAssign, LargestFirstToTheLeastLoadedRank) {
  // 100 -> r0, 60 -> r1, 50 -> r1 (60 < 100), 40 -> r0 (100 < 110), 10 -> r1 (110 < 140).
  const std::vector<std::uint64_t> sizes = {50, 100, 10, 60, 40};
  EXPECT_EQ(assign_files(sizes, 2), (std::vector<int>{1, 0, 1, 1, 0}));
}

TEST(DistributedAssign, OneHugeFileDoesNotHoldBackTheOthers) {
  std::vector<std::uint64_t> sizes(9, 10);
  sizes.push_back(1000);
  const auto owner = assign_files(sizes, 4);
  std::vector<int> files(4, 0);
  for (const int o : owner) ++files[o];
  EXPECT_EQ(files[owner[9]], 1);  // the huge file's rank reads nothing else
  EXPECT_EQ(files[0] + files[1] + files[2] + files[3], 10);
}

TEST(DistributedAssign, EmptyFilesAreSpreadByCountAndMoreRanksThanFilesIsFine) {
  EXPECT_EQ(assign_files({0, 0, 0, 0}, 2), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(assign_files({5}, 8), (std::vector<int>{0}));
  EXPECT_TRUE(assign_files({}, 3).empty());
}

TEST(DistributedAssign, FilesStayWithinTheirNodesRanks) {
  // Files 0-2 on node 0 (ranks 0, 1), files 3-4 on node 1 (ranks 2, 3).
  const std::vector<std::uint64_t> sizes = {30, 20, 10, 5, 50};
  const auto owner = assign_files(sizes, {0, 0, 0, 1, 1}, {{0, 1}, {2, 3}});
  EXPECT_EQ(owner, (std::vector<int>{0, 1, 1, 3, 2}));
  EXPECT_THROW(assign_files({1}, {0}, {{}}), std::invalid_argument);
  EXPECT_THROW(assign_files({1}, {2}, {{0}}), std::invalid_argument);
}

TEST(DistributedNodes, SharedMemoryNodesNumberedByTheirLowestRank) {
  // Ranks 0, 2 share memory (leader 0); ranks 1, 3 (leader 1).
  const std::vector<distributed::RankIdentity> ranks = {
      {0, -1, -1}, {1, -1, -1}, {0, -1, -1}, {1, -1, -1}};
  const auto layout = distributed::layout_nodes(ranks);
  EXPECT_EQ(layout.node_of_rank, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(layout.ranks_of_node, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(layout.source, "shared-memory nodes");
}

TEST(DistributedNodes, SlurmNodeIdWhenItAgreesWithSharedMemory) {
  const auto slurm = distributed::layout_nodes({{0, -1, 5}, {0, -1, 5}, {2, -1, 3}, {2, -1, 3}});
  EXPECT_EQ(slurm.source, "SLURM_NODEID");
  EXPECT_EQ(slurm.node_of_rank, (std::vector<int>{5, 5, 3, 3}));
  EXPECT_EQ(slurm.nodes, (std::vector<int>{3, 5}));
  EXPECT_EQ(slurm.ranks_of_node[slurm.position(3)].front(), 2);
  // One SLURM_NODEID leaked into every rank of two nodes: not trusted.
  const auto leaked = distributed::layout_nodes({{0, -1, 0}, {1, -1, 0}});
  EXPECT_EQ(leaked.source, "shared-memory nodes");
  EXPECT_EQ(leaked.node_of_rank, (std::vector<int>{0, 1}));
  // PIPESCOPE_NODE on every rank wins.
  const auto forced = distributed::layout_nodes({{0, 1, 0}, {0, 0, 0}});
  EXPECT_EQ(forced.source, "PIPESCOPE_NODE");
  EXPECT_EQ(forced.node_of_rank, (std::vector<int>{1, 0}));
  EXPECT_EQ(forced.ranks_of_node, (std::vector<std::vector<int>>{{1}, {0}}));
}

TEST(DistributedNodes, TemplateAndEnvironment) {
  EXPECT_EQ(distributed::expand_node_template("/l/machine{node}/x{node}", 12), "/l/machine12/x12");
  EXPECT_EQ(distributed::expand_node_template("/shared/logs", 3), "/shared/logs");
  EXPECT_EQ(distributed::node_index_from_env("7"), 7);
  EXPECT_EQ(distributed::node_index_from_env(nullptr), -1);
  EXPECT_EQ(distributed::node_index_from_env(""), -1);
  EXPECT_EQ(distributed::node_index_from_env("-1"), -1);
  EXPECT_EQ(distributed::node_index_from_env("3x"), -1);
}

TEST(DistributedMerge, NodesNumberMachinesAndDevicesOnAndDropDuplicates) {
  const std::string multi = std::string(PIPESCOPE_TESTDATA) + "/multi";
  std::vector<distributed::NodeDiscovery> nodes(3);
  for (int n = 0; n < 3; ++n) {
    nodes[n].node = n;
    nodes[n].folder =
        multi + "/machine" + std::to_string(n == 2 ? 0 : n);  // node 2 = node 0's folder
    nodes[n].inputs = discover_inputs({nodes[n].folder});
    for (const InputFile& f : nodes[n].inputs)
      nodes[n].keys.push_back(distributed::file_key(f.path));
  }
  const auto merged = distributed::merge_node_inputs(nodes);
  const auto single = discover_inputs({multi + "/machine0", multi + "/machine1"});
  ASSERT_EQ(merged.inputs.size(), single.size());
  EXPECT_EQ(merged.duplicates, 2u);
  for (std::size_t i = 0; i < single.size(); ++i) {
    EXPECT_EQ(merged.inputs[i].path, single[i].path);
    EXPECT_EQ(merged.inputs[i].machine, single[i].machine);
    EXPECT_EQ(merged.inputs[i].machine_name, single[i].machine_name);
    EXPECT_EQ(merged.inputs[i].device, single[i].device);
    EXPECT_EQ(merged.inputs[i].rank, single[i].rank);
    EXPECT_EQ(merged.node_of_input[i], i < 2 ? 0u : 1u);
  }
}

TEST(DistributedMerge, NodeIndexNotFolderNameNumbersTheMachines) {
  // `--local` numbers machines by node: node 0 read machine1/, node 1
  // machine0/. A single process given both folders orders them by name.
  const std::string multi = std::string(PIPESCOPE_TESTDATA) + "/multi";
  std::vector<distributed::NodeDiscovery> nodes(2);
  for (int n = 0; n < 2; ++n) {
    nodes[n].node = n;
    nodes[n].folder = multi + "/machine" + std::to_string(1 - n);
    nodes[n].inputs = discover_inputs({nodes[n].folder});
    for (const InputFile& f : nodes[n].inputs)
      nodes[n].keys.push_back(distributed::file_key(f.path));
  }
  const auto merged = distributed::merge_node_inputs(nodes);
  const auto single = discover_inputs({nodes[0].folder, nodes[1].folder});
  ASSERT_EQ(merged.inputs.size(), 4u);
  ASSERT_EQ(single.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(merged.inputs[i].machine, static_cast<int>(i / 2));
    EXPECT_EQ(merged.inputs[i].machine_name, i < 2 ? "machine1" : "machine0");
    EXPECT_EQ(merged.inputs[i].device, static_cast<int>(i));
    EXPECT_EQ(single[i].machine_name, i < 2 ? "machine0" : "machine1");
  }
}

TEST(DistributedWire, InputFileRoundTripAndTruncation) {
  InputFile in;
  in.path = "/a/machine3/workerlog.7.zst";
  in.format = InputFormat::ivl;
  in.size_bytes = 1ull << 40;
  in.machine = 3;
  in.machine_name = "machine3";
  in.rank = 7;
  in.device = 31;
  distributed::ByteWriter w;
  distributed::put_input(w, in);
  distributed::ByteReader r(w.data());
  const InputFile out = distributed::get_input(r);
  EXPECT_TRUE(r.done());
  EXPECT_EQ(out.path, in.path);
  EXPECT_EQ(out.format, in.format);
  EXPECT_EQ(out.size_bytes, in.size_bytes);
  EXPECT_EQ(out.machine_name, in.machine_name);
  EXPECT_EQ(out.device, 31);
  distributed::ByteReader cut(std::string_view(w.data()).substr(0, w.size() - 1));
  EXPECT_THROW(distributed::get_input(cut), distributed::WireError);
}

/// The GPU activities of two runs, field by field.
void expect_same_kernels(const std::vector<RankKernels>& a, const std::vector<RankKernels>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const RankKernels& x = a[i];
    const RankKernels& y = b[i];
    SCOPED_TRACE(x.path + " pid " + std::to_string(x.pid));
    EXPECT_EQ(x.path, y.path);
    EXPECT_EQ(x.pid, y.pid);
    EXPECT_EQ(x.device, y.device);
    EXPECT_EQ(x.machine, y.machine);
    EXPECT_EQ(x.global_rank, y.global_rank);
    EXPECT_EQ(x.rank_claim, y.rank_claim);
    EXPECT_EQ(x.origin, y.origin);
    EXPECT_EQ(x.comm_rank, y.comm_rank);
    EXPECT_EQ(x.world_size, y.world_size);
    EXPECT_EQ(x.device_ordinal, y.device_ordinal);
    EXPECT_EQ(x.compute, y.compute);
    ASSERT_EQ(x.comm.size(), y.comm.size());
    for (std::size_t k = 0; k < x.comm.size(); ++k) {
      const CommKernel& c = x.comm[k];
      const CommKernel& d = y.comm[k];
      EXPECT_EQ(c.start, d.start);
      EXPECT_EQ(c.end, d.end);
      EXPECT_EQ(c.step, d.step);
      EXPECT_EQ(c.op, d.op);
      EXPECT_EQ(c.source, d.source);
      EXPECT_EQ(c.collective, d.collective);
      EXPECT_EQ(c.group_name, d.group_name);
      EXPECT_EQ(c.group_ranks, d.group_ranks);
      EXPECT_EQ(c.p2p, d.p2p);
      EXPECT_EQ(c.comms_id, d.comms_id);
    }
    ASSERT_EQ(x.steps.size(), y.steps.size());
    for (std::size_t s = 0; s < x.steps.size(); ++s) {
      EXPECT_EQ(x.steps[s].step, y.steps[s].step);
      EXPECT_EQ(x.steps[s].first_start, y.steps[s].first_start);
      EXPECT_EQ(x.steps[s].last_end, y.steps[s].last_end);
    }
    EXPECT_EQ(x.step_spans, y.step_spans);
    EXPECT_EQ(x.partial_step, y.partial_step);
    EXPECT_EQ(x.activities, y.activities);
    EXPECT_EQ(x.without_launch, y.without_launch);
    EXPECT_EQ(x.first_start, y.first_start);
    EXPECT_EQ(x.last_end, y.last_end);
  }
}

void expect_same_run(const pipescope::Run& a, const pipescope::Run& b) {
  ASSERT_EQ(a.devices.size(), b.devices.size());
  EXPECT_EQ(a.first_step, b.first_step);
  ASSERT_EQ(a.types.size(), b.types.size());
  for (TypeId t = 0; t < a.types.size(); ++t) EXPECT_EQ(a.types.name(t), b.types.name(t));
  ASSERT_EQ(a.notes.size(), b.notes.size());
  for (std::size_t n = 0; n < a.notes.size(); ++n) {
    EXPECT_EQ(a.notes[n].code, b.notes[n].code);
    EXPECT_EQ(a.notes[n].message, b.notes[n].message);
    EXPECT_EQ(a.notes[n].count, b.notes[n].count);
  }
  expect_same_kernels(a.kernels, b.kernels);
  for (std::size_t d = 0; d < a.devices.size(); ++d) {
    const Device& x = a.devices[d];
    const Device& y = b.devices[d];
    EXPECT_EQ(x.index, y.index);
    EXPECT_EQ(x.machine, y.machine);
    EXPECT_EQ(x.machine_name, y.machine_name);
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.path, y.path);
    EXPECT_EQ(x.step_starts, y.step_starts) << x.path;
    ASSERT_EQ(x.jobs.size(), y.jobs.size()) << x.path;
    for (std::size_t j = 0; j < x.jobs.size(); ++j) {
      EXPECT_EQ(x.jobs[j].start_ns, y.jobs[j].start_ns);
      EXPECT_EQ(x.jobs[j].end_ns, y.jobs[j].end_ns);
      EXPECT_EQ(x.jobs[j].job_id, y.jobs[j].job_id);
      EXPECT_EQ(x.jobs[j].micro_batch, y.jobs[j].micro_batch);
      EXPECT_EQ(x.jobs[j].line, y.jobs[j].line);
      EXPECT_EQ(a.types.name(x.jobs[j].type), b.types.name(y.jobs[j].type));
    }
    EXPECT_EQ(a.inputs[d].path, b.inputs[d].path);
    EXPECT_EQ(a.inputs[d].bytes, b.inputs[d].bytes);
    EXPECT_EQ(a.inputs[d].lines, b.inputs[d].lines);
    EXPECT_EQ(a.inputs[d].matched, b.inputs[d].matched);
    EXPECT_EQ(a.inputs[d].malformed, b.inputs[d].malformed);
    EXPECT_EQ(a.inputs[d].oversized, b.inputs[d].oversized);
    EXPECT_EQ(a.inputs[d].partial_last_line_bytes, b.inputs[d].partial_last_line_bytes);
    EXPECT_EQ(a.inputs[d].error, b.inputs[d].error);
  }
  ASSERT_EQ(a.diagnostics.size(), b.diagnostics.size());
  for (std::size_t i = 0; i < a.diagnostics.size(); ++i) {
    EXPECT_EQ(a.diagnostics[i].location(), b.diagnostics[i].location());
    EXPECT_EQ(a.diagnostics[i].message, b.diagnostics[i].message);
  }
}

/// Scans `inputs` as `ranks` ranks would (each its share), sends every share
/// but rank 0's through messages of at most `max_bytes`, joins (a format
/// with a join: ingest.h) and merges, as rank 0 does.
pipescope::Run scan_as_ranks(const std::vector<InputFile>& inputs, int ranks,
                             std::size_t max_bytes) {
  std::vector<std::uint64_t> sizes;
  for (const InputFile& f : inputs) sizes.push_back(f.size_bytes);
  const auto owner = assign_files(sizes, ranks);
  distributed::RunAssembler assembler(inputs.size());
  IngestOptions options;
  options.threads = 2;
  // Senders in reverse order: rank 0 must not depend on arrival order.
  for (int r = ranks - 1; r >= 0; --r) {
    std::vector<InputFile> share;
    std::vector<std::size_t> global;
    for (std::size_t f = 0; f < inputs.size(); ++f) {
      if (owner[f] == r) {
        share.push_back(inputs[f]);
        global.push_back(f);
      }
    }
    std::vector<pipescope::FileResult> files = read_input_files(share, options);
    if (r == 0) {
      assembler.add_local(0, std::move(files), global);
      continue;
    }
    std::uint64_t jobs = 0;
    for (const pipescope::FileResult& f : files) {
      jobs += f.device.jobs.size();
      for (const Device& more : f.more_devices) jobs += more.jobs.size();
    }
    distributed::BatchEncoder encoder(files, global, max_bytes);
    std::string message;
    std::size_t messages = 0;
    while (encoder.next(message)) {
      // Only a file header (paths, up to 5 diagnostics) may exceed the
      // bound, alone at the start of its message (record kind 2).
      if (message.size() > max_bytes) {
        EXPECT_EQ(message[0], 2) << message.size();
      }
      assembler.add_message(r, message);
      ++messages;
    }
    // A share's jobs are split over as many messages as the bound needs.
    EXPECT_GE(messages, jobs * sizeof(Job) / max_bytes);
  }
  EXPECT_EQ(assembler.missing(), 0u);
  std::vector<pipescope::FileResult> files = assembler.take();
  join_file_results(files, inputs, options);
  return merge_file_results(std::move(files));
}

TEST(DistributedTransfer, MergedRunEqualsTheSingleProcessRun) {
  for (const char* sample : {"single", "multi", "edge", "relaunch"}) {
    const auto inputs = discover_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + sample});
    IngestOptions options;
    options.threads = 2;
    const pipescope::Run reference = ingest_inputs(inputs, options);
    for (const int ranks : {1, 2, 3, 4, 7}) {
      for (const std::size_t max_bytes : {std::size_t{512}, distributed::kDefaultMessageBytes}) {
        SCOPED_TRACE(std::string(sample) + " ranks " + std::to_string(ranks) + " max " +
                     std::to_string(max_bytes));
        expect_same_run(reference, scan_as_ranks(inputs, ranks, max_bytes));
      }
    }
  }
}

/// Nsight Systems exports read apart (each rank its share) and joined on
/// rank 0: the run one process reads from them together, GPU activities,
/// peers and jobs alike. The files are named against their ranks' order,
/// so that a device discovery numbered in one export holds a process read
/// from another, with its job types.
TEST(DistributedTransfer, ExportsReadApartAndJoinedEqualTheSingleProcessRun) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  const auto simulated =
      testing::run_cli("simulate --format nsys -o " + testing::shell_quote(run) +
                       " --schedule 1f1b --stages 4 --micro-batches 4 --machines 2 --steps 2 "
                       "--kernels-per-job 3 --seed 3");
  ASSERT_EQ(simulated.status, 0) << simulated.output;
  const char* names[] = {"c.sqlite", "a.sqlite", "d.sqlite", "b.sqlite"};
  for (int r = 0; r < 4; ++r) {
    std::filesystem::rename(run + "/rank_" + std::to_string(r) + ".sqlite", run + "/" + names[r]);
  }
  const auto inputs = discover_inputs({run});
  ASSERT_EQ(inputs.size(), 4u);
  ASSERT_EQ(std::filesystem::path(inputs[0].path).filename(), "a.sqlite");
  IngestOptions options;
  options.threads = 2;
  const pipescope::Run reference = ingest_inputs(inputs, options);
  ASSERT_EQ(reference.devices.size(), 4u);
  EXPECT_EQ(reference.kernels.size(), 4u);
  EXPECT_EQ(std::filesystem::path(reference.devices[0].path).filename(), "c.sqlite");
  EXPECT_GT(reference.job_count(), 0u);
  for (const int ranks : {1, 2, 3, 4}) {
    for (const std::size_t max_bytes : {std::size_t{512}, distributed::kDefaultMessageBytes}) {
      SCOPED_TRACE("ranks " + std::to_string(ranks) + " max " + std::to_string(max_bytes));
      expect_same_run(reference, scan_as_ranks(inputs, ranks, max_bytes));
    }
  }
}

TEST(DistributedTransfer, MissingOrContradictoryMessagesAreRefused) {
  const auto inputs = discover_inputs({std::string(PIPESCOPE_TESTDATA) + "/multi"});
  IngestOptions options;
  const std::vector<pipescope::FileResult> files = read_input_files(inputs, options);
  std::vector<std::size_t> global = {0, 1, 2, 3};
  distributed::BatchEncoder encoder(files, global, 256);
  std::vector<std::string> messages;
  for (std::string m; encoder.next(m);) messages.push_back(m);
  ASSERT_GT(messages.size(), 4u);

  distributed::RunAssembler partial(inputs.size());
  for (std::size_t i = 0; i + 1 < messages.size(); ++i) partial.add_message(1, messages[i]);
  EXPECT_GT(partial.missing(), 0u);
  EXPECT_THROW(partial.finish(), distributed::WireError);

  distributed::RunAssembler twice(inputs.size());
  for (const std::string& m : messages) twice.add_message(1, m);
  EXPECT_THROW(twice.add_message(2, messages.front() + messages[1]), distributed::WireError);

  distributed::RunAssembler cut(inputs.size());
  EXPECT_THROW(cut.add_message(1, messages[1].substr(0, messages[1].size() - 3)),
               distributed::WireError);
  distributed::RunAssembler too_few(2);  // a file index beyond the list
  EXPECT_THROW(for (const std::string& m
                    : messages) too_few.add_message(1, m),
               distributed::WireError);
}

TEST(DistributedCli, MpiFlagWithoutMpiOrUsageErrors) {
  using testing::run_cli;
  using testing::shell_quote;
  const std::string single = shell_quote(std::string(PIPESCOPE_TESTDATA) + "/single");
  testing::TempDir out;
  if (!distributed::cluster_support_built()) {
    const auto result = run_cli("analyze --mpi " + single + " -o " + shell_quote(out / "o"));
    EXPECT_EQ(result.status, 2);
    EXPECT_NE(result.output.find("built without MPI"), std::string::npos) << result.output;
  }
  const auto local =
      run_cli("analyze --local " + shell_quote(out / "m{node}") + " -o " + shell_quote(out / "o"));
  EXPECT_EQ(local.status, 2);
  EXPECT_NE(local.output.find("--local needs --mpi"), std::string::npos) << local.output;
  const auto none = run_cli("analyze -o " + shell_quote(out / "o"));
  EXPECT_EQ(none.status, 2);
}

}  // namespace
}  // namespace pipescope

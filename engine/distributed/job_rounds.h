// Jobs sent between ranks in rounds of bounded bytes (exchange.h
// job_round_bytes): the partitioned analysis's exchanges of jobs
// (partitioned_analysis.h) and the HTML report's view of the drawn steps
// (partitioned_html.h) send them this way, so that no rank builds every
// message at once.
//
//   JobRounds rounds;
//   rounds.blocks[p] = {{device, positions}, ...};   // what goes to rank p
//   rounds.held = [&](std::size_t d, std::uint32_t at) { return HeldJob{...}; };
//   rounds.sent = [&](std::size_t p, std::size_t k) { ... };
//   rounds.receive = [&](std::size_t d, std::uint64_t count, ByteReader& r) { ... };
//   send_in_rounds(exchange, rounds);   // every rank alike
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "distributed/exchange.h"
#include "distributed/wire.h"
#include "model/run.h"

namespace pipescope::distributed {

/// One held job as it travels: the job, its index on its device, its step.
struct HeldJob {
  Job job;
  std::uint32_t index = 0;
  std::int32_t step = 0;
};

/// One device's jobs bound for one destination: positions into the
/// sender's arrays, ascending.
struct OutBlock {
  std::size_t device = 0;
  std::vector<std::uint32_t> positions;
};

/// What send_in_rounds sends and how it is read.
struct JobRounds {
  /// blocks[p]: destination p's blocks, in the order they go.
  std::vector<std::vector<OutBlock>> blocks;
  /// The job at `position` of `device` as it travels.
  std::function<HeldJob(std::size_t device, std::uint32_t position)> held;
  /// Bytes written after a piece of a block's jobs (may be none), and at
  /// most how many per job.
  std::function<void(ByteWriter&, std::size_t device, std::span<const std::uint32_t>)> tail;
  std::size_t tail_bytes_per_job = 0;
  /// Called once block k of destination p has gone whole (its storage may
  /// be freed), empty blocks included; may be unset.
  std::function<void(std::size_t p, std::size_t k)> sent;
  /// Reads `count` HeldJobs of `device` and what `tail` wrote after them.
  std::function<void(std::size_t device, std::uint64_t count, ByteReader&)> receive;
};

/// Sends every destination's blocks in rounds of at most job_round_bytes /
/// ranks bytes per destination (at least one job), every rank going on
/// while any has jobs left (so that all run the same number of
/// all-to-alls). Throws WireError for a message that does not decode, and
/// what the exchange throws when another rank fails.
void send_in_rounds(Exchange& exchange, JobRounds& rounds);

}  // namespace pipescope::distributed

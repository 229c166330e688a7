#include "distributed/job_rounds.h"

#include <algorithm>
#include <string>
#include <utility>

namespace pipescope::distributed {

namespace {

/// The most bytes of jobs a rank sends one destination in a round
/// (job_round_bytes over all of them), so that no rank builds every message
/// at once.
std::size_t round_budget(std::size_t ranks) {
  // At least one job per destination per round, with its headers.
  return std::max(job_round_bytes() / std::max<std::size_t>(ranks, 1), sizeof(HeldJob) + 64);
}

}  // namespace

void send_in_rounds(Exchange& exchange, JobRounds& rounds) {
  const std::size_t ranks = static_cast<std::size_t>(exchange.size());
  rounds.blocks.resize(ranks);
  const std::size_t budget = round_budget(ranks);
  const std::size_t per_job = sizeof(HeldJob) + rounds.tail_bytes_per_job;
  // Where each destination's blocks stand: the next block and position.
  struct Cursor {
    std::size_t block = 0;
    std::size_t position = 0;
  };
  std::vector<Cursor> cursor(ranks);
  for (bool more = true; more;) {
    std::vector<std::string> out(ranks);
    bool mine_left = false;
    for (std::size_t p = 0; p < ranks; ++p) {
      ByteWriter w;
      w.put(std::uint8_t{0});  // whether the sender has jobs left after this round
      Cursor& c = cursor[p];
      std::vector<OutBlock>& blocks = rounds.blocks[p];
      while (c.block < blocks.size() && w.size() + per_job + 32 <= budget) {
        OutBlock& block = blocks[c.block];
        const std::size_t fit = (budget - w.size() - 32) / per_job;
        const std::size_t n = std::min(fit, block.positions.size() - c.position);
        if (n > 0) {
          w.put(static_cast<std::uint64_t>(block.device));
          w.put(static_cast<std::uint64_t>(n));
          const std::span<const std::uint32_t> piece(block.positions.data() + c.position, n);
          for (const std::uint32_t at : piece) w.put(rounds.held(block.device, at));
          if (rounds.tail) rounds.tail(w, block.device, piece);
          c.position += n;
        }
        if (c.position == block.positions.size()) {
          std::vector<std::uint32_t>().swap(block.positions);
          if (rounds.sent) rounds.sent(p, c.block);
          ++c.block;
          c.position = 0;
        }
      }
      mine_left = mine_left || c.block < blocks.size();
      out[p] = w.take();
    }
    // Every rank tells every rank whether it has jobs left for anyone, so
    // that all of them agree on whether another round comes.
    for (std::string& message : out) message[0] = static_cast<char>(mine_left);
    more = false;
    std::vector<std::string> in = exchange.all_to_all(std::move(out));
    for (std::string& message : in) {
      ByteReader r(message);
      const bool left = r.get<std::uint8_t>() != 0;
      more = more || left;
      while (!r.done()) {
        const auto d = r.get<std::uint64_t>();
        const auto count = r.get<std::uint64_t>();
        if (count > r.left() / sizeof(HeldJob)) throw WireError("message ends early");
        rounds.receive(static_cast<std::size_t>(d), count, r);
      }
      std::string().swap(message);  // its bytes are where they belong now
    }
  }
}

}  // namespace pipescope::distributed

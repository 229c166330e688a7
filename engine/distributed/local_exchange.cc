#include "distributed/local_exchange.h"

#include <utility>

namespace pipescope::distributed {

LocalBoard::LocalBoard(int ranks) : ranks_(ranks), posted_(static_cast<std::size_t>(ranks)) {}

std::vector<std::string> LocalBoard::exchange(int rank, std::vector<std::string> out) {
  std::unique_lock lock(mutex_);
  // A rank that ran ahead waits until the previous round was collected.
  changed_.wait(lock, [&] { return aborted_ || arrived_ < ranks_; });
  if (aborted_) throw LocalExchangeAborted();
  const std::size_t round = round_;
  posted_[static_cast<std::size_t>(rank)] = std::move(out);
  if (++arrived_ == ranks_) changed_.notify_all();
  changed_.wait(lock, [&] { return aborted_ || round_ != round || arrived_ == ranks_; });
  if (aborted_) throw LocalExchangeAborted();
  std::vector<std::string> in(static_cast<std::size_t>(ranks_));
  for (int s = 0; s < ranks_; ++s) {
    in[static_cast<std::size_t>(s)] =
        std::move(posted_[static_cast<std::size_t>(s)][static_cast<std::size_t>(rank)]);
  }
  if (++collected_ == ranks_) {
    // The last one out opens the next round.
    arrived_ = collected_ = 0;
    ++round_;
    for (auto& p : posted_) p.clear();
    changed_.notify_all();
  }
  return in;
}

void LocalBoard::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  changed_.notify_all();
}

std::vector<std::string> LocalExchange::all_gather(std::string mine) {
  std::vector<std::string> out(static_cast<std::size_t>(size_), mine);
  return board_.exchange(rank_, std::move(out));
}

std::vector<std::string> LocalExchange::all_to_all(std::vector<std::string> out) {
  out.resize(static_cast<std::size_t>(size_));
  return board_.exchange(rank_, std::move(out));
}

}  // namespace pipescope::distributed

#include "distributed/mpi_exchange.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <utility>

namespace pipescope::distributed {

namespace {

/// The most bytes one rank sends one peer in one round (an int count);
/// PIPESCOPE_MPI_MESSAGE_BYTES makes it small for tests, so that small
/// inputs take many rounds.
std::uint64_t round_bytes() {
  static const std::uint64_t bytes = [] {
    if (const char* env = std::getenv("PIPESCOPE_MPI_MESSAGE_BYTES")) {
      const long long n = std::atoll(env);
      if (n > 0) return static_cast<std::uint64_t>(n);
    }
    return std::uint64_t{1} << 30;
  }();
  return bytes;
}

/// Waits for `request`, aborting every rank past the deadline.
void wait(const MpiContext& mpi, MPI_Request& request, double timeout_s, const char* what,
          const OptionWords& words) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  int done = 0;
  for (unsigned spins = 0;; ++spins) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (Clock::now() > deadline) {
      mpi.abort(
          fmt::format("no answer from every rank in {} s while exchanging {} (a rank died, "
                      "hangs or reads much more than the others; {} sets the wait)",
                      timeout_s, what, words.name(CallerOption::mpi_timeout)));
    }
    // Spin a little (collectives of small messages end in microseconds),
    // then sleep so a waiting rank leaves its core to the scan threads.
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

MpiExchange::MpiExchange(const MpiContext& mpi, double timeout_s,
                         std::shared_ptr<const OptionWords> words)
    : mpi_(mpi), timeout_s_(std::max(timeout_s, 0.1)), words_(std::move(words)) {}

std::vector<std::string> MpiExchange::all_gather(std::string mine) {
  const auto n = static_cast<std::size_t>(size());
  std::vector<std::uint64_t> sizes(n);
  std::uint64_t my_size = mine.size();
  MPI_Request request;
  MPI_Iallgather(&my_size, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD,
                 &request);
  wait(mpi_, request, timeout_s_, "sizes", *words_);
  std::vector<std::string> in(n);
  for (std::size_t r = 0; r < n; ++r) in[r].resize(sizes[r]);
  // Rounds of at most round_bytes() from each rank, until every rank's bytes
  // have gone (every rank runs the same number of rounds).
  const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<int> counts(n), offsets(n);
  std::string buffer;
  for (std::uint64_t at = 0; at < largest || at == 0; at += round_bytes()) {
    std::uint64_t total = 0;
    for (std::size_t r = 0; r < n; ++r) {
      const std::uint64_t left = sizes[r] > at ? sizes[r] - at : 0;
      counts[r] = static_cast<int>(std::min(left, round_bytes()));
      offsets[r] = static_cast<int>(total);
      total += static_cast<std::uint64_t>(counts[r]);
    }
    // Displacements are ints too: a round larger than that goes rank by rank.
    if (total > static_cast<std::uint64_t>(INT32_MAX)) {
      for (std::size_t r = 0; r < n; ++r) {
        char* where = in[r].data() + std::min<std::uint64_t>(at, in[r].size());
        if (static_cast<int>(r) == rank()) {
          std::copy_n(mine.data() + std::min<std::uint64_t>(at, mine.size()), counts[r], where);
        }
        MPI_Ibcast(where, counts[r], MPI_BYTE, static_cast<int>(r), MPI_COMM_WORLD, &request);
        wait(mpi_, request, timeout_s_, "a rank's part", *words_);
      }
    } else {
      buffer.resize(total);
      const auto me = static_cast<std::size_t>(rank());
      MPI_Iallgatherv(mine.data() + std::min<std::uint64_t>(at, mine.size()), counts[me], MPI_BYTE,
                      buffer.data(), counts.data(), offsets.data(), MPI_BYTE, MPI_COMM_WORLD,
                      &request);
      wait(mpi_, request, timeout_s_, "the ranks' parts", *words_);
      for (std::size_t r = 0; r < n; ++r) {
        std::copy_n(buffer.data() + offsets[r], counts[r],
                    in[r].data() + std::min<std::uint64_t>(at, in[r].size()));
      }
    }
    if (largest == 0) break;
  }
  return in;
}

std::vector<std::string> MpiExchange::all_to_all(std::vector<std::string> out) {
  const auto n = static_cast<std::size_t>(size());
  out.resize(n);
  std::vector<std::uint64_t> send_sizes(n), receive_sizes(n);
  for (std::size_t r = 0; r < n; ++r) send_sizes[r] = out[r].size();
  MPI_Request request;
  MPI_Ialltoall(send_sizes.data(), 1, MPI_UINT64_T, receive_sizes.data(), 1, MPI_UINT64_T,
                MPI_COMM_WORLD, &request);
  wait(mpi_, request, timeout_s_, "sizes", *words_);
  std::vector<std::string> in(n);
  for (std::size_t r = 0; r < n; ++r) in[r].resize(receive_sizes[r]);
  // The most any rank sends any peer decides the rounds; every rank learns
  // it (a max over everyone) so that all run the same number.
  std::uint64_t mine_max = *std::max_element(send_sizes.begin(), send_sizes.end()), largest = 0;
  MPI_Iallreduce(&mine_max, &largest, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD, &request);
  wait(mpi_, request, timeout_s_, "sizes", *words_);
  // A round moves at most round_bytes() per pair, and its buffers' offsets
  // must be ints: the round's share per pair shrinks with the ranks.
  const std::uint64_t per_pair = std::max<std::uint64_t>(
      1, std::min(round_bytes(), static_cast<std::uint64_t>(INT32_MAX) / n));
  std::vector<int> send_counts(n), send_offsets(n), receive_counts(n), receive_offsets(n);
  std::string send, receive;
  for (std::uint64_t at = 0; at < largest || at == 0; at += per_pair) {
    std::uint64_t send_total = 0, receive_total = 0;
    for (std::size_t r = 0; r < n; ++r) {
      send_counts[r] =
          static_cast<int>(std::min(send_sizes[r] > at ? send_sizes[r] - at : 0, per_pair));
      send_offsets[r] = static_cast<int>(send_total);
      send_total += static_cast<std::uint64_t>(send_counts[r]);
      receive_counts[r] =
          static_cast<int>(std::min(receive_sizes[r] > at ? receive_sizes[r] - at : 0, per_pair));
      receive_offsets[r] = static_cast<int>(receive_total);
      receive_total += static_cast<std::uint64_t>(receive_counts[r]);
    }
    send.resize(send_total);
    for (std::size_t r = 0; r < n; ++r) {
      std::copy_n(out[r].data() + std::min<std::uint64_t>(at, out[r].size()), send_counts[r],
                  send.data() + send_offsets[r]);
    }
    receive.resize(receive_total);
    MPI_Ialltoallv(send.data(), send_counts.data(), send_offsets.data(), MPI_BYTE, receive.data(),
                   receive_counts.data(), receive_offsets.data(), MPI_BYTE, MPI_COMM_WORLD,
                   &request);
    wait(mpi_, request, timeout_s_, "jobs", *words_);
    for (std::size_t r = 0; r < n; ++r) {
      std::copy_n(receive.data() + receive_offsets[r], receive_counts[r],
                  in[r].data() + std::min<std::uint64_t>(at, in[r].size()));
    }
    if (largest == 0) break;
  }
  return in;
}

}  // namespace pipescope::distributed

// The Exchange (exchange.h) of ranks that are threads of one process: how the
// tests run the partitioned analysis at 1 to N ranks without MPI, and the
// reference the MPI exchange must agree with.
//
//   std::vector<Result> out = run_local_ranks<Result>(4, [&](Exchange& ex) {
//     return analyse_my_part(ex);   // every rank's body, on its own thread
//   });
//
// A rank that throws makes every other rank's next (or pending) collective
// throw LocalExchangeAborted; run_local_ranks then rethrows the first
// exception that was not such an echo.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distributed/exchange.h"

namespace pipescope::distributed {

/// Thrown in a rank whose peer failed.
struct LocalExchangeAborted : std::runtime_error {
  LocalExchangeAborted() : std::runtime_error("another rank failed") {}
};

/// The board the threads meet on: one round of a collective at a time.
class LocalBoard {
 public:
  explicit LocalBoard(int ranks);

  /// Rank `rank` posts `out` (one string per destination) and waits until
  /// every rank has posted; returns what each rank posted for `rank`.
  std::vector<std::string> exchange(int rank, std::vector<std::string> out);
  /// Wakes every waiting rank with LocalExchangeAborted.
  void abort();

 private:
  int ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::vector<std::string>> posted_;  // [sender][destination]
  int arrived_ = 0;
  int collected_ = 0;
  std::size_t round_ = 0;
  bool aborted_ = false;
};

class LocalExchange final : public Exchange {
 public:
  LocalExchange(LocalBoard& board, int rank, int size) : board_(board), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::string> all_gather(std::string mine) override;
  std::vector<std::string> all_to_all(std::vector<std::string> out) override;

 private:
  LocalBoard& board_;
  int rank_;
  int size_;
};

/// Runs `body` on `ranks` threads, each with its LocalExchange; returns their
/// results by rank.
template <typename Result>
std::vector<Result> run_local_ranks(int ranks, const std::function<Result(Exchange&)>& body) {
  LocalBoard board(ranks);
  std::vector<Result> results(static_cast<std::size_t>(ranks));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      LocalExchange exchange(board, r, ranks);
      try {
        results[static_cast<std::size_t>(r)] = body(exchange);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        board.abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::exception_ptr echo;
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const LocalExchangeAborted&) {
      echo = e;
    } catch (...) {
      throw;
    }
  }
  if (echo) std::rethrow_exception(echo);
  return results;
}

}  // namespace pipescope::distributed

#include "export/ordered_writer.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace pipescope {

namespace {

std::string_view view(const fmt::memory_buffer& buffer) { return {buffer.data(), buffer.size()}; }

// Buffers handed out to the pieces in flight and given back once written.
class BufferPool {
 public:
  fmt::memory_buffer* take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
      all_.push_back(std::make_unique<fmt::memory_buffer>());
      return all_.back().get();
    }
    fmt::memory_buffer* buffer = free_.back();
    free_.pop_back();
    return buffer;
  }
  void give_back(fmt::memory_buffer* buffer) {
    std::lock_guard lock(mutex_);
    free_.push_back(buffer);
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<fmt::memory_buffer>> all_;
  std::vector<fmt::memory_buffer*> free_;
};

}  // namespace

void write_in_order(AtomicFile& file, std::size_t pieces, unsigned threads,
                    const PieceFormatter& format, const PieceFinisher& finish) {
  if (pieces == 0) return;
  const unsigned workers =
      threads > 0 ? threads : static_cast<unsigned>(tbb::info::default_concurrency());
  if (workers <= 1 || pieces == 1) {
    fmt::memory_buffer buffer;
    for (std::size_t k = 0; k < pieces; ++k) {
      buffer.clear();
      format(k, buffer);
      file.write_through(view(buffer));
      if (finish) finish(k);
    }
    return;
  }

  struct Item {
    std::size_t piece = 0;
    fmt::memory_buffer* buffer = nullptr;
  };
  BufferPool pool;
  std::size_t next = 0;
  // As the readers limit their threads (ingest.cc); two pieces in flight per
  // thread that can run, so more threads than cores do not cost memory.
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, workers);
  const auto cores = static_cast<unsigned>(tbb::info::default_concurrency());
  const std::size_t in_flight = 2 * static_cast<std::size_t>(std::min(workers, cores));
  tbb::parallel_pipeline(
      in_flight,
      tbb::make_filter<void, Item>(tbb::filter_mode::serial_in_order,
                                   [&](tbb::flow_control& control) -> Item {
                                     if (next == pieces) {
                                       control.stop();
                                       return {};
                                     }
                                     return {next++, pool.take()};
                                   }) &
          tbb::make_filter<Item, Item>(tbb::filter_mode::parallel,
                                       [&](Item item) {
                                         item.buffer->clear();
                                         format(item.piece, *item.buffer);
                                         return item;
                                       }) &
          tbb::make_filter<Item, void>(tbb::filter_mode::serial_in_order, [&](Item item) {
            file.write_through(view(*item.buffer));
            pool.give_back(item.buffer);
            if (finish) finish(item.piece);
          }));
}

}  // namespace pipescope

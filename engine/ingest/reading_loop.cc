#include "ingest/reading_loop.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <mutex>
#include <system_error>

#include "ingest/progress_meter.h"
#include "source/byte_stream.h"

namespace pipescope {

namespace {

/// The largest chunk read at once: the few in flight stay in the caches,
/// from the copy out of the page cache to the parse.
constexpr std::size_t kChunkBytes = std::size_t{256} << 10;
/// The smallest buffer made: below it, a buffer costs about the same.
constexpr std::size_t kSmallestChunkBytes = std::size_t{64} << 10;

/// The chunks of one file, reused so that its chunks reuse the same few
/// buffers instead of faulting in fresh pages for every chunk. Thread-safe.
class ChunkPool {
 public:
  ChunkPool(ChunkedFileReader& reader, std::size_t chunk) : reader_(reader), chunk_(chunk) {}

  ReadChunk* take() {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      ReadChunk* chunk = free_.back();
      free_.pop_back();
      return chunk;
    }
    auto& chunk = all_.emplace_back(std::make_unique<ReadChunk>());
    chunk->buffer.resize(chunk_ + ReadChunk::kPadding);
    chunk->state = reader_.make_state();
    return chunk.get();
  }

  void give_back(ReadChunk* chunk) {
    chunk->size = 0;
    if (chunk->state) chunk->state->clear();
    std::lock_guard lock(mutex_);
    free_.push_back(chunk);
  }

  std::size_t chunk_bytes() const { return chunk_; }

 private:
  ChunkedFileReader& reader_;
  std::size_t chunk_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<ReadChunk>> all_;
  std::vector<ReadChunk*> free_;
};

/// One pass over `input`: every chunk through the reader's three stages.
PassEnd read_pass(const InputFile& input, ChunkedFileReader& reader, ChunkPool& pool, int pass,
                  ProgressMeter* progress) {
  PassEnd end;
  end.pass = pass;
  std::unique_ptr<ByteStream> stream;
  try {
    stream = open_byte_stream(input.path);
  } catch (const std::system_error& e) {
    end.unreadable = true;
    end.error = e.what();
    return end;
  }
  bool stop = false;
  tbb::parallel_pipeline(kChunksInFlight,
                         tbb::make_filter<void, ReadChunk*>(
                             tbb::filter_mode::serial_in_order,
                             [&](tbb::flow_control& flow) -> ReadChunk* {
                               if (stop) {
                                 flow.stop();
                                 return nullptr;
                               }
                               ReadChunk* chunk = pool.take();
                               try {
                                 const std::size_t n =
                                     stream->read(chunk->buffer.data(), pool.chunk_bytes());
                                 if (n == 0) {
                                   pool.give_back(chunk);
                                   flow.stop();
                                   return nullptr;
                                 }
                                 std::fill_n(chunk->buffer.data() + n, ReadChunk::kPadding, ' ');
                                 chunk->size = n;
                                 chunk->offset = end.bytes;
                                 end.bytes += n;
                                 if (progress && pass == 0) progress->advance(n, 0);
                                 if (!reader.tokenize(*chunk)) stop = end.stopped = true;
                               } catch (const std::system_error& e) {
                                 end.unreadable = true;
                                 end.error = e.what();
                                 stop = true;
                               }
                               return chunk;
                             }) &
                             tbb::make_filter<ReadChunk*, ReadChunk*>(tbb::filter_mode::parallel,
                                                                      [&](ReadChunk* chunk) {
                                                                        if (chunk->size > 0)
                                                                          reader.parse(*chunk);
                                                                        return chunk;
                                                                      }) &
                             tbb::make_filter<ReadChunk*, void>(tbb::filter_mode::serial_in_order,
                                                                [&](ReadChunk* chunk) {
                                                                  if (chunk->size > 0)
                                                                    reader.apply(*chunk);
                                                                  pool.give_back(chunk);
                                                                }));
  if (!end.unreadable) end.error = stream->error();
  return end;
}

}  // namespace

std::size_t ChunkedFileReader::chunk_bytes(std::uint64_t file_bytes) const {
  // Chunks no larger than the file (a small run's file may be far below
  // kChunkBytes): the buffers are zeroed when made.
  return std::clamp<std::size_t>(
      static_cast<std::size_t>(std::min<std::uint64_t>(file_bytes, kChunkBytes)) + 1,
      kSmallestChunkBytes, kChunkBytes);
}

FileResult read_in_chunks(const InputFile& input, ChunkedFileReader& reader,
                          ProgressMeter* progress) {
  ChunkPool pool(reader, std::max<std::size_t>(reader.chunk_bytes(input.size_bytes), 1));
  for (int pass = 0;; ++pass) {
    if (!reader.end_pass(read_pass(input, reader, pool, pass, progress))) break;
  }
  FileResult result = reader.result();
  if (progress) progress->advance(0, 1);
  return result;
}

std::vector<FileResult> read_files_in_chunks(const std::vector<InputFile>& files,
                                             ChunkedFormat& format, ProgressMeter& progress) {
  std::vector<FileResult> results(files.size());
  tbb::parallel_for(std::size_t{0}, files.size(), [&](std::size_t i) {
    const std::unique_ptr<ChunkedFileReader> reader = format.open(i);
    results[i] = read_in_chunks(files[i], *reader, &progress);
  });
  format.gather(results);
  return results;
}

}  // namespace pipescope

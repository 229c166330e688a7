// The one reading loop of the input formats, in the manner of Perfetto's
// ChunkedTraceReader: the loop opens a file (plain, gzip or zstd:
// source/byte_stream.h), reads it in chunks, and pushes each chunk to the
// format's reader for that file (ChunkedFileReader), which never does I/O,
// threading or progress itself. A format is then a tokenizer and what it
// makes of the units it cuts, and every format is read, shown progressing,
// spread over the threads and ended (damage, I/O errors, compressed data
// that breaks off) the same way.
//
// Per file, a oneTBB pipeline of three stages, at most kChunksInFlight
// chunks in flight (memory bounded by a few chunks, whatever the file):
//   1. tokenize (serial, in file order): the chunk is read into a reused
//      buffer and the reader cuts it into its units (events, lines, records),
//      carrying over the bytes of a unit the chunk ends inside;
//   2. parse (parallel, any order): what needs no order (a JSON event read);
//   3. apply (serial, in file order): the units' effect on the file's state.
// A reader that needs no parallel work does everything in tokenize. A
// reader may ask for another pass over the file once a pass ends (PyTorch
// traces whose held kernels overflow read them again).
//
// Several files of one format (ChunkedFormat): each read by its own reader,
// the files side by side on the oneTBB scheduler; then the format looks at
// all the results at once (a pipeline chosen among files, profiling windows
// joined).
//
// The text worker logs keep their own loop (text_log_reader.h): a regular
// file is cut into byte ranges that every thread reads and scans at once,
// which a loop that reads a file in order cannot do.
//
//   class MyReader final : public ChunkedFileReader { ... };
//   FileResult r = read_in_chunks(input, reader, nullptr);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"

namespace pipescope {

class ProgressMeter;

/// A reader's own state for one chunk (ChunkedFileReader::make_state): the
/// units cut from it and what was made of them, reused chunk after chunk.
class ChunkState {
 public:
  virtual ~ChunkState() = default;
  /// Empties it for the next chunk (keeping its memory).
  virtual void clear() = 0;
};

/// One chunk of a file in the loop.
struct ReadChunk {
  /// Readable bytes after every chunk's end (spaces): what simdjson needs to
  /// parse a view in place.
  static constexpr std::size_t kPadding = 64;

  /// The chunk's bytes: [data(), data() + size), then kPadding readable bytes.
  const char* data() const { return buffer.data(); }
  std::size_t size = 0;
  /// Byte offset of data()[0] in the file (in the decompressed bytes).
  std::uint64_t offset = 0;
  /// The reader's state for this chunk; null when it makes none.
  std::unique_ptr<ChunkState> state;
  std::vector<char> buffer;
};

/// How one pass over a file ended.
struct PassEnd {
  /// The pass: 0 first.
  int pass = 0;
  /// Bytes pushed to the reader in this pass.
  std::uint64_t bytes = 0;
  /// The reader stopped the pass (tokenize returned false).
  bool stopped = false;
  /// The file could not be opened or read: `error` is the I/O error.
  bool unreadable = false;
  /// Why the bytes ended early: the I/O error, or damaged compressed data
  /// (ByteStream::error); empty when the file was read to its end.
  std::string error;
};

/// A format's reader of one file: the chunks pushed in, one result out.
class ChunkedFileReader {
 public:
  virtual ~ChunkedFileReader() = default;
  /// Bytes read per chunk for a file of `file_bytes` (its size on disk).
  /// The default: 256 KiB, less for a smaller file (at least 64 KiB).
  virtual std::size_t chunk_bytes(std::uint64_t file_bytes) const;
  /// A state for a chunk; the loop makes a few and reuses them.
  virtual std::unique_ptr<ChunkState> make_state() { return nullptr; }
  /// Stage 1, one chunk at a time in file order: cuts the chunk into units.
  /// False stops the pass after this chunk (damage that ends the file).
  virtual bool tokenize(ReadChunk& chunk) = 0;
  /// Stage 2, on any thread, several chunks at once.
  virtual void parse(ReadChunk& /*chunk*/) {}
  /// Stage 3, one chunk at a time in file order.
  virtual void apply(ReadChunk& /*chunk*/) {}
  /// The end of a pass, every chunk before it applied. True: read the file
  /// again from its start (another pass).
  virtual bool end_pass(const PassEnd& end) = 0;
  /// The file's result, after its last pass.
  virtual FileResult result() = 0;
};

/// Chunks of one file in flight at most.
inline constexpr std::size_t kChunksInFlight = 4;

/// Reads `input` through `reader`, pass after pass, and returns its result.
/// `progress` (may be null) is told the bytes of the first pass as they are
/// read, and the file once done. Never throws for the file's content or I/O
/// (they end the pass: PassEnd); what the reader throws propagates.
FileResult read_in_chunks(const InputFile& input, ChunkedFileReader& reader,
                          ProgressMeter* progress);

/// A format's reading of its files of one run.
class ChunkedFormat {
 public:
  virtual ~ChunkedFormat() = default;
  /// The reader of file `i`; called from several threads at once (one
  /// call per file).
  virtual std::unique_ptr<ChunkedFileReader> open(std::size_t i) = 0;
  /// Once every file is read: all their results, in file order.
  virtual void gather(std::vector<FileResult>& /*results*/) {}
};

/// Reads `files` side by side, each through format.open(i), then
/// format.gather(): one result per file, in order.
std::vector<FileResult> read_files_in_chunks(const std::vector<InputFile>& files,
                                             ChunkedFormat& format, ProgressMeter& progress);

}  // namespace pipescope

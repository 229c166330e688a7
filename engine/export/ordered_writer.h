// An output written in pieces that are formatted in parallel and appended in
// order: the trace writers split their millions of events into pieces (a
// range of one device's jobs), format each into its own buffer on a oneTBB
// worker, and write the buffers in piece order, so the bytes are those of a
// single-threaded writer whatever the number of threads. A bounded number of
// pieces is in flight (two per thread), and their buffers are reused, so
// memory does not grow with the output.
//
// Usage:
//   write_in_order(file, pieces.size(), threads, [&](std::size_t k, fmt::memory_buffer& out) {
//     format_piece(pieces[k], out);   // called on any thread, pieces in any order
//   });
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <functional>

#include "export/atomic_file.h"

namespace pipescope {

/// Formats piece k into `out` (empty when called); it runs concurrently with
/// other pieces, so it may only read shared state.
using PieceFormatter = std::function<void(std::size_t piece, fmt::memory_buffer& out)>;

/// Called once per piece, in piece order and one at a time, right after the
/// piece's bytes are appended: what must be written in sequence (the traces'
/// bubbles follow a walk along each device) appends to the file itself.
using PieceFinisher = std::function<void(std::size_t piece)>;

/// Formats pieces 0..pieces-1 on up to `threads` workers (0: one per core;
/// 1: on the calling thread alone) and appends them to `file` in order,
/// after the bytes already buffered there, each followed by what `finish`
/// (when set) appends. Exceptions from `format`, `finish` or from writing
/// reach the caller.
void write_in_order(AtomicFile& file, std::size_t pieces, unsigned threads,
                    const PieceFormatter& format, const PieceFinisher& finish = {});

}  // namespace pipescope

// The engine's caller options (model/option_words.h) in the command line's
// words, in one table: the flag that names each and the advice its messages
// give. The engine's messages that say how to change what it did read them
// from here; no other file of the command line hands the engine a sentence.
//
// Usage:
//   load.pipeline.words = command_line_words(options.max_line_kib);
//   const std::string& flag = command_line_words(1024)->name(CallerOption::stages);
#pragma once

#include <cstddef>
#include <memory>

#include "model/option_words.h"

namespace pipescope::cli {

/// The table's words, the line limit's advice stating the limit in force
/// (`--max-line-kib`, in KiB).
std::shared_ptr<const OptionWords> command_line_words(std::size_t max_line_kib);

/// `convert`'s words: the engine's, but for --devices (the table's) and
/// --allow-missing, whose advice is convert's own (convert has none of the
/// other options).
std::shared_ptr<const OptionWords> convert_command_words();

/// `simulate`'s words: the table's for --chunks, --resolution and --force,
/// the engine's for the options simulate does not have.
std::shared_ptr<const OptionWords> simulate_command_words();

}  // namespace pipescope::cli

// An output file that readers only ever see whole: the bytes go to a
// temporary file in the same folder (same filesystem, so the final rename is
// atomic) which commit() renames over the destination. Destroyed without
// commit(), it removes the temporary file, so a failed or interrupted export
// never leaves a half file over a good one. fmt-free; buffered formatting on
// top of it is export/atomic_file.h.
//
// Every failure throws std::system_error whose what() reads
// "cannot write /x/summary.json: No space left on device".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "io/file_descriptor.h"

namespace pipescope::io {

/// Creates `path` and its missing parents (mkdir -p). Throws std::system_error
/// ("cannot create output folder PATH: ...") when that fails or when `path`
/// exists and is not a folder.
void ensure_output_dir(const std::string& path);

/// Writes `text` to `path` as a whole file: its missing parent folders are
/// created (ensure_output_dir), then an AtomicOutput is written and
/// committed, so a reader sees the old file or the whole new one. The one
/// way a command or the simulator writes a small report (a markdown or
/// JUnit report, diff.json, a .prom file, expected.json). Throws
/// std::system_error like AtomicOutput.
void write_file_atomically(const std::string& path, std::string_view text);

/// True when `filename` (a name without its folder) is one AtomicOutput
/// gives its temporary files (".NAME.tmp-PID-N"): what a process killed
/// before commit() leaves behind, for a writer that clears its own leftovers.
bool is_atomic_temp_name(std::string_view filename);

/// Removes from `folder` the temporary files of AtomicOutputs whose process
/// is gone (killed before commit(): the pid in the name no longer runs on
/// this machine), and returns how many. ensure_output_dir calls it, so the
/// next run writing a folder clears what a killed one left. A temporary file
/// of a process alive (or of another user's, which kill(2) cannot probe) is
/// kept. Never throws.
std::size_t remove_stale_temp_files(const std::string& folder);

class AtomicOutput {
 public:
  /// Creates a fresh temporary file next to `path` (O_EXCL: never someone
  /// else's file). The folder must exist.
  explicit AtomicOutput(std::string path);
  ~AtomicOutput() { discard(); }
  AtomicOutput(AtomicOutput&& other) noexcept;
  AtomicOutput& operator=(AtomicOutput&& other) noexcept;
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  void write(const void* data, std::size_t size);
  /// Closes the descriptor and renames the temporary file over the
  /// destination. Afterwards the object only holds the path.
  void commit();
  /// Closes our descriptor but keeps the temporary file for someone who
  /// writes it by its path (commit() then renames it; destruction removes it).
  void close_descriptor();

  const std::string& path() const { return path_; }
  /// The temporary file (empty once committed or moved from).
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(int error) const;
  void discard() noexcept;

  std::string path_;
  std::string temp_path_;
  FileDescriptor fd_;
};

}  // namespace pipescope::io

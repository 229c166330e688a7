// Fuzzes the reader of Nsight Systems exports (ingest/nsys_reader.h): any
// bytes as a `.sqlite` file, read through SQLite. A database that is no
// export, or damaged anywhere, must end in InputError (exit 2 at the CLI),
// never a crash, a hang or another exception. Seeded with small exports
// of tests/reference/nsys_run.py (fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_input.h"
#include "ingest/discovery.h"
#include "ingest/nsys_reader.h"
#include "ingest/progress_meter.h"
#include "model/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static pipescope::fuzz::ScratchFile scratch(".sqlite");
  pipescope::InputFile input;
  input.path = scratch.write(data, size);
  input.format = pipescope::InputFormat::nsys_export;
  input.size_bytes = size;
  const std::vector<pipescope::InputFile> files{input};
  const pipescope::ProgressCallback none;
  pipescope::ProgressMeter progress(files, none);
  try {
    const auto results = pipescope::read_nsys_exports(files, pipescope::ReadOptions{},
                                                      pipescope::NsysOptions{}, nullptr, progress);
    (void)results;
  } catch (const pipescope::InputError&) {
    // A corrupt database or no export: refused, as the CLI exits 2.
  }
  return 0;
}

// Fuzzes the readers `check` and `diff` use on files from the repository under
// test: summary.json (compare/run_from_summary.h) and the thresholds config
// (compare/check.h, read_check_config). Bad input must end in InputError with
// a message, never a crash; seeded with summaries and configs from testdata.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "compare/check.h"
#include "compare/run_from_summary.h"
#include "fuzz_input.h"
#include "ingest/discovery.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)pipescope::parse_summary_json(text, "fuzz.json");
  } catch (const pipescope::InputError& e) {
    if (std::string(e.what()).empty()) std::abort();
  }
  static pipescope::fuzz::ScratchFile scratch(".json");
  const std::string& path = scratch.write(data, size);
  try {
    (void)pipescope::read_check_config(path);
  } catch (const pipescope::InputError& e) {
    if (std::string(e.what()).empty()) std::abort();
  }
  return 0;
}

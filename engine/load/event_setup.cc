#include "load/event_setup.h"

#include <fmt/core.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "model/errors.h"

namespace pipescope {

EventSetup make_event_setup(bool enabled, const std::vector<std::string>& pattern_files,
                            const OptionWords& words) {
  const std::string& patterns = words.name(CallerOption::patterns);
  EventSetup setup;
  if (!enabled) {
    setup.off = EventsOff::turned_off;
    return setup;
  }
  if (!EventMatcher::available()) {
    if (!pattern_files.empty()) {
      throw InputError(fmt::format(
          "{} {}: this pipescope was built without Hyperscan, so it matches no log event", patterns,
          pattern_files.front()));
    }
    setup.off = EventsOff::no_matcher;
    return setup;
  }
  try {
    EventLibrary library = builtin_event_library();
    for (const std::string& path : pattern_files) {
      std::ifstream in(path, std::ios::binary);
      if (!in) throw InputError(fmt::format("{} {}: cannot be read", patterns, path));
      std::ostringstream text;
      text << in.rdbuf();
      if (in.bad()) throw InputError(fmt::format("{} {}: read error", patterns, path));
      library.add(parse_event_library(text.str(), path));
    }
    setup.matcher = std::make_shared<const EventMatcher>(library);
  } catch (const EventLibraryError& e) {
    throw InputError(e.what());
  } catch (const std::invalid_argument& e) {  // $PIPESCOPE_LITERAL_SEARCH
    throw InputError(e.what());
  }
  return setup;
}

}  // namespace pipescope

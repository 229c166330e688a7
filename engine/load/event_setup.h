// The event library a run is read with (docs/guide.md, "Log events"): the
// shipped library, with a user's pattern files adding or replacing entries,
// compiled once for every reader thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/events_off.h"
#include "model/option_words.h"
#include "scan/event_matcher.h"

namespace pipescope {

struct EventSetup {
  /// Null when events are off.
  std::shared_ptr<const EventMatcher> matcher;
  /// Why events are off (none when on); the run says it in the caller's
  /// words (model/events_off.h).
  EventsOff off = EventsOff::none;
};

/// The shipped library plus `pattern_files` (each adds entries, or replaces
/// those with the same id), compiled; `enabled` false turns events off.
/// Throws InputError naming the file and line (or the entry) of a bad
/// pattern file or a pattern Hyperscan or RE2 rejects. A build without
/// Hyperscan gives events off, with the reason, unless pattern files were
/// given (then InputError: they cannot be honoured). The messages name the
/// pattern files in `words` (CallerOption::patterns).
EventSetup make_event_setup(bool enabled, const std::vector<std::string>& pattern_files,
                            const OptionWords& words = *OptionWords::engine());

}  // namespace pipescope

// What the reader of text worker logs (text_log_reader.h) is told beyond
// every reader's options (read_options.h).
#pragma once

#include <string>

#include "model/events_off.h"

namespace pipescope {

class OptionWords;

class EventMatcher;
class JobLineRegex;

struct TextLogOptions {
  /// The event library's matcher (scan/event_matcher.h) for text logs; null:
  /// events are off. Owned by the caller, alive while the inputs are read.
  const EventMatcher* events = nullptr;
  /// Why `events` is null, when it is (reported for runs of text logs, in
  /// the words of events_off_reason; EventsOff::none with no library: the
  /// run then says nothing of events).
  EventsOff events_off = EventsOff::none;
  /// Text logs: the lines this regex matches are the jobs, instead of
  /// PaddlePaddle's job lines (scan/job_line_regex.h); null: Paddle's.
  /// Owned by the caller, alive while the inputs are read.
  const JobLineRegex* job_line = nullptr;
};

/// The job lines a text log's reader looks for, for a message that none was
/// found: "lines containing 'Profiler Info: Job'", or "lines matching " and
/// the name of CallerOption::job_line in `words`.
std::string job_lines_looked_for(const TextLogOptions& options, const OptionWords& words);

}  // namespace pipescope

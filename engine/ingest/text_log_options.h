// What the reader of text worker logs (text_log_reader.h) is told beyond
// every reader's options (read_options.h).
#pragma once

#include <string>

namespace pipescope {

class EventMatcher;
class JobLineRegex;

struct TextLogOptions {
  /// How the caller lets a person raise the line limit, for the note on a
  /// job line lost in an over-long line.
  std::string line_limit_advice = "raise the line limit to read it";
  /// The event library's matcher (scan/event_matcher.h) for text logs; null:
  /// events are off. Owned by the caller, alive while the inputs are read.
  const EventMatcher* events = nullptr;
  /// Why `events` is null, when it is (reported for runs of text logs; ""
  /// with no library: the run then says nothing of events).
  std::string events_off;
  /// Text logs: the lines this regex matches are the jobs, instead of
  /// PaddlePaddle's job lines (scan/job_line_regex.h); null: Paddle's.
  /// Owned by the caller, alive while the inputs are read.
  const JobLineRegex* job_line = nullptr;
  /// What those lines are in the caller's words, for messages ("lines
  /// matching the job-line regex").
  std::string job_line_label = "lines matching the job-line regex";
};

/// The job lines a text log's reader looks for, for a message that none was
/// found: "lines containing 'Profiler Info: Job'", or the job-line label.
std::string job_lines_looked_for(const TextLogOptions& options);

}  // namespace pipescope

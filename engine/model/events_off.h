// Why a run's log events were not looked for, as a fact the readers and the
// run carry, and the one sentence that says so (summary.json's
// `events.off`; the text report's "Log events: off" line reads it).
//
// Usage:
//   options.events_off = EventsOff::turned_off;   // the caller said no
//   run.events_off = events_off_reason(options.events_off, *options.words);
#pragma once

#include <cstdint>
#include <string>

namespace pipescope {

class OptionWords;

enum class EventsOff : std::uint8_t {
  /// Looked for, or no library was given: nothing to say.
  none,
  /// The caller turned them off (CallerOption::no_events names how).
  turned_off,
  /// This build has no Hyperscan, so it matches no log event.
  no_matcher,
};

/// "log events are off (" + the name of CallerOption::no_events + ")" when
/// turned off, "log events are off: this pipescope was built without
/// Hyperscan" without a matcher, "" for EventsOff::none. The sentence starts
/// with kEventsOffLead whenever it is not empty.
std::string events_off_reason(EventsOff why, const OptionWords& words);

/// How every sentence of events_off_reason begins.
inline constexpr const char* kEventsOffLead = "log events are off";

}  // namespace pipescope

#include "model/events_off.h"

#include "model/option_words.h"

namespace pipescope {

std::string events_off_reason(EventsOff why, const OptionWords& words) {
  switch (why) {
    case EventsOff::none:
      return {};
    case EventsOff::turned_off:
      return std::string(kEventsOffLead) + " (" + words.name(CallerOption::no_events) + ")";
    case EventsOff::no_matcher:
      return std::string(kEventsOffLead) + ": this pipescope was built without Hyperscan";
  }
  return {};
}

}  // namespace pipescope

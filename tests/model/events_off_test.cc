// Why log events are off: a fact the readers carry, said in one sentence in
// the caller's words (model/events_off.h).
#include "model/events_off.h"

#include <gtest/gtest.h>

#include <string>

#include "model/option_words.h"

namespace pipescope {
namespace {

TEST(EventsOff, OneSentencePerReasonInTheCallersWords) {
  const OptionWords& engine = *OptionWords::engine();
  EXPECT_EQ(events_off_reason(EventsOff::none, engine), "");
  EXPECT_EQ(events_off_reason(EventsOff::turned_off, engine),
            "log events are off (turned off by the caller)");
  EXPECT_EQ(events_off_reason(EventsOff::no_matcher, engine),
            "log events are off: this pipescope was built without Hyperscan");
  OptionWords flags;
  flags.set(CallerOption::no_events, "--no-events", "");
  EXPECT_EQ(events_off_reason(EventsOff::turned_off, flags), "log events are off (--no-events)");
  // Every sentence leads with the words the text report takes off.
  for (const EventsOff why : {EventsOff::turned_off, EventsOff::no_matcher}) {
    EXPECT_EQ(events_off_reason(why, flags).rfind(kEventsOffLead, 0), 0u);
  }
}

}  // namespace
}  // namespace pipescope

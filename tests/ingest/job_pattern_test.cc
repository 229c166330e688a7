// Job patterns (`--job-pattern`, `--job-kinds`): RE2 syntax and both spellings
// of named groups, the errors (missing or unknown groups, what RE2 cannot
// take, bad kinds naming every job type), groups that take no part, and
// names far longer than a backtracking matcher survives.
#include "ingest/job_pattern.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "ingest/pipeline_action.h"

namespace pipescope {
namespace {

std::string error_of(const std::string& pattern, const std::string& kinds = "") {
  try {
    JobPattern p(pattern, kinds);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(JobPattern, MatchesAnywhereWithItsGroups) {
  const JobPattern p(R"(mb(?P<mb>\d+)/(?P<op>fwd|bwd)@(?P<stage>\d+)#(?P<chunk>\d))",
                     "fwd=forward,bwd=backward");
  EXPECT_TRUE(p.has_micro_batch());
  const auto a = p.match("step 3: mb12/bwd@4#1 (tail)");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->type, "backward");
  EXPECT_EQ(a->micro_batch, 12);
  EXPECT_EQ(a->stage, 4);
  EXPECT_EQ(a->chunk, 1);
  EXPECT_FALSE(p.match("mb12/opt@4#1"));          // op matches nothing of the pattern
  EXPECT_FALSE(p.match("mb1234567890/fwd@4#1"));  // more than 9 digits
}

TEST(JobPattern, TakesBothSpellingsOfNamedGroups) {
  // `(?P<name>` is RE2's and Python's; `(?<name>` ECMAScript's and Perl's.
  for (const char* pattern :
       {R"(^(?P<op>forward|backward)_(?P<mb>\d+)$)", R"(^(?<op>forward|backward)_(?<mb>\d+)$)",
        R"(^(?<op>forward|backward)_(?P<mb>\d+)$)"}) {
    const JobPattern p(pattern, "");
    const auto a = p.match("backward_7");
    ASSERT_TRUE(a) << pattern;
    EXPECT_EQ(a->type, "backward") << pattern;
    EXPECT_EQ(a->micro_batch, 7) << pattern;
    EXPECT_FALSE(p.match("x_backward_7")) << pattern;
  }
}

TEST(JobPattern, EscapesAndClassesAreNoGroups) {
  // `\(?<` and `[(?<x>]` hold no group: only the real one counts.
  const JobPattern p(R"(\(?<[(?<x>]+(?P<op>forward))", "");
  EXPECT_TRUE(p.match("(<xx>forward"));
  EXPECT_EQ(error_of(R"([](?<what>](?P<op>F))"), "");  // ']' first in a class is a member
}

TEST(JobPattern, AGroupThatTakesNoPartLeavesItsField) {
  const JobPattern p(R"((?P<op>forward|backward)(?:@(?P<stage>\d+))?(?:#(?P<mb>\d*))?)", "");
  const auto a = p.match("forward@3#5");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->stage, 3);
  EXPECT_EQ(a->micro_batch, 5);
  // `mb` took part but matched nothing: not a number, so no job, as before.
  EXPECT_FALSE(p.match("forward@3#"));
  const auto b = p.match("backward#9");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->stage, -1);
  EXPECT_EQ(b->micro_batch, 9);
  const auto c = p.match("backward");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->stage, -1);
  EXPECT_EQ(c->micro_batch, -1);
}

TEST(JobPattern, ManyGroupsBeforeTheNamedOnes) {
  const JobPattern p(R"((a)(b)(c)(d)(e)(f)(g)(h)(i)_(?P<op>F)(?P<mb>\d+))", "F=forward");
  const auto a = p.match("abcdefghi_F42");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->type, "forward");
  EXPECT_EQ(a->micro_batch, 42);
}

TEST(JobPattern, ANameOfHundredsOfKilobytesMatchesInLinearTime) {
  // A backtracking matcher recursed once per character here and overflowed
  // the stack (SIGSEGV) on a 200 KB tensor-shape string.
  std::string name;
  while (name.size() < 200'000) name += "ab";
  const std::string tail = name + "_mb17_bwd";
  const JobPattern p(R"((?:a|b)*_?mb(?P<mb>\d+)_(?P<op>fwd|bwd))", "fwd=forward,bwd=backward");
  const auto a = p.match(tail);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->type, "backward");
  EXPECT_EQ(a->micro_batch, 17);
  EXPECT_FALSE(p.match(name));
}

TEST(JobPattern, SaysWhatIsWrong) {
  EXPECT_EQ(error_of(R"((?P<mb>\d+))"), "it has no named group 'op' ((?P<op>...))");
  EXPECT_EQ(error_of("(?P<op>F)(?P<what>x)"),
            "unknown group 'what' (the groups are op, mb, stage and chunk)");
  EXPECT_EQ(error_of("(?P<op>F)|(?<op>B)"), "group 'op' is named twice");
  EXPECT_EQ(error_of("(?P<op>F"), "missing ): (?P<op>F");
  EXPECT_EQ(error_of("(?P<op>F)x{1001}"), "invalid repetition size: {1001}");
  EXPECT_EQ(error_of("(?P<op"), "unclosed group name at '(?P<op'");
}

TEST(JobPattern, RejectsLookaroundAndBackReferencesByName) {
  const std::string why =
      "is not supported: job patterns are RE2 expressions, which match in linear time and so "
      "have no lookaround or back-references";
  EXPECT_EQ(error_of("(?P<op>F)(?=x)"), "lookahead ('(?=') " + why);
  EXPECT_EQ(error_of("(?P<op>F)(?!x)"), "negative lookahead ('(?!') " + why);
  EXPECT_EQ(error_of("(?<=x)(?P<op>F)"), "lookbehind ('(?<=') " + why);
  EXPECT_EQ(error_of("(?<!x)(?P<op>F)"), "negative lookbehind ('(?<!') " + why);
  EXPECT_EQ(error_of(R"((?P<op>F)(x)\2)"), "a back-reference ('\\2') " + why);
  EXPECT_EQ(error_of(R"((?P<op>F)\k<op>)"), "a back-reference ('\\k') " + why);
  EXPECT_EQ(error_of("(?P<op>F)(?P=op)"), "a back-reference by name ('(?P=') " + why);
  // What RE2 cannot take is said before what the groups lack.
  EXPECT_EQ(error_of(R"((a)\1)"), "a back-reference ('\\1') " + why);
  // The same text inside a class or escaped is no lookaround.
  EXPECT_EQ(error_of(R"((?P<op>F)[(?=]\(?=)"), "");
}

TEST(JobPattern, KindsMapToTheOneListOfJobTypes) {
  const std::string list = trace_job_type_list();
  EXPECT_EQ(list,
            "forward, backward, backward_b, backward_w, send_forward, recv_forward, "
            "send_backward, recv_backward, optimizer, unshard, reshard and reduce_grad");
  EXPECT_EQ(error_of("(?P<op>F)", "F=fwd"),
            "job kind 'F=fwd' is not OP=TYPE with TYPE one of " + list);
  EXPECT_EQ(error_of("(?P<op>F)", "=forward"),
            "job kind '=forward' is not OP=TYPE with TYPE one of " + list);
  // Every listed type is accepted, as a kind and as an op that names itself.
  for (const std::string_view type : trace_job_types()) {
    const std::string t(type);
    EXPECT_EQ(error_of("(?P<op>\\w+)", "X=" + t), "") << t;
    const JobPattern p("^(?P<op>\\w+)$", "X=" + t);
    ASSERT_TRUE(p.match("X")) << t;
    EXPECT_EQ(p.match("X")->type, t);
    ASSERT_TRUE(p.match(t)) << t;
    EXPECT_EQ(p.match(t)->type, t);
  }
  EXPECT_EQ(trace_job_types().size(), 12u);
  EXPECT_FALSE(JobPattern("^(?P<op>\\w+)$", "").match("fwd"));  // no type, no kind
}

TEST(JobPattern, MovesWithItsState) {
  JobPattern a("(?P<op>F)", "F=forward");
  JobPattern b(std::move(a));
  ASSERT_TRUE(b.match("F"));
  EXPECT_EQ(b.match("F")->type, "forward");
  JobPattern c("(?P<op>B)", "B=backward");
  c = std::move(b);
  EXPECT_TRUE(c.match("F"));
  EXPECT_FALSE(c.match("B"));
}

}  // namespace
}  // namespace pipescope

// The outputs of `pipescope check`, all from one CheckReport:
//   - a terse terminal verdict (PASS/REGRESSION, one line per threshold);
//   - GitHub-flavoured markdown for a CI job summary: verdict, baseline vs
//     current vs delta (with spread) per metric and per device, the
//     thresholds, the worst bubbles of the current run;
//   - JUnit XML: one <testsuite> "pipescope check" with one <testcase> per
//     threshold; a failing threshold carries a <failure> with the numbers.
//     Valid against the common JUnit schema (testsuites/testsuite/testcase/
//     failure, with tests/failures/errors/skipped/time counts) that CI
//     systems (GitHub, GitLab, Jenkins) read.
// Runs that are not comparable (CheckReport::refusals) get a REFUSED verdict
// with the reasons in all three (JUnit: a "comparable-inputs" testcase with
// an <error>); compared anyway, the reasons are a note.
// Each returns the whole document as a string (reports are small); the
// caller writes it with AtomicFile.
#pragma once

#include <string>

#include "compare/check.h"

namespace pipescope {

std::string format_check_verdict(const CheckReport& report);
std::string format_check_markdown(const CheckReport& report);
std::string format_check_junit(const CheckReport& report);

}  // namespace pipescope

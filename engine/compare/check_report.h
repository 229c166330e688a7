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
// A check that cannot compare at all (exit 2) still gets both reports, with
// the error (format_check_error_*).
// Each returns the whole document as a string (reports are small); the
// caller writes it with AtomicFile.
#pragma once

#include <string>

#include "compare/check.h"
#include "model/option_words.h"

namespace pipescope {

/// The verdict and the markdown report; `words` name the options they
/// mention (CallerOption::skip_steps, allow_input_warnings, threshold).
std::string format_check_verdict(const CheckReport& report,
                                 const OptionWords& words = *OptionWords::engine());
std::string format_check_markdown(const CheckReport& report,
                                  const OptionWords& words = *OptionWords::engine());

/// The markdown and JUnit reports of a check that could not compare at all
/// (exit status 2: a missing or unreadable run, a bad threshold): what went
/// wrong, and that nothing was compared, so that CI's always-run step shows
/// the reason. `baseline`/`current` as given (may be empty).
std::string format_check_error_markdown(const std::string& error, const std::string& baseline,
                                        const std::string& current);
std::string format_check_error_junit(const std::string& error, const std::string& baseline,
                                     const std::string& current);
std::string format_check_junit(const CheckReport& report,
                               const OptionWords& words = *OptionWords::engine());

}  // namespace pipescope

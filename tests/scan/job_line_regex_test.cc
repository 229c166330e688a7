// `--job-line`: another framework's job lines read by a regular expression,
// their times converted exactly; candidates found by Hyperscan or, as a build
// without it does, by RE2 on every line, with the same jobs either way.
#include "scan/job_line_regex.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "scan/event_matcher.h"

namespace pipescope {
namespace {

/// The other framework of the docs' example:
/// `[2024-05-01 10:00:00] rank0 fwd mb=3 t0=1714557600.123456 t1=1714557600.223456`.
constexpr const char* kRegex =
    R"(rank\d+ (?P<type>\w+) mb=(?P<mb>\S+) t0=(?P<start>\S+) t1=(?P<end>\S+))";
constexpr const char* kLine =
    "[2024-05-01 10:00:00] rank0 forward mb=3 t0=1714557600.123456 t1=1714557600.223456";

struct RegexParsed {
  LineError error = LineError::none;
  JobLine job;
  std::string type;
};

RegexParsed parse(const JobLineRegex& regex, std::string_view line) {
  RegexParsed p;
  p.error = regex.parse(line, p.job);
  p.type = std::string(p.job.type);
  return p;
}

std::string what_is_thrown(const std::string& regex) {
  try {
    JobLineRegex r(regex, TimeUnit::ms);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "nothing";
}

TEST(JobLineRegex, ReadsAMatchingLineExactly) {
  const JobLineRegex regex(kRegex, TimeUnit::s);
  const RegexParsed p = parse(regex, kLine);
  ASSERT_EQ(p.error, LineError::none);
  EXPECT_EQ(p.type, "forward");
  EXPECT_EQ(p.job.micro_batch, 3);
  EXPECT_EQ(p.job.start_ns, 1714557600123456000);
  EXPECT_EQ(p.job.end_ns, 1714557600223456000);
  EXPECT_EQ(p.job.job_id, 0);
  EXPECT_FALSE(regex.has_id());
  EXPECT_TRUE(regex.matches(kLine));
  // Anywhere in the line: what precedes and follows the match is free.
  EXPECT_EQ(parse(regex, std::string("x ") + kLine + " y").error, LineError::none);
}

TEST(JobLineRegex, ReadsTheTimesInEachUnit) {
  const std::string line = "rank1 backward mb=0 t0=1714557600123.456789 t1=1714557600124";
  const std::pair<TimeUnit, std::int64_t> units[] = {
      {TimeUnit::s, -1},  // 13 integer digits: beyond 2262
      {TimeUnit::ms, 1714557600123456789},
      {TimeUnit::us, 1714557600123456789 / 1000 + 1},  // .456789 us: 456.789 ns, rounded up
      {TimeUnit::ns, -1},                              // 6 decimals: finer than a picosecond
  };
  for (const auto& [unit, start] : units) {
    const RegexParsed p = parse(JobLineRegex(kRegex, unit), line);
    if (start < 0) {
      EXPECT_EQ(p.error, LineError::bad_start_capture) << time_unit_name(unit);
    } else {
      ASSERT_EQ(p.error, LineError::none) << time_unit_name(unit);
      EXPECT_EQ(p.job.start_ns, start) << time_unit_name(unit);
    }
  }
  EXPECT_EQ(parse(JobLineRegex(kRegex, TimeUnit::ns), "rank0 f mb=1 t0=5 t1=7").job.end_ns, 7);
  EXPECT_EQ(parse(JobLineRegex(kRegex, TimeUnit::us), "rank0 f mb=1 t0=5 t1=7.0005").job.end_ns,
            7001);
  EXPECT_EQ(
      parse(JobLineRegex(kRegex, TimeUnit::s), "rank0 f mb=1 t0=5 t1=7.0000000005").job.end_ns,
      7'000'000'001);
}

TEST(JobLineRegex, SaysWhatIsWrongWithAMatchedLine) {
  const JobLineRegex regex(kRegex, TimeUnit::s);
  EXPECT_EQ(parse(regex, "rank0 forward mb=3 t0=1714557600.5").error, LineError::no_literal);
  EXPECT_EQ(parse(regex, "no job here").error, LineError::no_literal);
  EXPECT_EQ(parse(regex, "rank0 forward mb=x t0=1 t1=2").error, LineError::bad_micro_batch_capture);
  EXPECT_EQ(parse(regex, "rank0 forward mb=1.5 t0=1 t1=2").error,
            LineError::bad_micro_batch_capture);
  EXPECT_EQ(parse(regex, "rank0 forward mb=3 t0=17145576OO.1 t1=2").error,
            LineError::bad_start_capture);
  EXPECT_EQ(parse(regex, "rank0 forward mb=3 t0=1e9 t1=2").error, LineError::bad_start_capture);
  EXPECT_EQ(parse(regex, "rank0 forward mb=3 t0=-1 t1=2").error, LineError::bad_start_capture);
  EXPECT_EQ(parse(regex, "rank0 forward mb=3 t0=1 t1=2.").error, LineError::bad_end_capture);
  EXPECT_EQ(parse(regex, "rank0 forward mb=3 t0=1.000000001 t1=1").error,
            LineError::capture_end_before_start);
  EXPECT_EQ(parse(regex, "rank0 forward mb=-2 t0=1 t1=1").error, LineError::none);  // as Paddle's
  // A capture that is empty, or that took no part in the match.
  const JobLineRegex optional(
      R"((?P<type>[a-z]*) (?:mb=(?P<mb>\d+) )?(?:id=(?P<id>\S*) )?t0=(?P<start>\S+) t1=(?P<end>\S+))",
      TimeUnit::ms);
  EXPECT_TRUE(optional.has_id());
  EXPECT_EQ(parse(optional, " mb=1 t0=1 t1=2").error, LineError::empty_type_capture);
  EXPECT_EQ(parse(optional, "forward t0=1 t1=2").error, LineError::bad_micro_batch_capture);
  EXPECT_EQ(parse(optional, "forward mb=1 id= t0=1 t1=2").error, LineError::bad_job_id_capture);
  EXPECT_EQ(parse(optional, "forward mb=1 id=7x t0=1 t1=2").error, LineError::bad_job_id_capture);
  const RegexParsed with_id = parse(optional, "forward mb=1 id=-7 t0=1 t1=2");
  ASSERT_EQ(with_id.error, LineError::none);
  EXPECT_EQ(with_id.job.job_id, -7);
  for (LineError e : {LineError::empty_type_capture, LineError::bad_micro_batch_capture,
                      LineError::bad_job_id_capture, LineError::bad_start_capture,
                      LineError::bad_end_capture, LineError::capture_end_before_start}) {
    EXPECT_NE(describe(e).find("job-line regex"), std::string_view::npos) << describe(e);
  }
}

TEST(JobLineRegex, MapsTypesByItsKinds) {
  const JobLineRegex regex(kRegex, TimeUnit::s,
                           JobLineRegex::parse_kinds("fwd=forward,bwd=backward,W=backward_w"));
  EXPECT_EQ(parse(regex, "rank0 fwd mb=3 t0=1 t1=2").type, "forward");
  EXPECT_EQ(parse(regex, "rank0 W mb=3 t0=1 t1=2").type, "backward_w");
  EXPECT_EQ(parse(regex, "rank0 optimizer mb=3 t0=1 t1=2").type, "optimizer");  // kept
  for (const char* bad : {"fwd", "=forward", "fwd=", "fwd=forward,,"}) {
    EXPECT_THROW(JobLineRegex::parse_kinds(bad), std::invalid_argument) << bad;
  }
  EXPECT_TRUE(JobLineRegex::parse_kinds("").empty());
}

TEST(JobLineRegex, RefusesARegexItCannotUse) {
  EXPECT_NE(what_is_thrown("(?P<type>\\w+").find("missing )"), std::string::npos)
      << what_is_thrown("(?P<type>\\w+");
  // Each required capture missing is named.
  const std::string all = R"((?P<type>\w+) (?P<mb>\d+) (?P<start>\S+) (?P<end>\S+))";
  EXPECT_EQ(what_is_thrown(all), "nothing");
  for (const char* name : {"type", "mb", "start", "end"}) {
    std::string regex = all;
    const std::string group = std::string("(?P<") + name + ">";
    regex.replace(regex.find(group), group.size(), "(");
    EXPECT_NE(what_is_thrown(regex).find(std::string("no named capture '") + name + "'"),
              std::string::npos)
        << what_is_thrown(regex);
  }
  EXPECT_NE(what_is_thrown(all + " (?P<stage>\\d+)").find("unknown named capture 'stage'"),
            std::string::npos);
  // The spelling RE2 of Debian 12 lacks gets a hint.
  const std::string angle = R"((?<type>\w+) (?<mb>\d+) (?<start>\S+) (?<end>\S+))";
  const std::string said = what_is_thrown(angle);
  if (said != "nothing") {
    EXPECT_NE(said.find("(?P<name>...)"), std::string::npos) << said;
  }
}

/// The jobs of `text` as the chunk scanner finds them: candidates, then parse.
std::vector<std::pair<std::size_t, std::string>> jobs_of(const JobLineRegex& regex,
                                                         std::string_view text) {
  JobLineRegex::Scratch scratch(regex);
  std::vector<LineSpan> spans;
  regex.candidates(text, scratch, spans);
  std::vector<std::pair<std::size_t, std::string>> jobs;
  for (const LineSpan& span : spans) {
    JobLine job;
    const std::string_view line = text.substr(span.begin, span.end - span.begin);
    const LineError error = regex.parse(line, job);
    if (error == LineError::none) {
      jobs.emplace_back(span.begin, std::string(job.type) + "/" + std::to_string(job.start_ns));
    } else if (error != LineError::no_literal) {
      jobs.emplace_back(span.begin, std::string(describe(error)));
    }
  }
  return jobs;
}

/// What RE2 finds on each line, the lines cut by hand: the contract.
std::vector<std::pair<std::size_t, std::string>> jobs_line_by_line(const JobLineRegex& regex,
                                                                   std::string_view text) {
  std::vector<std::pair<std::size_t, std::string>> jobs;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t nl = std::min(text.find('\n', begin), text.size());
    JobLine job;
    const LineError error = regex.parse(text.substr(begin, nl - begin), job);
    if (error == LineError::none) {
      jobs.emplace_back(begin, std::string(job.type) + "/" + std::to_string(job.start_ns));
    } else if (error != LineError::no_literal) {
      jobs.emplace_back(begin, std::string(describe(error)));
    }
    begin = nl + 1;
  }
  return jobs;
}

std::string noisy_log(std::uint64_t seed, std::size_t lines) {
  std::mt19937_64 rng(seed);
  const char* kinds[] = {"fwd", "bwd", "forward", "backward_w"};
  std::string text;
  for (std::size_t i = 0; i < lines; ++i) {
    const std::string t0 = std::to_string(1714557600 + i) + "." + std::to_string(rng() % 1000000);
    const std::string t1 = std::to_string(1714557601 + i);
    switch (rng() % 9) {
      case 8: {  // bytes of any value but '\n', a job line's pieces among them
        std::string junk = rng() % 2 ? "rank7 fwd mb=1 t0=" : "";
        for (std::uint64_t n = rng() % 60; n > 0; --n) {
          const char c = static_cast<char>(rng() % 256);
          junk += c == '\n' ? ' ' : c;
        }
        text += junk + (rng() % 2 ? " t1=5\n" : "\n");
        break;
      }
      case 0:
        text += "I0501 10:00:00.000000 12 x.cc:1] plain noise, rank" + std::to_string(i) + "\n";
        break;
      case 1:  // a near miss: no t1
        text += "rank0 fwd mb=1 t0=" + t0 + "\n";
        break;
      case 2:  // a malformed job line
        text += "rank0 bwd mb=one t0=" + t0 + " t1=" + t1 + "\n";
        break;
      case 3:  // CRLF: the '\r' is part of the line
        text += "rank3 fwd mb=2 t0=" + t0 + " t1=" + t1 + "\r\n";
        break;
      case 4:  // two matches on one line: one job (the first)
        text += "rank1 bwd mb=0 t0=" + t0 + " t1=" + t1 + " rank2 fwd mb=9 t0=1 t1=2\n";
        break;
      case 5:
        text += "\n";
        break;
      default:
        text += "[2024-05-01 10:00:00] rank0 " + std::string(kinds[rng() % 4]) +
                " mb=" + std::to_string(rng() % 8) + " t0=" + t0 + " t1=" + t1 + "\n";
    }
  }
  return text;
}

TEST(JobLineRegex, HyperscanAndEveryLineFindTheSameJobs) {
  const JobLineRegex fast(kRegex, TimeUnit::s);
  const JobLineRegex slow(kRegex, TimeUnit::s, {}, JobLineRegex::Search::every_line);
  EXPECT_EQ(slow.search(), JobLineRegex::Search::every_line);
  if (EventMatcher::available()) {
    EXPECT_EQ(fast.search(), JobLineRegex::Search::hyperscan);
  }
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    std::string text = noisy_log(seed, 400);
    const auto expected = jobs_line_by_line(slow, text);
    EXPECT_GT(expected.size(), 100u);
    EXPECT_EQ(jobs_of(fast, text), expected) << seed;
    EXPECT_EQ(jobs_of(slow, text), expected) << seed;
    // The last line without its '\n'.
    text += "rank0 fwd mb=1 t0=1 t1=2";
    EXPECT_EQ(jobs_of(fast, text), jobs_line_by_line(slow, text)) << seed;
    EXPECT_EQ(jobs_of(slow, text), jobs_line_by_line(slow, text)) << seed;
  }
}

TEST(JobLineRegex, AnchorsAndLineEdgesAreTheLines) {
  // ^ and $ are a line's edges for both searches.
  const std::string anchored =
      R"(^(?P<type>[a-z]+),(?P<mb>\d+),(?P<start>[0-9.]+),(?P<end>[0-9.]+)$)";
  const JobLineRegex fast(anchored, TimeUnit::ms);
  const JobLineRegex slow(anchored, TimeUnit::ms, {}, JobLineRegex::Search::every_line);
  const std::string text =
      "forward,0,1.5,2.5\n"
      " forward,0,1.5,2.5\n"
      "forward,0,1.5,2.5 \n"
      "backward,1,3,4\r\n"
      "backward,1,3,4\n"
      "x\nforward,2,5,6";
  const auto expected = jobs_line_by_line(slow, text);
  ASSERT_EQ(expected.size(), 3u);
  EXPECT_EQ(jobs_of(fast, text), expected);
  EXPECT_EQ(jobs_of(slow, text), expected);
}

TEST(JobLineRegex, WhereHyperscanReadsAConstructOtherwiseRe2sMeaningHolds) {
  // Hyperscan's \s holds \v, RE2's does not; \v, \A and \z differ too:
  // the candidates are found with RE2's meaning.
  const std::string lines[] = {
      "forward 1 2\x0b"
      "5 3",
      "forward 1 2\x0b 3",
      "forward 1 25 3",
      "forward\x0b"
      "1 2 3",
      "forward 1 2\f5 3",
      "x forward 1 2 3",
      "forward 1 \x0b 3",
      "forward 1 \f 3",
      "forward 1 2 3 x",
      "forward 1 2\t5 3",
      "forward 1 2\x0b\x0b 3",
      "forward 1 2 3\r",
      "forward 1 \xe9"
      "2 3",
      "forward 1 2 3\x0b",
  };
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  for (const std::string regex : {
           R"((?P<type>\w+) (?P<mb>\d+) (?P<start>\S+) (?P<end>\d+))",
           R"((?P<type>\w+) (?P<mb>\d+) (?P<start>[\S]+) (?P<end>\d+))",
           R"((?P<type>\w+) (?P<mb>\d+) (?P<start>[^\s]+) (?P<end>\d+))",
           R"((?P<type>\w+) (?P<mb>\d+) (?P<start>[^\s,]+) (?P<end>\d+))",
           R"((?P<type>\w+) (?P<mb>\d+) (?P<start>[^\S]+) (?P<end>\d+))",
           R"((?P<type>\w+)\s(?P<mb>\d+) (?P<start>[\d\v]+) (?P<end>\d+))",
           R"((?P<type>\w+) (?P<mb>\d+) (?P<start>\d\v\d) (?P<end>\d+))",
           R"(\A(?P<type>\w+) (?P<mb>\d+) (?P<start>\S+) (?P<end>\d+)\z)",
           R"(^(?P<type>\w+) (?P<mb>\d+) (?P<start>\S+) (?P<end>\d+)\s*$)",
           R"((?P<type>\w+) (?P<mb>\d+) (?P<start>[[:^space:]]+) (?P<end>\d+)[[:space:]])",
           R"(\Q \E?(?P<type>\w+) (?P<mb>\d+) (?P<start>\S+) (?P<end>\d+))",
       }) {
    const JobLineRegex fast(regex, TimeUnit::ns);
    const JobLineRegex slow(regex, TimeUnit::ns, {}, JobLineRegex::Search::every_line);
    if (EventMatcher::available()) {
      EXPECT_EQ(fast.search(), JobLineRegex::Search::hyperscan) << regex;
    }
    const auto expected = jobs_line_by_line(slow, text);
    EXPECT_FALSE(expected.empty()) << regex;
    EXPECT_EQ(jobs_of(fast, text), expected) << regex;
  }
  // Caseless Latin-1 letters and Unicode classes are RE2's own: every line.
  for (const std::string regex : {
           "(?i)(?P<type>\xe9\\w*) (?P<mb>\\d+) (?P<start>\\S+) (?P<end>\\d+)",
           R"((?i:(?P<type>[\xc0-\xff]\w*)) (?P<mb>\d+) (?P<start>\S+) (?P<end>\d+))",
           R"((?P<type>\pL+) (?P<mb>\d+) (?P<start>\S+) (?P<end>\d+))",
       }) {
    const JobLineRegex regex_(regex, TimeUnit::ns);
    EXPECT_EQ(regex_.search(), JobLineRegex::Search::every_line) << regex;
    const std::string upper = "\xc9t\xe9 1 2 3\n";  // "Été" in Latin-1
    EXPECT_EQ(jobs_of(regex_, upper), jobs_line_by_line(regex_, upper)) << regex;
  }
}

TEST(JobLineRegex, ARegexHyperscanRefusesIsReadLineByLine) {
  // Every capture may be empty: the regex matches the empty string, which
  // Hyperscan does not take. RE2 then reads every line.
  const std::string empty_ok =
      R"((?P<type>[a-z]*)(?P<mb>\d*):?(?P<start>[0-9.]*)-?(?P<end>[0-9.]*))";
  const JobLineRegex regex(empty_ok, TimeUnit::ms);
  EXPECT_EQ(regex.search(), JobLineRegex::Search::every_line);
  const std::string text = "forward1:5-6\n\nbackward2:7-8\n";
  const auto jobs = jobs_of(regex, text);
  EXPECT_EQ(jobs, jobs_line_by_line(regex, text));
  ASSERT_EQ(jobs.size(), 3u);  // the empty line matches too, with an empty type
  EXPECT_EQ(jobs[0].second, "forward/5000000");
  EXPECT_EQ(jobs[1].second, describe(LineError::empty_type_capture));
}

TEST(JobLineRegex, EveryLineListsEachLine) {
  std::vector<LineSpan> spans;
  JobLineRegex::every_line("a\n\nbc\nd", spans);
  EXPECT_EQ(spans, (std::vector<LineSpan>{{0, 1}, {2, 2}, {3, 5}, {6, 7}}));
  spans.clear();
  JobLineRegex::every_line("a\n", spans);
  EXPECT_EQ(spans, (std::vector<LineSpan>{{0, 1}}));
  spans.clear();
  JobLineRegex::every_line("", spans);
  EXPECT_TRUE(spans.empty());
}

}  // namespace
}  // namespace pipescope

// The streaming JSON writer: escaping, invalid UTF-8 replacement, numbers and
// layout. Every document it writes must parse (simdjson validates UTF-8).
#include "export/json_writer.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace pipescope {
namespace {

std::string json_quoted(std::string_view text) {
  fmt::memory_buffer out;
  append_json_string(out, text);
  return fmt::to_string(out);
}

// Parses `json` as a document holding one string and returns it.
std::string parse_string(const std::string& json) {
  simdjson::dom::parser parser;
  std::string_view value;
  const auto error = parser.parse(json).get_string().get(value);
  EXPECT_EQ(error, simdjson::SUCCESS) << json;
  return std::string(value);
}

std::string as_double(double v) {
  fmt::memory_buffer out;
  append_json_double(out, v);
  return fmt::to_string(out);
}

TEST(ExportJson, PlainStringIsCopied) {
  EXPECT_EQ(json_quoted("forward"), "\"forward\"");
  EXPECT_EQ(json_quoted(""), "\"\"");
}

TEST(ExportJson, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(json_quoted("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(json_quoted("\n\r\t\b\f"), R"("\n\r\t\b\f")");
  EXPECT_EQ(json_quoted(std::string_view("\x01\x1f\x7f", 3)), R"("\u0001\u001f\u007f")");
  EXPECT_EQ(json_quoted(std::string_view("a\0b", 3)), R"("a\u0000b")");
  EXPECT_EQ(json_quoted("\x1b[31mred"), R"("\u001b[31mred")");
  const std::string tricky("x\"\\\n\x01\x7f/y", 8);
  EXPECT_EQ(parse_string(json_quoted(tricky)), tricky);
}

TEST(ExportJson, KeepsValidUtf8) {
  const std::string text = "\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xEF\xBF\xBF \xF4\x8F\xBF\xBF";
  EXPECT_EQ(json_quoted(text), "\"" + text + "\"");
  EXPECT_EQ(parse_string(json_quoted(text)), text);
}

TEST(ExportJson, ReplacesEachInvalidByte) {
  const std::string r = "\xEF\xBF\xBD";
  struct Case {
    std::string input;
    std::string decoded;
  };
  const Case cases[] = {
      {"\xFF", r},
      {"a\x80z", "a" + r + "z"},
      {"\xE2\x82", r + r},                  // truncated 3-byte sequence
      {"\xC0\xAF", r + r},                  // overlong '/'
      {"\xE0\x80\xAF", r + r + r},          // overlong 3-byte
      {"\xED\xA0\x80", r + r + r},          // UTF-16 surrogate
      {"\xF4\x90\x80\x80", r + r + r + r},  // above U+10FFFF
      {"\xF0\x9F\x98", r + r + r},          // truncated 4-byte
      {"forward\xFE\xC3\xA9", "forward" + r + "\xC3\xA9"},
  };
  for (const Case& c : cases) {
    const std::string json = json_quoted(c.input);
    EXPECT_EQ(parse_string(json), c.decoded) << json;
  }
}

TEST(ExportJson, DoublesRoundTripAndStayFloats) {
  EXPECT_EQ(as_double(0.25), "0.25");
  EXPECT_EQ(as_double(1.0), "1.0");
  EXPECT_EQ(as_double(0.0), "0.0");
  EXPECT_EQ(as_double(-2.0), "-2.0");
  EXPECT_EQ(as_double(std::nan("")), "null");
  EXPECT_EQ(as_double(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(as_double(-std::numeric_limits<double>::infinity()), "null");
  for (const double v : {0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-7, 123456.789, 1e300, 5e-324}) {
    simdjson::dom::parser parser;
    const std::string text = as_double(v);
    double back = 0;
    ASSERT_EQ(parser.parse(text).get_double().get(back), simdjson::SUCCESS) << text;
    EXPECT_EQ(back, v) << text;
  }
}

TEST(ExportJson, CompactLayout) {
  fmt::memory_buffer out;
  JsonWriter w(out, JsonStyle::compact());
  w.begin_object();
  w.field("a", std::int64_t{-1});
  w.field("b", std::numeric_limits<std::uint64_t>::max());
  w.field("c", true);
  w.key("d");
  w.null();
  w.key("e");
  w.begin_array();
  w.value(std::numeric_limits<std::int64_t>::min());
  w.value("x");
  w.begin_object();
  w.end_object();
  w.begin_array();
  w.end_array();
  w.end_array();
  w.key("f");
  w.raw_value("1.500");
  w.end_object();
  EXPECT_EQ(
      fmt::to_string(out),
      R"({"a":-1,"b":18446744073709551615,"c":true,"d":null,"e":[-9223372036854775808,"x",{},[]],"f":1.500})");
}

TEST(ExportJson, PrettyLayoutWithOneLineContainers) {
  fmt::memory_buffer out;
  JsonWriter w(out, JsonStyle::pretty());
  w.begin_object();
  w.field("n", 1);
  w.key("list");
  w.begin_array();
  w.begin_object(/*one_line=*/true);
  w.field("device", 0);
  w.key("nested");
  w.begin_array();
  w.value(1);
  w.value(2);
  w.end_array();
  w.end_object();
  w.end_array();
  w.key("empty");
  w.begin_array();
  w.end_array();
  w.end_object();
  EXPECT_EQ(fmt::to_string(out),
            "{\n"
            "  \"n\": 1,\n"
            "  \"list\": [\n"
            "    {\"device\": 0, \"nested\": [1, 2]}\n"
            "  ],\n"
            "  \"empty\": []\n"
            "}");
}

// Elements written apart at an array's depth, spliced in order (empty pieces
// among them), give the bytes of writing them in place: in both styles.
TEST(ExportJson, PiecesOfAnArraySplicedInOrder) {
  for (const JsonStyle style : {JsonStyle::pretty(), JsonStyle::compact()}) {
    const auto element = [](JsonWriter& w, int i) {
      w.begin_object();
      w.field("i", i);
      w.key("xs");
      w.begin_array(/*one_line=*/true);
      w.value(i);
      w.end_array();
      w.end_object();
    };
    const auto document = [&](const auto& rows) {
      fmt::memory_buffer out;
      JsonWriter w(out, style);
      w.begin_object();
      w.key("rows");
      w.begin_array();
      rows(w);
      w.end_array();
      w.end_object();
      return fmt::to_string(out);
    };
    const auto piece = [&](int from, int to) {
      fmt::memory_buffer out;
      JsonWriter w(out, style, /*depth=*/2);
      for (int i = from; i < to; ++i) element(w, i);
      return fmt::to_string(out);
    };
    const std::string whole = document([&](JsonWriter& w) {
      for (int i = 0; i < 5; ++i) element(w, i);
    });
    EXPECT_EQ(document([&](JsonWriter& w) {
                for (const auto& [from, to] : {std::pair(0, 0), std::pair(0, 2), std::pair(2, 2),
                                               std::pair(2, 3), std::pair(3, 5), std::pair(5, 5)}) {
                  w.raw_elements(piece(from, to));
                }
              }),
              whole);
    EXPECT_EQ(piece(0, 0), "");
    // No piece with rows: the array is written empty, as with no elements.
    EXPECT_EQ(document([&](JsonWriter& w) { w.raw_elements(piece(0, 0)); }),
              document([](JsonWriter&) {}));
  }
}

TEST(ExportJson, KeysAreEscapedToo) {
  fmt::memory_buffer out;
  JsonWriter w(out, JsonStyle::compact());
  w.begin_object();
  w.field("k\"\xFF", "v");
  w.end_object();
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  ASSERT_EQ(parser.parse(fmt::to_string(out)).get_object().get(object), simdjson::SUCCESS);
  std::string_view v;
  ASSERT_EQ(object["k\"\xEF\xBF\xBD"].get_string().get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "v");
}

}  // namespace
}  // namespace pipescope

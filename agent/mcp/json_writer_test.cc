// AppendJson writes what nlohmann's dump(-1, ' ', false, replace) writes.
#include "agent/mcp/json_writer.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

using nlohmann::json;

std::string Nlohmann(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string Ours(const json& value) {
  std::string out;
  AppendJson(value, &out);
  return out;
}

TEST(JsonWriterTest, WritesWhatNlohmannWrites) {
  const json message = {
      {"jsonrpc", "2.0"},
      {"id", 7},
      {"result",
       {{"content", json::array({{{"type", "text"}, {"text", "ok\r\n\t\"q\" \\ \x01\x1f\x7f"}}})},
        {"structuredContent",
         {{"n", -3},
          {"u", 18446744073709551615ULL},
          {"f", 0.1},
          {"big", 1e300},
          {"t", true},
          {"z", nullptr},
          {"e", json::object()},
          {"a", json::array({1, "x", json::array()})},
          {"keys need \"escapes\"\n", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"}}},
        {"isError", false}}}};
  EXPECT_EQ(Ours(message), Nlohmann(message));
  EXPECT_EQ(Ours(json("")), "\"\"");
}

TEST(JsonWriterTest, StringsThatAreNotUtf8AreReplacedAsNlohmannDoes) {
  for (const std::string& s :
       {std::string("a\x80z"), std::string("\xc0\xaf"), std::string("\xed\xa0\x80 surrogate"),
        std::string("cut \xe2\x82"), std::string("\xf4\x90\x80\x80 past U+10FFFF"),
        std::string("\xff")}) {
    EXPECT_EQ(Ours(json(s)), Nlohmann(json(s)))
        << json(s).dump(-1, ' ', true, json::error_handler_t::replace);
    EXPECT_EQ(Ours(json({{"k", s}})), Nlohmann(json({{"k", s}})));
  }
}

// Random strings of every byte, biased to the interesting ones, long enough
// to have runs: the output must be nlohmann's, byte for byte.
TEST(JsonWriterTest, RandomStringsMatchNlohmann) {
  std::mt19937 random(24);
  const std::string pieces[] = {"a",
                                "0",
                                " ",
                                "\r\n",
                                "\"",
                                "\\",
                                "\x1b[31m",
                                "\x7f",
                                "\xc3\xa9",
                                "\xe2\x82\xac",
                                "\xf0\x9f\x98\x80",
                                "\x80",
                                "\xe2\x82",
                                "\xc1"};
  for (int round = 0; round < 2000; ++round) {
    std::string s;
    const int parts = static_cast<int>(random() % 64);
    for (int i = 0; i < parts; ++i) {
      if (random() % 4 == 0) {
        s.push_back(static_cast<char>(random() % 256));
      } else {
        s += pieces[random() % std::size(pieces)];
      }
    }
    ASSERT_EQ(Ours(json(s)), Nlohmann(json(s))) << "round " << round;
  }
}

}  // namespace
}  // namespace termbridge::mcp

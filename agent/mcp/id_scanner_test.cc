// IdScanner against messages fed whole and byte by byte.
#include "agent/mcp/id_scanner.h"

#include <string>

#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

nlohmann::json Scan(const std::string& message, size_t piece) {
  IdScanner scanner;
  for (size_t i = 0; i < message.size(); i += piece) scanner.Feed(message.substr(i, piece));
  return scanner.id();
}

// The same answer whether the message arrives at once or a byte at a time.
void ExpectId(const std::string& message, const nlohmann::json& want) {
  EXPECT_EQ(Scan(message, message.size() + 1), want) << message;
  EXPECT_EQ(Scan(message, 1), want) << message;
  EXPECT_EQ(Scan(message, 7), want) << message;
}

TEST(IdScannerTest, FindsTheTopLevelIdBeforeOrAfterHugeParams) {
  const std::string pad(100000, 'x');
  ExpectId(R"({"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"pad":")" + pad + "\"}}",
           17);
  // The TypeScript SDK's order: method, params, jsonrpc, id.
  ExpectId(
      R"({"method":"tools/call","params":{"pad":")" + pad + R"("},"jsonrpc":"2.0","id":"req-9"})",
      "req-9");
  ExpectId(R"({ "id" : -3 , "method":"x"})", -3);
  ExpectId(R"({"id":2.5})", 2.5);
}

TEST(IdScannerTest, IgnoresIdsInsideParamsAndLookalikes) {
  ExpectId(R"({"method":"x","params":{"id":5,"arguments":{"id":"inner"}},"jsonrpc":"2.0"})",
           nullptr);
  ExpectId(R"({"params":["id",1],"idx":4,"ID":6,"i\u0064":7,"note":"\"id\":8"})", nullptr);
  ExpectId(R"({"params":{"text":"}, \"id\": 3, {"},"id":4})", 4);
}

TEST(IdScannerTest, StringIdsKeepTheirEscapes) {
  ExpectId(R"({"id":"a\"b\\c","method":"x"})", "a\"b\\c");
}

TEST(IdScannerTest, NullObjectOrMissingIdsAreNull) {
  ExpectId(R"({"id":null,"method":"x"})", nullptr);
  ExpectId(R"({"id":{"n":1},"method":"x"})", nullptr);
  ExpectId(R"({"id":true})", nullptr);
  ExpectId(R"({"method":"notifications/x"})", nullptr);
  ExpectId(R"([{"id":1}])", nullptr);  // a batch: no single id to answer
  ExpectId(R"({"id":")" + std::string(5000, 'z') + R"(","method":"x"})", nullptr);
  ExpectId("not json at all", nullptr);
}

TEST(IdScannerTest, TheLastTopLevelIdWins) {
  // As a JSON parser that keeps the last duplicate key would read it.
  ExpectId(R"({"id":1,"method":"x","id":2})", 2);
}

}  // namespace
}  // namespace termbridge::mcp

// Tests for the tool-argument checker: each violation names the field a
// caller has to fix, with a reason a person can act on.
#include "agent/mcp/argument_check.h"

#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

using nlohmann::json;

// A schema shaped like the terminal tools' inputSchema.
json ToolSchema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "action": {"type": "string", "enum": ["run", "kill"]},
      "args": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
      "cursor": {"type": "integer", "minimum": 0},
      "ratio": {"type": "number", "maximum": 1},
      "name": {"type": "string", "minLength": 1, "maxLength": 5},
      "runtime": {
        "type": "object",
        "properties": {"timeout_ms": {"type": "integer", "minimum": 1}},
        "required": ["timeout_ms"]
      },
      "env": {"type": "object", "additionalProperties": {"type": "string"}},
      "nullable": {"type": ["string", "null"]},
      "fixed": {"const": "yes"},
      "anything": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    },
    "required": ["action"],
    "additionalProperties": false
  })");
}

std::optional<ArgumentViolation> Check(const json& arguments) {
  return CheckArguments(ToolSchema(), arguments);
}

TEST(ArgumentCheckTest, ValidArgumentsPass) {
  EXPECT_FALSE(Check({{"action", "run"}}));
  EXPECT_FALSE(Check({{"action", "kill"},
                      {"args", {"a", "b"}},
                      {"cursor", 0},
                      {"ratio", 0.5},
                      {"name", "abc"},
                      {"runtime", {{"timeout_ms", 10}}},
                      {"env", {{"LANG", "C"}}},
                      {"nullable", nullptr},
                      {"fixed", "yes"}}));
}

TEST(ArgumentCheckTest, MissingRequiredFieldIsNamed) {
  auto violation = Check(json::object());
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "action");
  EXPECT_EQ(violation->reason, "is required");
}

TEST(ArgumentCheckTest, WrongTypeNamesFieldAndType) {
  auto violation = Check({{"action", 42}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "action");
  EXPECT_EQ(violation->reason, "must be a string");

  violation = Check({{"action", "run"}, {"cursor", "12"}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "cursor");
  EXPECT_EQ(violation->reason, "must be an integer");
}

TEST(ArgumentCheckTest, TheRootMustBeAnObject) {
  auto violation = CheckArguments(ToolSchema(), json::array());
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "arguments");
  EXPECT_EQ(violation->reason, "must be an object");
}

TEST(ArgumentCheckTest, EnumListsTheAllowedValues) {
  auto violation = Check({{"action", "explode"}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "action");
  EXPECT_EQ(violation->reason, R"(must be one of "run", "kill")");
}

TEST(ArgumentCheckTest, ConstIsChecked) {
  auto violation = Check({{"action", "run"}, {"fixed", "no"}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "fixed");
  EXPECT_EQ(violation->reason, R"(must be "yes")");
}

TEST(ArgumentCheckTest, NestedFieldsUseDottedPaths) {
  auto violation = Check({{"action", "run"}, {"runtime", {{"timeout_ms", "soon"}}}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "runtime.timeout_ms");
  EXPECT_EQ(violation->reason, "must be an integer");

  violation = Check({{"action", "run"}, {"runtime", json::object()}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "runtime.timeout_ms");
  EXPECT_EQ(violation->reason, "is required");
}

TEST(ArgumentCheckTest, ArrayItemsUseIndexedPaths) {
  auto violation = Check({{"action", "run"}, {"args", {"ok", 7}}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "args[1]");
  EXPECT_EQ(violation->reason, "must be a string");
}

TEST(ArgumentCheckTest, UnknownFieldsAreRejectedWhenTheSchemaSaysSo) {
  auto violation = Check({{"action", "run"}, {"comand", "ls"}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "comand");
  EXPECT_EQ(violation->reason, "is not an allowed field");
}

TEST(ArgumentCheckTest, AdditionalPropertiesSchemaChecksEachValue) {
  auto violation = Check({{"action", "run"}, {"env", {{"LANG", "C"}, {"DEBUG", 1}}}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "env.DEBUG");
  EXPECT_EQ(violation->reason, "must be a string");
}

TEST(ArgumentCheckTest, BoundsOnNumbersStringsAndArrays) {
  auto violation = Check({{"action", "run"}, {"cursor", -1}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "cursor");
  EXPECT_EQ(violation->reason, "must be >= 0");

  violation = Check({{"action", "run"}, {"ratio", 1.5}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->reason, "must be <= 1");

  violation = Check({{"action", "run"}, {"name", ""}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "name");
  EXPECT_EQ(violation->reason, "must be at least 1 characters long");

  violation = Check({{"action", "run"}, {"name", "toolong"}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->reason, "must be at most 5 characters long");

  violation = Check({{"action", "run"}, {"args", {"a", "b", "c", "d"}}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "args");
  EXPECT_EQ(violation->reason, "must have at most 3 items");
}

TEST(ArgumentCheckTest, AWholeFloatCountsAsAnInteger) {
  EXPECT_FALSE(Check({{"action", "run"}, {"cursor", 3.0}}));
  auto violation = Check({{"action", "run"}, {"cursor", 3.5}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->reason, "must be an integer");
}

TEST(ArgumentCheckTest, TypeListsAcceptAnyListedType) {
  EXPECT_FALSE(Check({{"action", "run"}, {"nullable", "x"}}));
  auto violation = Check({{"action", "run"}, {"nullable", 1}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "nullable");
  EXPECT_EQ(violation->reason, "must be one of the types string, null");
}

TEST(ArgumentCheckTest, UncheckedKeywordsAreLeftToTheHandler) {
  // anyOf is not evaluated here: the handler stays the authority.
  EXPECT_FALSE(Check({{"action", "run"}, {"anything", json::array()}}));
  EXPECT_FALSE(CheckArguments(true, {{"whatever", 1}}));
  EXPECT_FALSE(CheckArguments(json::object(), {{"whatever", 1}}));
}

}  // namespace
}  // namespace termbridge::mcp

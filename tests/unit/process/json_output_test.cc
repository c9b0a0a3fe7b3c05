#include "process/llm/json_output.h"

#include <gtest/gtest.h>

#include "data/json.h"

namespace mmirage::process::llm {
namespace {

using config::FieldType;
using config::SchemaField;

std::vector<SchemaField> Fields() {
  return {SchemaField{"score", FieldType::kInt, 0.0, 3.0}, SchemaField{"ok", FieldType::kBool, {}, {}},
          SchemaField{"why", FieldType::kString, {}, {}}};
}

TEST(JsonOutputTest, SchemaRequiresEveryFieldWithTypesAndBounds) {
  EXPECT_EQ(BuildJsonSchema(Fields()),
            "{\"type\":\"object\",\"properties\":{\"score\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":3},"
            "\"ok\":{\"type\":\"boolean\"},\"why\":{\"type\":\"string\"}},\"required\":[\"score\",\"ok\",\"why\"],"
            "\"additionalProperties\":false}");
}

TEST(JsonOutputTest, ValidOutputIsParsedInSchemaOrder) {
  auto v = CheckJsonOutput("  {\"why\": \"x\", \"ok\": true, \"score\": 2.0, \"extra\": 1}\n", Fields());
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(ToJson(*v), "{\"score\":2,\"ok\":true,\"why\":\"x\"}");
}

TEST(JsonOutputTest, EveryViolationIsNamed) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"{\"score\": 1, \"ok\": tr", "output is not valid JSON"},
      {"[1]", "output is a JSON array, expected an object"},
      {"{\"ok\": true, \"why\": \"\"}", "field 'score' is missing"},
      {"{\"score\": \"2\", \"ok\": true, \"why\": \"\"}", "field 'score' must be an integer, got \"2\""},
      {"{\"score\": 2.5, \"ok\": true, \"why\": \"\"}", "field 'score' must be an integer, got 2.5"},
      {"{\"score\": 7, \"ok\": true, \"why\": \"\"}", "field 'score' = 7 is above the maximum 3"},
      {"{\"score\": -1, \"ok\": true, \"why\": \"\"}", "field 'score' = -1 is below the minimum 0"},
      {"{\"score\": 1, \"ok\": 1, \"why\": \"\"}", "field 'ok' must be a boolean, got 1"},
  };
  for (const auto& c : cases) {
    auto v = CheckJsonOutput(c.text, Fields());
    ASSERT_FALSE(v.ok()) << c.text;
    EXPECT_NE(v.status().message().find(c.message), std::string::npos) << c.text << " -> " << v.status().message();
  }
}

}  // namespace
}  // namespace mmirage::process::llm

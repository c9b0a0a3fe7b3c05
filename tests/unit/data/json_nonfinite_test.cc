// Issue #13 item 11: NaN and ±infinity have no JSON form; every JSON writer emits null for them, so what it writes
// always parses (a request body, a row, a journal line).
#include <cmath>

#include <gtest/gtest.h>

#include "data/json.h"
#include "data/tagged_json.h"

namespace mmirage {
namespace {

TEST(JsonNonFiniteTest, WritersNeverEmitNanOrInfinity) {
  Value row = Value::EmptyObject();
  row.Set("nan", Value(std::nan("")));
  row.Set("inf", Value(INFINITY));
  row.Set("list", Value(Value::Array{Value(-INFINITY), Value(1.5)}));
  std::string plain = ToJson(row);
  EXPECT_EQ(plain, "{\"nan\":null,\"inf\":null,\"list\":[null,1.5]}");
  std::string tagged;
  AppendJsonTagged(row, &tagged);
  EXPECT_EQ(tagged, plain);
  for (const std::string& text : {plain, tagged, ToJsonPretty(row), ToJsonPretty(row, 4, true)}) {
    auto back = ParseJson(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().message();
    EXPECT_TRUE(back->Find("nan")->is_null()) << text;
    EXPECT_TRUE(back->Find("inf")->is_null()) << text;
  }
}

}  // namespace
}  // namespace mmirage

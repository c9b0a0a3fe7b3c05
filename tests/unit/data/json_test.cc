#include "data/json.h"

#include <gtest/gtest.h>

namespace mmirage {
namespace {

TEST(JsonTest, RoundTripKeepsKeyOrderAndTypes) {
  auto v = ParseJson(R"({"b":1,"a":[true,null,2.5,"x\n\u00e9"],"c":{"z":-3}})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(ToJson(*v), "{\"b\":1,\"a\":[true,null,2.5,\"x\\n\xc3\xa9\"],\"c\":{\"z\":-3}}");
  EXPECT_TRUE(v->Find("b")->is_int());
  EXPECT_TRUE(v->Find("a")->as_array()[2].is_double());
}

TEST(JsonTest, InvalidJsonIsCorruption) {
  auto v = ParseJson("{\"a\":");
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(v.status().IsCorruption());
}

TEST(JsonTest, DoublesPrintLikePythonRepr) {
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(FormatDouble(2.5), "2.5");
  EXPECT_EQ(FormatDouble(1.0), "1.0");
  EXPECT_EQ(FormatDouble(1e20), "1e+20");
  EXPECT_EQ(FormatDouble(1e16), "1e+16");
  EXPECT_EQ(FormatDouble(1e15), "1000000000000000.0");
  EXPECT_EQ(FormatDouble(0.0001), "0.0001");
  EXPECT_EQ(FormatDouble(0.00001), "1e-05");
  EXPECT_EQ(FormatDouble(-1.5e-7), "-1.5e-07");
  EXPECT_EQ(FormatDouble(123.456), "123.456");
}

TEST(ValueTest, EqualityIsJsonEquality) {
  EXPECT_EQ(Value(1), Value(1.0));
  EXPECT_EQ(*ParseJson(R"({"a":1,"b":2})"), *ParseJson(R"({"b":2,"a":1})"));
  EXPECT_NE(Value(true), Value(1));
  EXPECT_NE(Value("1"), Value(1));
}

TEST(ValueTest, CopyOnWriteDoesNotAffectOtherHolders) {  // more in value_cow_test.cc
  Value a = Value::EmptyArray();
  a.Push(1);
  Value b = a;
  b.Push(2);
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 2u);
}

}  // namespace
}  // namespace mmirage

#include "data/utf8.h"

namespace mmirage {
namespace {

TEST(Utf8Test, InvalidSequencesAreReplaced) {
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("cut \xe2\x82"));
  EXPECT_EQ(ToValidUtf8("cut \xe2\x82"), "cut \xEF\xBF\xBD");
  EXPECT_EQ(ToValidUtf8("a\xff"
                        "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ToValidUtf8("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate: not UTF-8
  EXPECT_EQ(ToValidUtf8("ok"), "ok");
  auto v = ParseJson(ToJson(Value(ToValidUtf8("x\xe2\x82"))));
  EXPECT_TRUE(v.ok());
}

}  // namespace
}  // namespace mmirage

namespace mmirage {
namespace {

TEST(JsonTest, EscapingIsCorrectAtEveryOffsetOfLongStrings) {
  for (size_t pos = 0; pos < 40; ++pos) {
    for (char special : {'"', '\\', '\n', '\x01', '\x1f'}) {
      std::string s(40, 'a');
      s[pos] = special;
      s += "\xc3\xa9tail";
      auto back = ParseJson(ToJson(Value(s)));
      ASSERT_TRUE(back.ok()) << pos;
      EXPECT_EQ(back->as_string(), s) << pos << " " << int(special);
    }
  }
}

TEST(JsonTest, BytesAreWrittenAsBase64) {
  EXPECT_EQ(ToJson(Value::Bytes("")), "\"\"");
  EXPECT_EQ(ToJson(Value::Bytes("f")), "\"Zg==\"");
  EXPECT_EQ(ToJson(Value::Bytes("fo")), "\"Zm8=\"");
  EXPECT_EQ(ToJson(Value::Bytes("foo")), "\"Zm9v\"");
  EXPECT_EQ(ToJson(Value::Bytes(std::string("\x89PNG\x00\xff", 6))), "\"iVBORwD/\"");
  Value b = Value::Bytes("ab");
  EXPECT_TRUE(b.is_bytes());
  EXPECT_FALSE(b.is_string());
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b, Value::Bytes("ab"));
  EXPECT_NE(b, Value("ab"));  // bytes never equal a string
  Value copy = b;
  EXPECT_EQ(copy.as_bytes(), "ab");
  EXPECT_STREQ(b.TypeName(), "bytes");
}

}  // namespace
}  // namespace mmirage

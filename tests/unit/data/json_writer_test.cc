// Issue #13, item 12: one JSON writer with options. Each preset produces the format its caller needs; the expected
// texts were produced by CPython 3's json.dumps with the arguments named on each (tojson: Jinja's htmlsafe_json_dumps,
// i.e. sort_keys=True and < > & ' escaped).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "data/json.h"
#include "data/tagged_json.h"
#include "data/utf8.h"

namespace mmirage {
namespace {

// {"z": [1, 2.5, None, "é\n\t\x01\x7f<>&'\"\\😀"], "a": {}, "m": {"k": []}, "b": True}
constexpr char kInput[] =
    "{\"z\": [1, 2.5, null, \"\\u00e9\\n\\t\\u0001\\u007f<>&'\\\"\\\\\\ud83d\\ude00\"], \"a\": {}, \"m\": {\"k\": []}, "
    "\"b\": true}";
constexpr char kCompact[] =
    "{\"z\":[1,2.5,null,\"\303\251\\n\\t\\u0001\177<>&'\\\"\\\\\360\237\230\200\"],\"a\":{},\"m\":{\"k\":[]},\"b\":"
    "true}";
constexpr char kPretty2[] =
    "{\n  \"z\": [\n    1,\n    2.5,\n    null,\n    \"\303\251\\n\\t\\u0001\177<>&'\\\"\\\\\360\237\230\200\"\n  ],\n "
    " \"a\": {},\n  \"m\": {\n    \"k\": []\n  },\n  \"b\": true\n}";
constexpr char kPretty2Sorted[] =
    "{\n  \"a\": {},\n  \"b\": true,\n  \"m\": {\n    \"k\": []\n  },\n  \"z\": [\n    1,\n    2.5,\n    null,\n    "
    "\"\303\251\\n\\t\\u0001\177<>&'\\\"\\\\\360\237\230\200\"\n  ]\n}";
constexpr char kToJson[] =
    "{\"a\": {}, \"b\": true, \"m\": {\"k\": []}, \"z\": [1, 2.5, null, "
    "\"\\u00e9\\n\\t\\u0001\\u007f\\u003c\\u003e\\u0026\\u0027\\\"\\\\\\ud83d\\ude00\"]}";
constexpr char kToJsonIndent2[] =
    "{\n  \"a\": {},\n  \"b\": true,\n  \"m\": {\n    \"k\": []\n  },\n  \"z\": [\n    1,\n    2.5,\n    null,\n    "
    "\"\\u00e9\\n\\t\\u0001\\u007f\\u003c\\u003e\\u0026\\u0027\\\"\\\\\\ud83d\\ude00\"\n  ]\n}";
constexpr char kJmesPath[] =
    "{\"z\":[1,2.5,null,\"\\u00e9\\n\\t\\u0001\\u007f<>&'\\\"\\\\\\ud83d\\ude00\"],\"a\":{},\"m\":{\"k\":[]},\"b\":"
    "true}";

Value Input() { return *ParseJson(kInput); }

JsonWriteOptions ToJsonFilterOptions(int indent) {  // the template engine's tojson preset
  JsonWriteOptions o;
  o.indent = indent;
  o.sort_keys = true;
  o.python_separators = true;
  o.ensure_ascii = true;
  o.html_safe = true;
  o.bytes = JsonWriteOptions::Bytes::kError;
  return o;
}

std::string Write(const Value& v, const JsonWriteOptions& o) {
  std::string s;
  Status st = AppendJson(v, o, &s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

TEST(JsonWriterTest, EachPresetMatchesPython) {
  Value v = Input();
  EXPECT_EQ(ToJson(v), kCompact);                                     // separators=(",", ":"), ensure_ascii=False
  EXPECT_EQ(ToJsonPretty(v, 2), kPretty2);                            // indent=2, ensure_ascii=False
  EXPECT_EQ(ToJsonPretty(v, 2, /*sort_keys=*/true), kPretty2Sorted);  // + sort_keys=True (status.json)
  EXPECT_EQ(Write(v, ToJsonFilterOptions(-1)), kToJson);              // tojson
  EXPECT_EQ(Write(v, ToJsonFilterOptions(2)), kToJsonIndent2);        // tojson(indent=2)
  JsonWriteOptions jmes;
  jmes.ensure_ascii = true;
  EXPECT_EQ(Write(v, jmes), kJmesPath);  // JMESPath to_string
  // The ensure_ascii outputs are ASCII, and every output parses back to the same value.
  for (const char* text : {kCompact, kPretty2, kToJson, kJmesPath}) {
    auto back = ParseJson(text);
    ASSERT_TRUE(back.ok()) << text;
    EXPECT_EQ(*back, v) << text;
  }
  for (unsigned char c : std::string(kToJson)) EXPECT_LT(c, 0x80);
}

TEST(JsonWriterTest, BytesAreBase64TaggedOrAnError) {
  Value v = Value::EmptyObject();
  v.Set("b", Value::Bytes(std::string("\x00\xff", 2)));
  EXPECT_EQ(ToJson(v), "{\"b\":\"AP8=\"}");
  std::string tagged;
  AppendJsonTagged(v, &tagged);
  EXPECT_EQ(tagged, "{\"b\":\"\\u0000b64:AP8=\"}");
  Value back = *ParseJson(tagged);
  ASSERT_TRUE(UntagBytes(&back));
  EXPECT_EQ(back, v);
  std::string s;
  Status st = AppendJson(v, ToJsonFilterOptions(-1), &s);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "Object of type bytes is not JSON serializable");
}

// NaN and ±Infinity are never written: null in every preset (so a file or request body always parses).
TEST(JsonWriterTest, NonFiniteNumbersAreNullEverywhere) {
  Value v = Value::EmptyArray();
  v.Push(Value(std::nan("")));
  v.Push(Value(std::numeric_limits<double>::infinity()));
  v.Push(Value(-std::numeric_limits<double>::infinity()));
  EXPECT_EQ(ToJson(v), "[null,null,null]");
  EXPECT_EQ(ToJsonPretty(v, 1), "[\n null,\n null,\n null\n]");
  EXPECT_EQ(Write(v, ToJsonFilterOptions(-1)), "[null, null, null]");
  std::string tagged;
  AppendJsonTagged(v, &tagged);
  EXPECT_EQ(tagged, "[null,null,null]");
}

TEST(JsonWriterTest, DepthAndSizeLimitsFailCleanly) {
  Value deep = Value(1);
  for (int i = 0; i < 10; ++i) {
    Value a = Value::EmptyArray();
    a.Push(deep);
    deep = a;
  }
  JsonWriteOptions o;
  o.max_depth = 10;
  std::string s;
  EXPECT_TRUE(AppendJson(deep, o, &s).ok());  // the innermost 1 is at depth 10
  o.max_depth = 9;
  s.clear();
  Status st = AppendJson(deep, o, &s);
  EXPECT_EQ(st.message(), "value nested too deeply to serialise (the limit is 9 levels)");
  JsonWriteOptions small;
  small.max_bytes = 8;
  Value arr = *ParseJson("[\"aaaa\", \"bbbb\", \"cccc\"]");
  s.clear();
  st = AppendJson(arr, small, &s);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "JSON text too large (the limit is 8 bytes)");
}

TEST(JsonWriterTest, EnsureAsciiWritesIllFormedUtf8AsReplacement) {
  JsonWriteOptions o;
  o.ensure_ascii = true;
  EXPECT_EQ(Write(Value(std::string("a\xff"
                                    "b\xe2\x82")),
                  o),
            "\"a\\ufffdb\\ufffd\"");
}

// The one UTF-8 decoder (data/utf8.h): Python's decode(errors="replace") on ill-formed input.
TEST(Utf8DecoderTest, DecodesAndReplacesLikePython) {
  auto decode = [](std::string_view s) {
    std::u32string out;
    for (size_t i = 0; i < s.size();) out.push_back(DecodeUtf8(s, &i));
    return out;
  };
  EXPECT_EQ(decode("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), (std::u32string{U'a', 0xE9, 0x20AC, 0x1F600}));
  // b'\xff\xe2\x82x\xed\xa0\x80\xc0\xaf'.decode(errors='replace') == '\ufffd\ufffdx\ufffd\ufffd\ufffd\ufffd\ufffd'
  EXPECT_EQ(decode("\xff\xe2\x82x\xed\xa0\x80\xc0\xaf"),
            (std::u32string{0xFFFD, 0xFFFD, U'x', 0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}));
  std::string s = "\xff\xe2\x82x\xed\xa0\x80\xc0\xaf";
  std::string replaced;
  for (char32_t c : decode(s)) AppendUtf8(c, &replaced);
  EXPECT_EQ(replaced, ToValidUtf8(s));  // one policy: the decoder and ToValidUtf8 agree
  EXPECT_EQ(CountCodePoints("a\xc3\xa9\xf0\x9f\x98\x80"), 3u);
  EXPECT_EQ(CountCodePoints(s), 8u);
  std::string enc;
  for (char32_t c : {char32_t{0xD800}, char32_t{0x110000}, char32_t{0x10FFFF}}) AppendUtf8(c, &enc);
  EXPECT_EQ(enc, "\xef\xbf\xbd\xef\xbf\xbd\xf4\x8f\xbf\xbf");  // never ill-formed output
  EXPECT_TRUE(IsValidUtf8(enc));
  std::string t = "ab\xe2\x82\xac";
  EXPECT_EQ(Utf8CharStart(t, 4), 2u);
  EXPECT_EQ(Utf8CharStart(t, 2), 2u);
  EXPECT_EQ(Utf8CharStart(t, 1), 1u);
}

TEST(Utf8DecoderTest, CountCodePointsAgreesWithTheDecoderAcrossAsciiRuns) {
  // ASCII runs are counted eight bytes at a time: every alignment of multi-byte and ill-formed sequences between
  // runs of every length must count what the decoder finds.
  const std::string pieces[] = {"\xc3\xa9", "\xf0\x9f\x98\x80", "\xff", "\xe2\x82", "\xed\xa0\x80"};
  for (size_t run = 0; run < 20; ++run) {
    for (const std::string& p : pieces) {
      for (size_t lead = 0; lead < 9; ++lead) {
        std::string s = std::string(lead, 'a') + p + std::string(run, 'b') + p + std::string(run % 9, 'c');
        size_t decoded = 0;
        for (size_t i = 0; i < s.size(); ++decoded) (void)DecodeUtf8(s, &i);
        EXPECT_EQ(CountCodePoints(s), decoded) << "run " << run << ", lead " << lead;
      }
    }
  }
  EXPECT_EQ(CountCodePoints(std::string(1000, 'x')), 1000u);
  EXPECT_EQ(CountCodePoints(""), 0u);
}

}  // namespace
}  // namespace mmirage

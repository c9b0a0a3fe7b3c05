#include "util/base64.h"

#include <gtest/gtest.h>

#include <string>

namespace mmirage {
namespace {

TEST(Base64Test, EncodesWithPadding) {
  EXPECT_EQ(EncodeBase64(""), "");
  EXPECT_EQ(EncodeBase64("h"), "aA==");
  EXPECT_EQ(EncodeBase64("hi"), "aGk=");
  EXPECT_EQ(EncodeBase64("hello!"), "aGVsbG8h");
  EXPECT_EQ(EncodeBase64(std::string("\xfb\xff\xbf", 3)), "+/+/");  // the two last letters of the alphabet
  std::string out = "data:,";
  AppendBase64("hello", &out);
  EXPECT_EQ(out, "data:,aGVsbG8=");
}

TEST(Base64Test, StrictDecodesWhatTheEncoderWrites) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  for (size_t n = 0; n <= all.size(); n += 37) {
    std::string s = all.substr(0, n) + all.substr(0, n % 3);
    auto back = DecodeBase64(EncodeBase64(s));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(*DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(*DecodeBase64("aGk="), "hi");
}

TEST(Base64Test, StrictRejectsWhatPythonsValidatingDecoderRejects) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c :
       {Case{"aGVsbG8", "base64 length 7 is not a multiple of 4"},
        Case{"aGV sbG8=", "base64 length 9 is not a multiple of 4"},
        Case{"aGV sbG8", "invalid base64 character at position 3"},
        Case{"a=Vs", "invalid base64 character at position 1"}, Case{"aG=s", "invalid base64 character at position 3"},
        Case{"aGk=aGk=", "invalid base64 character at position 3"},
        Case{"====", "invalid base64 character at position 0"}, Case{"ab!c", "invalid base64 character at position 2"},
        Case{"aGk_", "invalid base64 character at position 3"}}) {
    auto r = DecodeBase64(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_TRUE(r.status().IsInvalidArgument()) << c.text;
    EXPECT_EQ(r.status().message(), c.message) << c.text;
  }
}

TEST(Base64Test, LenientAcceptsWhatUsersPaste) {
  const auto lenient = Base64Syntax::kLenient;
  EXPECT_EQ(*DecodeBase64("aGVs\n bG8=\r\n", lenient), "hello");     // whitespace
  EXPECT_EQ(*DecodeBase64("aGVsbG8", lenient), "hello");             // no padding
  EXPECT_EQ(*DecodeBase64("-_-_", lenient), *DecodeBase64("+/+/"));  // URL-safe alphabet
  EXPECT_EQ(*DecodeBase64("aGk= \n", lenient), "hi");
  auto bad = DecodeBase64("aGk=aGk=", lenient);  // data after padding
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "invalid base64 text");
  EXPECT_EQ(DecodeBase64("ab!c", lenient).status().message(), "invalid base64 text");
  auto truncated = DecodeBase64("aGVsb", lenient);  // 5 characters: the last holds no whole byte
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().message(), "invalid base64 text (truncated)");
}

}  // namespace
}  // namespace mmirage

#include <gtest/gtest.h>

#include <string>

#include "util/hex.h"
#include "util/sha.h"

namespace mmirage {
namespace {

TEST(HexTest, EncodesBytesAndFixedWidthNumbers) {
  EXPECT_EQ(HexEncode(""), "");
  EXPECT_EQ(HexEncode(std::string("\x00\x01\xab\xff", 4)), "0001abff");
  EXPECT_EQ(Hex64(0), "0000000000000000");
  EXPECT_EQ(Hex64(0x0123456789abcdefull), "0123456789abcdef");
  std::string out = "\\u";
  AppendHexDigits(0x2a, 4, &out);
  EXPECT_EQ(out, "\\u002a");
  out.clear();
  AppendHexDigits(0xfe, 2, &out, HexCase::kUpper);
  AppendHexDigits(0x1234, 2, &out);  // only the low digits
  EXPECT_EQ(out, "FE34");
}

TEST(HexTest, DigitValues) {
  EXPECT_EQ(HexDigitValue('0'), 0);
  EXPECT_EQ(HexDigitValue('9'), 9);
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('g'), -1);
  EXPECT_EQ(HexDigitValue(' '), -1);
}

TEST(ShaTest, KnownVectors) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha1Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST(ShaTest, StreamingEqualsOneShot) {
  Sha256 s;
  s.Update("a");
  s.Update("");
  s.Update("bc");
  EXPECT_EQ(HexEncode(s.Finish()), Sha256Hex("abc"));
}

}  // namespace
}  // namespace mmirage

#include "util/parse_int.h"

#include <gtest/gtest.h>

#include <limits>

namespace mmirage {
namespace {

TEST(ParseIntTest, Int64TakesAnOptionalSignAndDigitsOnly) {
  EXPECT_EQ(ParseInt64("0"), 0);
  EXPECT_EQ(ParseInt64("42"), 42);
  EXPECT_EQ(ParseInt64("+42"), 42);
  EXPECT_EQ(ParseInt64("-42"), -42);
  EXPECT_EQ(ParseInt64("007"), 7);
  EXPECT_EQ(ParseInt64("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ParseInt64("-9223372036854775808"), std::numeric_limits<int64_t>::min());
  for (const char* bad : {"", "+", "-", " 1", "1 ", "1x", "0x10", "+-1", "--1", "1.0", "9223372036854775808",
                          "-9223372036854775809", "99999999999999999999", "\xd9\xa1"}) {
    EXPECT_EQ(ParseInt64(bad), std::nullopt) << bad;
  }
}

TEST(ParseIntTest, NonNegativeTakesDigitsOnly) {
  EXPECT_EQ(ParseNonNegativeInt64("12"), 12);
  EXPECT_EQ(ParseNonNegativeInt64("9223372036854775807"), std::numeric_limits<int64_t>::max());
  for (const char* bad : {"", "+1", "-1", "-0", " 1", "1a", "9223372036854775808", "99999999999999999999"}) {
    EXPECT_EQ(ParseNonNegativeInt64(bad), std::nullopt) << bad;
  }
}

TEST(ParseIntTest, Uint64DecimalAndHex) {
  EXPECT_EQ(ParseUint64("18446744073709551615"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(ParseUint64("18446744073709551616"), std::nullopt);
  EXPECT_EQ(ParseUint64("00ff", 16), 0xffu);
  EXPECT_EQ(ParseUint64("ABCdef0123456789", 16), 0xabcdef0123456789u);
  for (const char* bad : {"", "+1", "-1", "0x1", "1 ", "g"}) EXPECT_EQ(ParseUint64(bad, 16), std::nullopt) << bad;
  EXPECT_EQ(ParseUint64("ff"), std::nullopt);  // base 10 by default
}

}  // namespace
}  // namespace mmirage

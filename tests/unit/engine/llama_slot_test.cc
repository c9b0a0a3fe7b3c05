// Stop-string search of the llama engine's slots (a pure function).
#include "engine/llama/llama_slot.h"

#include <gtest/gtest.h>

namespace mmirage::engine {
namespace {

TEST(FindStopTest, FindsTheEarliestStop) {
  EXPECT_EQ(FindStop("hello world. bye", {"bye", "."}, 0), 11u);
  EXPECT_EQ(FindStop("hello world", {"xyz"}, 0), std::string::npos);
}

TEST(FindStopTest, OnlyLooksAtStopsThatReachTheNewBytes) {
  // "ab" ended before byte 5 and was checked already; "cd" straddles the boundary.
  EXPECT_EQ(FindStop("xabxxcd", {"ab"}, 5), std::string::npos);
  EXPECT_EQ(FindStop("xabxxcd", {"cd"}, 6), 5u);
  EXPECT_EQ(FindStop("xabxxcd", {"xcd"}, 6), 4u);
  EXPECT_EQ(FindStop("xabxxcd", {"xcd"}, 7), std::string::npos);  // nothing new
}

TEST(FindStopTest, EmptyStopNeverMatches) { EXPECT_EQ(FindStop("abc", {""}, 0), std::string::npos); }

}  // namespace
}  // namespace mmirage::engine

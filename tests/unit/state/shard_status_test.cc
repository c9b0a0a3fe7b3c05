#include "state/shard_status.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "state/shard_state.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

constexpr ShardStatus kAll[] = {ShardStatus::kMissing,   ShardStatus::kUnknown, ShardStatus::kRunning,
                                ShardStatus::kSubmitted, ShardStatus::kSuccess, ShardStatus::kFailed};

TEST(ShardStatusTest, EveryStatusRoundTripsThroughItsName) {
  std::set<std::string> names;
  for (ShardStatus s : kAll) {
    EXPECT_EQ(ParseShardStatus(ShardStatusName(s)), s) << ShardStatusName(s);
    names.insert(ShardStatusName(s));
  }
  EXPECT_EQ(names, (std::set<std::string>{"missing", "unknown", "running", "submitted", "success", "failed"}));
}

TEST(ShardStatusTest, OtherTextIsUnknown) {
  for (const char* text : {"", "Success", "succeeded", "running ", "stale", "exhausted"}) {
    EXPECT_EQ(ParseShardStatus(text), ShardStatus::kUnknown) << text;
  }
}

// status.json keeps the spelling of the text format: each status written is read back as itself.
TEST(ShardStatusTest, StatusJsonHoldsTheNameAndReadsBackTheEnum) {
  testing::TempDir d;
  ShardState st(Env::Default(), d.path(), 0);
  ASSERT_TRUE(st.MarkRunning({}).ok());
  EXPECT_NE(testing::ReadFile(d.Path("shard_0/status.json")).find("\"status\": \"running\""), std::string::npos);
  EXPECT_EQ(st.Read().status, ShardStatus::kRunning);
  ASSERT_TRUE(st.MarkSubmitted(Value()).ok());
  EXPECT_NE(testing::ReadFile(d.Path("shard_0/status.json")).find("\"status\": \"submitted\""), std::string::npos);
  EXPECT_EQ(st.Read().status, ShardStatus::kSubmitted);
  ASSERT_TRUE(st.MarkFailed("boom", 0).ok());
  EXPECT_NE(testing::ReadFile(d.Path("shard_0/status.json")).find("\"status\": \"failed\""), std::string::npos);
  EXPECT_EQ(st.Read().status, ShardStatus::kFailed);
  ASSERT_TRUE(st.MarkSuccess(Value::EmptyObject(), 0).ok());
  EXPECT_NE(testing::ReadFile(d.Path("shard_0/status.json")).find("\"status\": \"success\""), std::string::npos);
  EXPECT_EQ(st.Read().status, ShardStatus::kSuccess);
}

TEST(ShardStatusTest, AStatusJsonWithAnUnrecognisedStatusReadsAsUnknown) {
  testing::TempDir d;
  testing::WriteFile(d.Path("shard_0/status.json"), "{\"status\": \"weird\", \"retry_count\": 1}\n");
  EXPECT_EQ(ShardState(Env::Default(), d.path(), 0).Read().status, ShardStatus::kUnknown);
}

}  // namespace
}  // namespace mmirage

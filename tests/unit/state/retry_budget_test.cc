// Issue #13, item 4: the retry budget converges — attempts that committed new rows do not spend it, attempts that
// made no progress do (a poison shard still stops), and ResetBudget gives a fresh budget.
#include <gtest/gtest.h>

#include "state/heartbeat.h"
#include "state/shard_state.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

// One attempt: starts, commits up to `rows_after` rows (progress.json), dies without a status.
void Attempt(const std::string& state_dir, int64_t rows_after) {
  ShardState st(Env::Default(), state_dir, 0);
  ASSERT_TRUE(st.MarkRunning({}).ok());
  ShardProgress p;
  p.rows_done = rows_after;
  ASSERT_TRUE(WriteShardProgress(Env::Default(), state_dir, 0, p).ok());
}

TEST(RetryBudgetTest, AttemptsThatMakeProgressAreFree) {
  testing::TempDir d;
  // 14 interrupted attempts, each committing 10 more rows (a killed `run --force-retry`).
  for (int i = 1; i <= 14; ++i) Attempt(d.path(), 10 * i);
  ShardRecord r = ShardState(Env::Default(), d.path(), 0).Read();
  EXPECT_EQ(r.retry_count, 14);
  EXPECT_EQ(r.attempts_spent, 0);
}

TEST(RetryBudgetTest, AttemptsWithoutProgressAreSpentAndPoisonStops) {
  testing::TempDir d;
  Attempt(d.path(), 5);  // progress: free
  Attempt(d.path(), 5);  // none: spent
  Attempt(d.path(), 5);  // none: spent
  ShardRecord r = ShardState(Env::Default(), d.path(), 0).Read();
  EXPECT_EQ(r.retry_count, 3);
  EXPECT_EQ(r.attempts_spent, 2);
  Attempt(d.path(), 9);  // progress again: the budget is refunded
  r = ShardState(Env::Default(), d.path(), 0).Read();
  EXPECT_EQ(r.attempts_spent, 0);
  for (int i = 0; i < 3; ++i) Attempt(d.path(), 9);  // a poison row from here on: stuck at 9
  EXPECT_EQ(ShardState(Env::Default(), d.path(), 0).Read().attempts_spent, 3);
}

TEST(RetryBudgetTest, ResetGivesAFreshBudgetAndIsLogged) {
  testing::TempDir d;
  for (int i = 0; i < 4; ++i) Attempt(d.path(), 0);
  ShardState st(Env::Default(), d.path(), 0);
  EXPECT_EQ(st.Read().attempts_spent, 4);
  ASSERT_TRUE(st.ResetBudget().ok());
  ShardRecord r = st.Read();
  EXPECT_EQ(r.attempts_spent, 0);
  EXPECT_EQ(r.retry_count, 4);  // the attempt number keeps growing
  EXPECT_NE(testing::ReadFile(d.Path("shard_0/attempts.log")).find("\nreset "), std::string::npos);
  Attempt(d.path(), 0);
  EXPECT_EQ(st.Read().attempts_spent, 1);
  EXPECT_EQ(st.Read().retry_count, 5);
}

TEST(RetryBudgetTest, InterruptedAttemptsAreFree) {
  testing::TempDir d;
  ShardState st(Env::Default(), d.path(), 0);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(st.MarkRunning({}).ok());
    ASSERT_TRUE(st.MarkInterrupted("interrupted by SIGINT after 0 rows (resumable)", 0).ok());
  }
  EXPECT_EQ(st.Read().attempts_spent, 0);
  ASSERT_TRUE(st.MarkRunning({}).ok());
  ASSERT_TRUE(st.MarkFailed("boom", 0).ok());
  EXPECT_EQ(st.Read().attempts_spent, 1);
}

// Whether an attempt was interrupted is what the caller says, not what its message reads like.
TEST(RetryBudgetTest, TheOutcomeDecidesNotTheErrorText) {
  testing::TempDir d;
  ShardState st(Env::Default(), d.path(), 0);
  ASSERT_TRUE(st.MarkRunning({}).ok());
  ASSERT_TRUE(st.MarkFailed("interrupted by SIGINT after 0 rows (resumable)", 0).ok());
  ShardRecord r = st.Read();
  EXPECT_EQ(r.attempts_spent, 1);
  EXPECT_FALSE(r.last_attempt_interrupted);
  ASSERT_TRUE(st.MarkRunning({}).ok());
  ASSERT_TRUE(st.MarkInterrupted("stopped", 0).ok());
  r = st.Read();
  EXPECT_EQ(r.attempts_spent, 1);
  EXPECT_TRUE(r.last_attempt_interrupted);
  EXPECT_EQ(r.status, ShardStatus::kFailed);
  EXPECT_EQ(r.error, "stopped");
  // The next attempt is not interrupted (yet).
  ASSERT_TRUE(st.MarkRunning({}).ok());
  EXPECT_FALSE(st.Read().last_attempt_interrupted);
}

// attempts.log and status.json of an interrupted attempt (docs/state_format.md): the attempt line, then
// "interrupted <attempt>"; status.json as for any failed attempt.
TEST(RetryBudgetTest, AnInterruptedAttemptWritesTheDocumentedLines) {
  testing::TempDir d;
  ShardState st(Env::Default(), d.path(), 0);
  ASSERT_TRUE(st.MarkRunning({}).ok());
  ASSERT_TRUE(st.MarkInterrupted("interrupted by SIGTERM after 3 rows (resumable)", 2).ok());
  std::string log = testing::ReadFile(d.Path("shard_0/attempts.log"));
  size_t nl = log.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(log.substr(0, 2), "1 ");
  EXPECT_EQ(log.substr(nl + 1), "interrupted 1\n");
  std::string status = testing::ReadFile(d.Path("shard_0/status.json"));
  EXPECT_NE(status.find("\"status\": \"failed\""), std::string::npos) << status;
  EXPECT_NE(status.find("\"error\": \"interrupted by SIGTERM after 3 rows (resumable)\""), std::string::npos);
  EXPECT_NE(status.find("\"failed_rows\": 2"), std::string::npos) << status;
}

TEST(RetryBudgetTest, OldLogLinesWithoutRowCountsAreSpent) {
  testing::TempDir d;
  ASSERT_TRUE(Env::Default()->CreateDirs(d.Path("shard_0")).ok());
  testing::WriteFile(d.Path("shard_0/attempts.log"), "1 2024-01-01T00:00:00 h 1\n2 2024-01-01T00:00:01 h 2\n");
  ShardRecord r = ShardState(Env::Default(), d.path(), 0).Read();
  EXPECT_EQ(r.retry_count, 2);
  EXPECT_EQ(r.attempts_spent, 2);
}

}  // namespace
}  // namespace mmirage

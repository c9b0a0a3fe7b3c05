// Issue #13 item 7: the state files at every sync point (tests/support/fault_env.h). A crash anywhere in a shard's
// life (start, failure, retry, success) leaves a readable record that never claims more than was durably done:
// never a torn status.json, never `success` before MarkSuccess returned, and every attempt that was allowed to
// start is counted.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "state/shard_state.h"
#include "support/fault_env.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

TEST(StateCrashTest, ACrashAtEverySyncPointLeavesAnHonestRecord) {
  testing::TempDir d;
  const std::string state = d.Path("state");
  // The life of a shard: attempt 1 fails, attempt 2 succeeds. Returns how many steps returned OK.
  auto life = [&](Env* env, int* started) -> int {
    ShardState s(env, state, 0);
    ShardState::RunInfo info;
    int ok = 0;
    if (!s.MarkRunning(info).ok()) return ok;
    ++ok, ++*started;
    if (!s.MarkFailed("boom", 0).ok()) return ok;
    ++ok;
    if (!s.MarkRunning(info).ok()) return ok;
    ++ok, ++*started;
    if (!s.MarkSuccess(Value::EmptyObject(), 0).ok()) return ok;
    return ++ok;
  };
  int64_t total = 0;
  {
    testing::FaultEnv env(d.path());
    int started = 0;
    env.CrashAtSyncPoint(0);
    ASSERT_EQ(life(&env, &started), 4);
    total = env.sync_points();
  }
  ASSERT_GE(total, 8);
  for (int64_t k = 1; k <= total; ++k) {
    testing::RunCommand("rm -rf '" + state + "'");
    testing::FaultEnv env(d.path());
    env.CrashAtSyncPoint(k);
    int started = 0;
    int done = life(&env, &started);
    ASSERT_TRUE(env.crashed()) << k;
    ASSERT_TRUE(env.SimulateCrash().ok());
    SCOPED_TRACE("crash at sync point " + std::to_string(k) + " after " + std::to_string(done) + " steps");
    ShardRecord r = ShardState(Env::Default(), state, 0).Read();
    EXPECT_NE(r.status, ShardStatus::kUnknown) << "torn status.json";
    if (r.status == ShardStatus::kSuccess) { EXPECT_EQ(done, 3) << "success recorded before MarkSuccess was reached"; }
    EXPECT_GE(r.retry_count, started) << "an attempt that started is not counted";
    // A resumed life from here ends successful.
    ShardState s(Env::Default(), state, 0);
    ASSERT_TRUE(s.MarkRunning({}).ok());
    ASSERT_TRUE(s.MarkSuccess(Value::EmptyObject(), 0).ok());
    EXPECT_EQ(s.Read().status, ShardStatus::kSuccess);
  }
}

}  // namespace
}  // namespace mmirage

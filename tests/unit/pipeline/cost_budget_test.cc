// The run's cost budget as a row gate: the decision, and processes sharing one budget file.
#include "pipeline/cost_budget.h"

#include <gtest/gtest.h>

#include "support/test_util.h"
#include "util/env.h"

namespace mmirage::pipeline {
namespace {

TEST(CostBudgetTest, RowsStartOneAtATimeUntilAMeanIsKnown) {
  double reserve = -1;
  EXPECT_EQ(DecideCostGate({1.0, 0, 0, 0, 0}, &reserve), RowGate::kStart);
  EXPECT_EQ(reserve, 0);
  EXPECT_EQ(DecideCostGate({1.0, 0, 0, 0, 1}, &reserve), RowGate::kWait);
  EXPECT_EQ(DecideCostGate({1.0, 1.0, 0, 0, 0}, &reserve), RowGate::kStop);  // the others spent it all
}

TEST(CostBudgetTest, TheProjectionCountsTheOthersAndWhatIsInFlight) {
  double reserve = 0;
  // 4 done for $0.4: $0.1 each; 2 in flight + the new row = $0.3 more.
  EXPECT_EQ(DecideCostGate({1.0, 0.3, 0.4, 4, 2}, &reserve), RowGate::kStart);  // 0.3 + 0.4 + 0.3 = 1.0
  EXPECT_DOUBLE_EQ(reserve, 0.3);
  EXPECT_EQ(DecideCostGate({1.0, 0.31, 0.4, 4, 2}, &reserve), RowGate::kWait);
  EXPECT_DOUBLE_EQ(reserve, 0.2);  // what is in flight stays reserved
  EXPECT_EQ(DecideCostGate({1.0, 0.6, 0.4, 4, 0}, &reserve), RowGate::kStop);
}

TEST(CostBudgetTest, ShardsSharingTheFileStayWithinTheRunsBudget) {
  testing::TempDir d;
  StreamTotals a_totals, b_totals;
  double a_spent = 0, b_spent = 0;
  auto file = [&] { return NewFileSharedCounters(d.Path("cost")); };
  auto a = MakeCostGate(
      1.0, [&] { return a_spent; }, &a_totals, file(), "1");
  auto b = MakeCostGate(
      1.0, [&] { return b_spent; }, &b_totals, file(), "2");
  // Each generation costs $0.1; the two shards take turns starting and finishing one row.
  int started = 0;
  for (int turn = 0; turn < 40; ++turn) {
    auto& gate = turn % 2 == 0 ? a : b;
    StreamTotals& t = turn % 2 == 0 ? a_totals : b_totals;
    double& spent = turn % 2 == 0 ? a_spent : b_spent;
    if (gate() != RowGate::kStart) continue;
    ++started;
    t.generations += 1;  // answered at once
    spent += 0.1;
  }
  EXPECT_EQ(started, 10);  // $1 of $0.1 rows, not $1 per shard
  EXPECT_LE(a_spent + b_spent, 1.0 + 1e-9);
  EXPECT_EQ(a(), RowGate::kStop);
  SharedCounters::Map m;
  ASSERT_TRUE(file()->Update([&](SharedCounters::Map* x) { m = *x; }).ok());
  EXPECT_NEAR(SharedCostSpent(m), 1.0, 1e-9);
}

TEST(CostBudgetTest, AGateThatEndsReleasesItsReserve) {
  testing::TempDir d;
  StreamTotals t;
  t.generations = 3;
  t.in_flight = 2;  // 1 done for $0.2; 2 in flight: $0.4 reserved
  auto shared = NewFileSharedCounters(d.Path("cost"));
  {
    auto gate = MakeCostGate(
        10, [] { return 0.2; }, &t, shared, "7");
    EXPECT_EQ(gate(), RowGate::kStart);
    SharedCounters::Map m;
    ASSERT_TRUE(shared->Update([&](SharedCounters::Map* x) { m = *x; }).ok());
    EXPECT_NEAR(CounterOr(m, "reserved.7", 0), 0.6, 1e-9);  // the new row's too
  }
  SharedCounters::Map m;
  ASSERT_TRUE(shared->Update([&](SharedCounters::Map* x) { m = *x; }).ok());
  EXPECT_EQ(CounterOr(m, "reserved.7", -1), 0);
  EXPECT_NEAR(CounterOr(m, "spent.7", 0), 0.2, 1e-9);
}

TEST(CostBudgetTest, RecognisesTheStopMessage) {
  EXPECT_TRUE(IsCostBudgetStop("max_cost_usd (0.5) reached: $0.49 spent after 17 rows; run again to continue"));
  EXPECT_FALSE(IsCostBudgetStop("interrupted by SIGTERM after 17 rows (resumable)"));
}

}  // namespace
}  // namespace mmirage::pipeline

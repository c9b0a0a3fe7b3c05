#include "stats/estimate_math.h"

#include <gtest/gtest.h>

namespace mmirage {
namespace {

TEST(EstimateMathTest, TotalIsPopulationTimesTheMean) {
  Interval i = ExtrapolateTotal({1, 2, 3, 4}, {}, 100);
  EXPECT_DOUBLE_EQ(i.estimate, 250);
  EXPECT_LT(i.low, 250);
  EXPECT_GT(i.high, 250);
  EXPECT_NEAR(i.estimate - i.low, i.high - i.estimate, 1e-9);
}

TEST(EstimateMathTest, AConstantSampleHasNoSpread) {
  Interval i = ExtrapolateTotal({7, 7, 7}, {}, 10);
  EXPECT_DOUBLE_EQ(i.low, 70);
  EXPECT_DOUBLE_EQ(i.high, 70);
}

TEST(EstimateMathTest, ASampleOfTheWholePopulationIsExact) {
  Interval i = ExtrapolateTotal({1, 5, 9}, {}, 3);  // finite-population correction: no uncertainty left
  EXPECT_DOUBLE_EQ(i.estimate, 15);
  EXPECT_DOUBLE_EQ(i.low, 15);
  EXPECT_DOUBLE_EQ(i.high, 15);
}

TEST(EstimateMathTest, WeightsShiftTheMean) {
  Interval i = ExtrapolateTotal({0, 10}, {3, 1}, 8);
  EXPECT_DOUBLE_EQ(i.estimate, 8 * 2.5);
}

TEST(EstimateMathTest, TheIntervalNeverGoesBelowZeroAndNarrowsWithN) {
  Interval small = ExtrapolateTotal({0, 0, 100}, {}, 1000);
  EXPECT_GE(small.low, 0);
  std::vector<double> many;
  for (int k = 0; k < 100; ++k) many.insert(many.end(), {0, 0, 100});
  Interval big = ExtrapolateTotal(many, {}, 100000);
  EXPECT_LT((big.high - big.low) / big.estimate, (small.high - small.low) / small.estimate);
}

TEST(EstimateMathTest, StudentQuantiles) {
  EXPECT_NEAR(StudentT90(1), 6.314, 1e-3);
  EXPECT_NEAR(StudentT90(30), 1.697, 1e-3);
  EXPECT_NEAR(StudentT90(60), 1.671, 2e-3);
  EXPECT_NEAR(StudentT90(100000), 1.645, 1e-3);
}

}  // namespace
}  // namespace mmirage

// Extrapolating a sample to a population, for `mmirage estimate`. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace mmirage {

struct Interval {
  double estimate = 0, low = 0, high = 0;
};

// The total over `population` rows of a per-row quantity of which `values` is a sample (weights: how many rows
// each sampled row stands for; empty = equal). Estimate = population × weighted mean; the interval is the 90 %
// confidence interval of that total under simple random sampling without replacement (Student t with n-1
// degrees of freedom, finite-population correction), clamped at 0. n = 1 gives estimate = low = high.
// REQUIRES: values non-empty; weights empty or of the same size, positive.
Interval ExtrapolateTotal(const std::vector<double>& values, const std::vector<double>& weights, double population);

// Two-sided 90 % Student t quantile (t_{0.95, dof}); 1.645 for large dof.
double StudentT90(int64_t dof);

}  // namespace mmirage

#include "stats/estimate_math.h"

#include <algorithm>
#include <cmath>

namespace mmirage {

double StudentT90(int64_t dof) {
  static const double kTable[] = {0,     6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
                                  1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721,
                                  1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
  if (dof < 1) return 0;
  if (dof <= 30) return kTable[dof];
  // Cornish-Fisher expansion around the normal quantile.
  const double z = 1.6448536269514722, d = static_cast<double>(dof);
  return z + (z * z * z + z) / (4 * d) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d);
}

Interval ExtrapolateTotal(const std::vector<double>& values, const std::vector<double>& weights, double population) {
  Interval r;
  const size_t n = values.size();
  if (n == 0) return r;
  double wsum = 0, mean = 0;
  for (size_t i = 0; i < n; ++i) {
    double w = weights.empty() ? 1.0 : weights[i];
    wsum += w;
    mean += w * values[i];
  }
  mean /= wsum;
  r.estimate = r.low = r.high = population * mean;
  if (n < 2) return r;
  double var = 0;
  for (size_t i = 0; i < n; ++i) {
    double w = weights.empty() ? 1.0 : weights[i];
    var += w * (values[i] - mean) * (values[i] - mean);
  }
  var = var / wsum * static_cast<double>(n) / static_cast<double>(n - 1);  // unbiased
  double fpc = population > 0 ? std::max(0.0, 1.0 - static_cast<double>(n) / population) : 0.0;
  double se_total = population * std::sqrt(var / static_cast<double>(n) * fpc);
  double half = StudentT90(static_cast<int64_t>(n) - 1) * se_total;
  r.low = std::max(0.0, r.estimate - half);
  r.high = r.estimate + half;
  return r;
}

}  // namespace mmirage

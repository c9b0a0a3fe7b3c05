#include "stats/utilization.h"

#include <gtest/gtest.h>

#include <deque>

namespace mmirage {
namespace {

class FakeGpu : public GpuUtilSampler {
 public:
  explicit FakeGpu(std::deque<std::optional<double>>* samples) : samples_(samples) {}
  std::optional<double> Sample() override {
    if (samples_->empty()) return std::nullopt;
    auto s = samples_->front();
    samples_->pop_front();
    return s;
  }

 private:
  std::deque<std::optional<double>>* samples_;
};

class FakeCpu : public CpuUsageSampler {
 public:
  explicit FakeCpu(CpuCounters* now) : now_(now) {}
  CpuCounters Read() override { return *now_; }

 private:
  CpuCounters* now_;
};

class UtilizationPollerTest : public ::testing::Test {
 protected:
  UtilizationPollerOptions Options(bool gpu = true, bool cpu = true) {
    UtilizationPollerOptions o;
    if (gpu) o.gpu = std::make_unique<FakeGpu>(&gpu_samples_);
    if (cpu) o.cpu = std::make_unique<FakeCpu>(&cpu_);
    o.monotonic_micros = [this] { return clock_us_; };
    return o;
  }
  std::deque<std::optional<double>> gpu_samples_;
  CpuCounters cpu_;
  uint64_t clock_us_ = 1000000;
};

TEST_F(UtilizationPollerTest, NoSamplesGiveNullsAndZeroCount) {
  UtilizationPoller p(Options(/*gpu=*/false, /*cpu=*/false));
  p.SampleOnce();
  UtilizationSummary s = p.Summary();
  EXPECT_FALSE(s.gpu_util_mean.has_value());
  EXPECT_FALSE(s.gpu_util_min.has_value());
  EXPECT_FALSE(s.gpu_util_max.has_value());
  EXPECT_EQ(s.gpu_util_samples, 0);
  EXPECT_FALSE(s.cpu_util_mean.has_value());
  ShardStats st;
  st.gpu_util_samples = 5;
  s.ApplyTo(&st);
  EXPECT_EQ(st.gpu_util_samples, 0);
  EXPECT_TRUE(st.ToValue().Find("gpu_util_mean")->is_null());
}

TEST_F(UtilizationPollerTest, GpuSummaryIsMeanMinMaxOfTheSamples) {
  gpu_samples_ = {50.0, std::nullopt, 70.0, 65.25};
  UtilizationPoller p(Options(true, false));
  for (int i = 0; i < 4; ++i) p.SampleOnce();
  UtilizationSummary s = p.Summary();
  EXPECT_EQ(s.gpu_util_samples, 3);          // the failed sample is not counted
  EXPECT_DOUBLE_EQ(*s.gpu_util_mean, 61.8);  // round(185.25 / 3, 1)
  EXPECT_DOUBLE_EQ(*s.gpu_util_min, 50.0);
  EXPECT_DOUBLE_EQ(*s.gpu_util_max, 70.0);
}

TEST_F(UtilizationPollerTest, MeasuredZeroIsZeroNotNull) {
  gpu_samples_ = {0.0, 0.0};
  UtilizationPoller p(Options(true, false));
  p.SampleOnce();
  p.SampleOnce();
  UtilizationSummary s = p.Summary();
  ASSERT_TRUE(s.gpu_util_mean.has_value());
  EXPECT_EQ(*s.gpu_util_mean, 0.0);
  EXPECT_EQ(s.gpu_util_samples, 2);
}

TEST_F(UtilizationPollerTest, CpuRatesFromFirstToLastReading) {
  UtilizationPoller p(Options(false, true));
  cpu_.process_cpu_seconds = 10.0;
  cpu_.machine_busy_ticks = 1000;
  cpu_.machine_total_ticks = 4000;
  p.SampleOnce();  // baseline
  EXPECT_FALSE(p.Summary().cpu_util_mean.has_value());
  clock_us_ += 2000000;  // 2 s later: 3 s of CPU → 150 % of a core
  cpu_.process_cpu_seconds = 13.0;
  cpu_.machine_busy_ticks = 1300;
  cpu_.machine_total_ticks = 5000;
  p.SampleOnce();
  clock_us_ += 2000000;  // idle for 2 s
  cpu_.machine_total_ticks = 6000;
  p.SampleOnce();
  UtilizationSummary s = p.Summary();
  EXPECT_DOUBLE_EQ(*s.cpu_util_mean, 75.0);          // 3 s CPU over 4 s
  EXPECT_DOUBLE_EQ(*s.machine_cpu_util_mean, 15.0);  // 300 busy of 2000 ticks
  ShardStats st;
  s.ApplyTo(&st);
  EXPECT_DOUBLE_EQ(ShardStats::FromValue(st.ToValue()).cpu_util_mean.value(), 75.0);
}

TEST_F(UtilizationPollerTest, StartTakesTheBaselineAndStopIsIdempotent) {
  cpu_.process_cpu_seconds = 1.0;
  UtilizationPollerOptions o = Options(false, true);
  o.interval_ms = 3600 * 1000;  // the thread never samples during the test
  UtilizationPoller p(std::move(o));
  p.Start();
  clock_us_ += 1000000;
  cpu_.process_cpu_seconds = 1.5;
  p.SampleOnce();
  p.Stop();
  p.Stop();
  EXPECT_DOUBLE_EQ(*p.Summary().cpu_util_mean, 50.0);
}

TEST(UtilizationParsersTest, NvidiaSmiOutput) {
  EXPECT_EQ(ParseNvidiaSmiUtilization("35\n45\n"), 40.0);
  EXPECT_EQ(ParseNvidiaSmiUtilization("0\n"), 0.0);
  EXPECT_EQ(ParseNvidiaSmiUtilization("[N/A]\n20\n\n"), 20.0);
  EXPECT_FALSE(ParseNvidiaSmiUtilization("No devices were found\n").has_value());
  EXPECT_FALSE(ParseNvidiaSmiUtilization("").has_value());
}

TEST(UtilizationParsersTest, ProcSelfStat) {
  // comm with spaces and parentheses; utime = 250, stime = 50 ticks.
  std::string stat = "1234 (my (odd) prog) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 4 0 100 0 0";
  EXPECT_DOUBLE_EQ(*ParseProcSelfStatCpuSeconds(stat, 100), 3.0);
  EXPECT_FALSE(ParseProcSelfStatCpuSeconds("garbage", 100).has_value());
}

TEST(UtilizationParsersTest, ProcStat) {
  std::string stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n";
  auto t = ParseProcStatCpuTicks(stat);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->first, 150u);
  EXPECT_EQ(t->second, 1000u);
  EXPECT_FALSE(ParseProcStatCpuTicks("intr 1 2 3\n").has_value());
}

TEST(UtilizationParsersTest, GpuDevicesFollowCudaVisibleDevices) {
  using V = std::vector<std::string>;
  EXPECT_EQ(GpuDevicesForShard(std::nullopt, 2), (V{"0", "1"}));
  EXPECT_EQ(GpuDevicesForShard(std::string("3, 5,,7"), 2), (V{"3", "5"}));
  EXPECT_EQ(GpuDevicesForShard(std::string("ALL"), 1), (V{"0"}));
  EXPECT_EQ(GpuDevicesForShard(std::string("NoDevFiles"), 0), (V{"0"}));
  EXPECT_EQ(GpuDevicesForShard(std::string(" , "), 2), (V{"0", "1"}));
  EXPECT_EQ(GpuDevicesForShard(std::string("GPU-abc"), 4), (V{"GPU-abc"}));
}

TEST(UtilizationParsersTest, NoDevicesMeansNoGpuSampler) { EXPECT_EQ(NewNvmlGpuSampler({}), nullptr); }

}  // namespace
}  // namespace mmirage

namespace mmirage {
namespace {

TEST_F(UtilizationPollerTest, TakeIntervalAveragesOnlyTheSamplesSinceTheLastCall) {
  UtilizationPoller p(Options());
  cpu_.process_cpu_seconds = 10;
  p.SampleOnce();                                       // CPU baseline
  EXPECT_FALSE(p.TakeInterval().gpu_util.has_value());  // nothing sampled on the GPU yet (the fake had none)
  gpu_samples_ = {20.0, 40.0};
  clock_us_ += 2000000;
  cpu_.process_cpu_seconds = 11;  // 1 s of CPU in 2 s: 50 %
  p.SampleOnce();
  p.SampleOnce();
  auto a = p.TakeInterval();
  ASSERT_TRUE(a.gpu_util.has_value());
  EXPECT_DOUBLE_EQ(*a.gpu_util, 30.0);
  ASSERT_TRUE(a.cpu_util.has_value());
  EXPECT_DOUBLE_EQ(*a.cpu_util, 50.0);
  gpu_samples_ = {90.0};
  clock_us_ += 1000000;
  cpu_.process_cpu_seconds = 13;  // 2 s of CPU in 1 s: 200 % (two busy threads)
  p.SampleOnce();
  auto b = p.TakeInterval();
  EXPECT_DOUBLE_EQ(*b.gpu_util, 90.0);
  EXPECT_DOUBLE_EQ(*b.cpu_util, 200.0);
  auto c = p.TakeInterval();  // nothing new
  EXPECT_FALSE(c.gpu_util.has_value());
  EXPECT_FALSE(c.cpu_util.has_value());
  // The whole-run summary is unaffected by the intervals.
  EXPECT_EQ(p.Summary().gpu_util_samples, 3);
  EXPECT_DOUBLE_EQ(*p.Summary().gpu_util_mean, 50.0);
}

}  // namespace
}  // namespace mmirage

#include "util/cpu_load.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace mmirage {
namespace {

TEST(CpuLoadTest, ThreadsAreTheCpusOthersLeaveFreeAndAtLeastOne) {
  EXPECT_EQ(ThreadsForIdleCpus(2, -1), 2);  // unknown: all
  EXPECT_EQ(ThreadsForIdleCpus(2, 0.0), 2);
  EXPECT_EQ(ThreadsForIdleCpus(2, 0.4), 2);
  EXPECT_EQ(ThreadsForIdleCpus(2, 0.6), 1);
  EXPECT_EQ(ThreadsForIdleCpus(2, 2.0), 1);  // never zero
  EXPECT_EQ(ThreadsForIdleCpus(16, 3.2), 13);
  EXPECT_EQ(ThreadsForIdleCpus(0, 0.0), 1);
}

TEST(CpuLoadTest, SamplesTooCloseOrUnreadableTellNothing) {
  CpuSample a, b;
  EXPECT_LT(OtherProcessesBusyCpus(a, b, 2), 0);  // not ok
  a.ok = b.ok = true;
  a.wall_micros = 1000000;
  b.wall_micros = 1010000;  // 10 ms
  a.total_ticks = 0;
  b.total_ticks = 100;
  EXPECT_LT(OtherProcessesBusyCpus(a, b, 2), 0);
}

TEST(CpuLoadTest, OwnCpuTimeIsNotCountedAsOthers) {
  CpuSample a, b;
  a.ok = b.ok = true;
  a.wall_micros = 0;
  b.wall_micros = 1000000;  // 1 s
  a.total_ticks = 0;
  b.total_ticks = 200;      // 2 CPUs x 100 ticks
  b.busy_ticks = 200;       // both busy...
  b.self_micros = 1000000;  // ...one of them with us
  EXPECT_NEAR(OtherProcessesBusyCpus(a, b, 2), 1.0, 1e-9);
  b.self_micros = 2000000;
  EXPECT_NEAR(OtherProcessesBusyCpus(a, b, 2), 0.0, 1e-9);
}

TEST(CpuLoadTest, RealCountersOnThisMachine) {
  ASSERT_GE(UsableCpus(), 1);
  const CpuSample a = SampleCpus();
  ASSERT_TRUE(a.ok) << "cannot read /proc/stat or getrusage";
  // Keep this process busy for 100 ms of its own CPU time: that use must not be counted as other processes'.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  volatile uint64_t x = 0;
  CpuSample b = SampleCpus();
  while (b.self_micros < a.self_micros + 100000 && std::chrono::steady_clock::now() < give_up) {
    for (int i = 0; i < 100000; ++i) x = x + 1;
    b = SampleCpus();
  }
  ASSERT_TRUE(b.ok);
  ASSERT_GE(b.self_micros, a.self_micros + 100000) << "this process got under 100 ms of CPU in 20 s";
  const double others = OtherProcessesBusyCpus(a, b, UsableCpus());
  EXPECT_GE(others, 0.0);
  EXPECT_LE(others, UsableCpus());
}

}  // namespace
}  // namespace mmirage

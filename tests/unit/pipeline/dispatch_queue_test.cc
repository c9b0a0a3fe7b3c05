#include "pipeline/dispatch_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mmirage::pipeline {
namespace {

std::vector<std::string> Drain(DispatchQueue* q) {
  std::vector<std::string> out;
  while (!q->empty()) out.push_back(q->Pop().prompt);
  return out;
}

TEST(DispatchQueueTest, InputOrderIsFirstInFirstOut) {
  DispatchQueue q(DispatchQueue::Order::kInput);
  for (const char* p : {"b1", "a1", "b2", "a2"}) q.Push({q.size(), 0, p});
  EXPECT_EQ(Drain(&q), (std::vector<std::string>{"b1", "a1", "b2", "a2"}));
}

TEST(DispatchQueueTest, PrefixOrderGroupsLeadingBytesAndKeepsArrivalOrderWithinAGroup) {
  DispatchQueue q(DispatchQueue::Order::kPrefix, 4);
  uint64_t seq = 0;
  // The first four bytes group; within a group rows go out by position, not by the rest of the prompt.
  for (const char* p : {"SYS2 z", "SYS1 y", "SYS2 a", "SYS1 b", "SYS2 m"}) q.Push({seq++, 0, p});
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(Drain(&q), (std::vector<std::string>{"SYS1 y", "SYS1 b", "SYS2 z", "SYS2 a", "SYS2 m"}));
}

TEST(DispatchQueueTest, TheSweepFinishesAGroupThenMovesOnAndWrapsAround) {
  DispatchQueue q(DispatchQueue::Order::kPrefix, 1);
  q.Push({0, 0, "A"});
  q.Push({1, 0, "B"});
  EXPECT_EQ(q.Pop().seq, 0u);
  q.Push({2, 0, "A"});  // joins the group being sent: it goes before B
  q.Push({3, 0, "0"});  // sorts first: it waits for the sweep to wrap around
  EXPECT_EQ(q.Pop().seq, 2u);
  EXPECT_EQ(q.Pop().seq, 1u);
  EXPECT_EQ(q.Pop().seq, 3u);
  EXPECT_TRUE(q.empty());
}

TEST(DispatchQueueTest, DifferentOutputsNeverShareAGroup) {
  DispatchQueue q(DispatchQueue::Order::kPrefix);
  q.Push({0, 1, "same"});
  q.Push({1, 0, "same"});
  q.Push({2, 1, "same"});
  DispatchQueue::Item first = q.Pop();
  EXPECT_EQ(first.output, 0u);
  EXPECT_EQ(first.seq, 1u);
  EXPECT_EQ(q.Pop().seq, 0u);
  EXPECT_EQ(q.Pop().seq, 2u);
}

}  // namespace
}  // namespace mmirage::pipeline

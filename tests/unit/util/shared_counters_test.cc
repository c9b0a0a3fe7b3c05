#include "util/shared_counters.h"

#include <gtest/gtest.h>

#include "support/test_util.h"
#include "util/env.h"

namespace mmirage {
namespace {

using testing::TempDir;

TEST(SharedCountersTest, UpdatesRoundTripThroughTheFile) {
  TempDir d;
  auto a = NewFileSharedCounters(d.Path("budget"));
  auto b = NewFileSharedCounters(d.Path("budget"));  // another process, as far as the file knows
  ASSERT_TRUE(a->Update([](SharedCounters::Map* m) {
                 (*m)["requests.last_us"] = 1734567890123456.0;
                 (*m)["cost.spent"] = 0.125;
               }).ok());
  SharedCounters::Map seen;
  ASSERT_TRUE(b->Update([&](SharedCounters::Map* m) {
                 seen = *m;
                 (*m)["cost.spent"] += 1;
               }).ok());
  EXPECT_EQ(CounterOr(seen, "requests.last_us", 0), 1734567890123456.0);  // microsecond clocks survive exactly
  EXPECT_EQ(CounterOr(seen, "cost.spent", 0), 0.125);
  EXPECT_EQ(CounterOr(seen, "absent", -1), -1);
  ASSERT_TRUE(a->Update([&](SharedCounters::Map* m) { seen = *m; }).ok());
  EXPECT_EQ(CounterOr(seen, "cost.spent", 0), 1.125);
}

TEST(SharedCountersTest, AnUnreadableFileStartsAfresh) {
  TempDir d;
  testing::WriteFile(d.Path("budget"), "requests.level twelve\n");
  auto a = NewFileSharedCounters(d.Path("budget"));
  SharedCounters::Map seen{{"x", 1}};
  ASSERT_TRUE(a->Update([&](SharedCounters::Map* m) {
                 seen = *m;
                 (*m)["requests.level"] = 3;
               }).ok());
  EXPECT_TRUE(seen.empty());
  std::string text = testing::ReadFile(d.Path("budget"));
  EXPECT_EQ(text.rfind("requests.level 3\nend ", 0), 0u) << text;
}

// A process killed after writing a shorter map but before truncating the file leaves the old tail behind the end
// line; a write cut short leaves no valid end line. Neither is read as numbers.
TEST(SharedCountersTest, ATornWriteIsNeverReadAsNumbers) {
  TempDir d;
  auto a = NewFileSharedCounters(d.Path("budget"));
  ASSERT_TRUE(a->Update([](SharedCounters::Map* m) {
                 (*m)["cost.spent"] = 2;
                 (*m)["cost.zreserved"] = 123456;
               }).ok());
  std::string longer = testing::ReadFile(d.Path("budget"));
  ASSERT_TRUE(a->Update([](SharedCounters::Map* m) { m->erase("cost.zreserved"); }).ok());
  std::string shorter = testing::ReadFile(d.Path("budget"));
  ASSERT_LT(shorter.size(), longer.size());
  testing::WriteFile(d.Path("budget"), shorter + longer.substr(shorter.size()));  // not truncated
  SharedCounters::Map seen;
  ASSERT_TRUE(a->Update([&](SharedCounters::Map* m) { seen = *m; }).ok());
  EXPECT_EQ(seen, (SharedCounters::Map{{"cost.spent", 2}}));
  // Cut in the middle of the end line, and a value changed under an intact end line: unreadable, so afresh.
  for (std::string torn : {shorter.substr(0, shorter.size() - 5), "cost.spent 3" + shorter.substr(12)}) {
    testing::WriteFile(d.Path("budget"), torn);
    seen = {{"x", 1}};
    ASSERT_TRUE(a->Update([&](SharedCounters::Map* m) { seen = *m; }).ok());
    EXPECT_TRUE(seen.empty()) << torn;
  }
}

TEST(SharedCountersTest, AMissingDirectoryIsAnError) {
  TempDir d;
  auto a = NewFileSharedCounters(d.Path("no/such/dir/budget"));
  bool ran = false;
  Status s = a->Update([&](SharedCounters::Map*) { ran = true; });
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(ran);
  EXPECT_NE(s.message().find("no/such/dir"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace mmirage

// The timeline recorder's event source (fleet replica health): polled at each tick and at the end, each event
// written with its own time; nothing polled after End or after the source is cleared.
#include "pipeline/timeline_recorder.h"

#include <gtest/gtest.h>

#include "state/heartbeat.h"
#include "support/test_util.h"

namespace mmirage::pipeline {
namespace {

TimelineEntry ReplicaEvent(double t, const std::string& change) {
  TimelineEntry e;
  e.t = t;
  e.event = "replica";
  e.replica = 1;
  e.replica_name = "http://127.0.0.1:9/v1";
  e.change = change;
  return e;
}

TEST(TimelineRecorderTest, ReplicaEventsAreWrittenAtTicksAndAtTheEnd) {
  testing::TempDir d;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(ShardStateDir(d.path(), 0)).ok());
  TimelineRecorder::Options o;
  o.env = env;
  o.state_dir = d.path();
  o.attempt = 1;
  o.interval_seconds = 3600;  // no sample at the ticks: only the events
  TimelineRecorder rec(o);
  std::vector<TimelineEntry> queued = {ReplicaEvent(1700000000.25, "out")};
  int polls = 0;
  rec.SetEventSource([&] {
    ++polls;
    std::vector<TimelineEntry> out;
    out.swap(queued);
    return out;
  });
  rec.Tick();
  queued = {ReplicaEvent(1700000001.5, "back")};
  rec.End("success");
  rec.Tick();  // after End: not polled
  EXPECT_EQ(polls, 2);
  std::vector<TimelineEntry> tl = ReadTimeline(env, d.path(), 0);
  std::vector<std::string> replica_changes;
  for (const auto& e : tl) {
    if (e.event != "replica") continue;
    replica_changes.push_back(*e.change);
    EXPECT_EQ(e.attempt, 1);
    EXPECT_EQ(e.replica, 1);
  }
  EXPECT_EQ(replica_changes, (std::vector<std::string>{"out", "back"}));
  ASSERT_GE(tl.size(), 4u);
  EXPECT_DOUBLE_EQ(tl[1].t, 1700000000.25);  // its own time, not the tick's
  EXPECT_EQ(tl.back().event, "end");
}

TEST(TimelineRecorderTest, AClearedSourceIsNotPolled) {
  testing::TempDir d;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(ShardStateDir(d.path(), 0)).ok());
  TimelineRecorder::Options o;
  o.env = env;
  o.state_dir = d.path();
  o.attempt = 1;
  TimelineRecorder rec(o);
  int polls = 0;
  rec.SetEventSource([&] {
    ++polls;
    return std::vector<TimelineEntry>{};
  });
  rec.SetEventSource(nullptr);
  rec.Tick();
  rec.End("success");
  EXPECT_EQ(polls, 0);
}

}  // namespace
}  // namespace mmirage::pipeline

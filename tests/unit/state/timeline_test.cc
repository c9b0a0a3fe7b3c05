#include "state/timeline.h"

#include <gtest/gtest.h>

#include "support/counting_env.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

TimelineEntry Sample(double t, int64_t rows, int64_t out_tok, int64_t attempt = 1) {
  TimelineEntry e;
  e.t = t;
  e.attempt = attempt;
  e.rows = rows;
  e.out_tok = out_tok;
  return e;
}

TEST(TimelineTest, EntriesRoundTripThroughOneLine) {
  TimelineEntry e = Sample(1700000000.1234, 42, 900, 3);
  e.failed = 2;
  e.resumed = 10;
  e.in_tok = 1234;
  e.rows_per_sec = 3.14159;
  e.tok_per_sec = 88.88;
  e.gpu = 71.26;
  e.cpu = 99.94;
  e.in_flight = 7;
  std::string line = e.ToJsonLine();
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(line,
            "{\"t\":1700000000.123,\"attempt\":3,\"rows\":42,\"failed\":2,\"resumed\":10,\"in_tok\":1234,\"out_tok\":"
            "900,\"rows_per_sec\":3.14,\"tok_per_sec\":88.9,\"gpu\":71.3,\"cpu\":99.9,\"in_flight\":7}\n");
  auto back = TimelineEntry::FromJsonLine(line);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->attempt, 3);
  EXPECT_EQ(back->rows, 42);
  EXPECT_EQ(back->resumed, 10);
  EXPECT_TRUE(back->is_sample());
  EXPECT_DOUBLE_EQ(*back->gpu, 71.3);

  TimelineEntry end;
  end.t = 5;
  end.attempt = 1;
  end.event = "end";
  end.outcome = "failed";
  end.error = std::string(400, 'x');
  auto e2 = TimelineEntry::FromJsonLine(end.ToJsonLine());
  ASSERT_TRUE(e2.has_value());
  EXPECT_EQ(e2->event, "end");
  EXPECT_EQ(*e2->outcome, "failed");
  EXPECT_EQ(e2->error->size(), 303u);  // truncated
  EXPECT_FALSE(TimelineEntry::FromJsonLine("{\"attempt\":1}").has_value());
  EXPECT_FALSE(TimelineEntry::FromJsonLine("{\"t\":1,\"attempt\":1").has_value());
}

TEST(TimelineTest, ReplicaEventsRoundTrip) {
  TimelineEntry e;
  e.t = 1700000001.5;
  e.attempt = 2;
  e.event = "replica";
  e.replica = 1;
  e.replica_name = "http://127.0.0.1:8001/v1";
  e.change = "out";
  std::string line = e.ToJsonLine();
  EXPECT_EQ(line,
            "{\"t\":1700000001.5,\"attempt\":2,\"event\":\"replica\",\"replica\":1,\"name\":"
            "\"http://127.0.0.1:8001/v1\",\"change\":\"out\"}\n");
  auto back = TimelineEntry::FromJsonLine(line);
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->is_sample());
  EXPECT_EQ(back->replica, 1);
  EXPECT_EQ(back->replica_name, "http://127.0.0.1:8001/v1");
  EXPECT_EQ(back->change, "out");
  EXPECT_FALSE(TimelineEntry::FromJsonLine(Sample(1, 2, 3).ToJsonLine())->change.has_value());
}

TEST(TimelineTest, AdmissionSamplesRoundTrip) {
  TimelineEntry e = Sample(1700000000, 5, 50, 1);
  e.window = 12;
  e.rpm_limit = 600;
  e.tpm_limit = 40000.04;
  std::string line = e.ToJsonLine();
  EXPECT_NE(line.find("\"window\":12,\"rpm_limit\":600.0,\"tpm_limit\":40000.0}"), std::string::npos) << line;
  auto back = TimelineEntry::FromJsonLine(line);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->window, 12);
  EXPECT_EQ(back->rpm_limit, 600);
  EXPECT_DOUBLE_EQ(*back->tpm_limit, 40000);
  EXPECT_FALSE(TimelineEntry::FromJsonLine(Sample(1, 1, 1, 1).ToJsonLine())->window.has_value());
}

TEST(TimelineTest, WriterComputesIntervalRatesAndExcludesResumedRows) {
  testing::TempDir d;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(d.Path("shard_0")).ok());
  TimelineWriter w(env, d.path(), 0, 2);
  TimelineEntry start;
  start.t = 100;
  start.event = "start";
  ASSERT_TRUE(w.Append(start).ok());
  TimelineEntry loaded;
  loaded.t = 104;
  loaded.event = "loaded";
  ASSERT_TRUE(w.Append(loaded).ok());
  TimelineEntry s1 = Sample(114, 60, 500);
  s1.resumed = 50;  // 10 new rows in 10 s after the load
  ASSERT_TRUE(w.Append(s1).ok());
  TimelineEntry s2 = Sample(124, 90, 1500);
  s2.resumed = 50;
  ASSERT_TRUE(w.Append(s2).ok());
  auto tl = ReadTimeline(env, d.path(), 0);
  ASSERT_EQ(tl.size(), 4u);
  for (const auto& e : tl) EXPECT_EQ(e.attempt, 2);  // the writer's attempt
  EXPECT_DOUBLE_EQ(*tl[2].rows_per_sec, 1.0);
  EXPECT_DOUBLE_EQ(*tl[2].tok_per_sec, 50.0);
  EXPECT_DOUBLE_EQ(*tl[3].rows_per_sec, 3.0);
  EXPECT_DOUBLE_EQ(*tl[3].tok_per_sec, 100.0);
}

TEST(TimelineTest, ATornLastLineIsSkippedAndTheNextLineStaysWhole) {
  testing::TempDir d;
  Env* env = Env::Default();
  testing::WriteFile(d.Path("shard_0/timeline.jsonl"),
                     Sample(1, 1, 0).ToJsonLine() + "{\"t\":2,\"attempt\":1,\"ro");  // killed mid-write
  int64_t bad = 0;
  EXPECT_EQ(ReadTimeline(env, d.path(), 0, &bad).size(), 1u);
  EXPECT_EQ(bad, 1);
  TimelineWriter w(env, d.path(), 0, 2);
  ASSERT_TRUE(w.Append(Sample(3, 5, 0)).ok());
  bad = 0;
  auto tl = ReadTimeline(env, d.path(), 0, &bad);
  ASSERT_EQ(tl.size(), 2u);
  EXPECT_EQ(bad, 1);
  EXPECT_EQ(tl[1].attempt, 2);
  EXPECT_EQ(tl[1].rows, 5);
  EXPECT_TRUE(ReadTimeline(env, d.path(), 9).empty());  // missing file
}

TEST(TimelineTest, ThinningHalvesOldSamplesKeepsEventsAndRecomputesRates) {
  std::vector<TimelineEntry> tl;
  TimelineEntry start;
  start.t = 0;
  start.attempt = 1;
  start.event = "start";
  tl.push_back(start);
  for (int i = 1; i <= 100; ++i) tl.push_back(Sample(i * 10.0, i * 10, i * 100));  // 1 row/s, 10 tok/s
  TimelineEntry end;
  end.t = 1000;
  end.attempt = 1;
  end.event = "end";
  tl.push_back(end);
  ThinTimeline(&tl, 20);
  // 80 old samples: first kept, every other of the rest dropped; the newest 20 lines untouched.
  EXPECT_LT(tl.size(), 70u);
  EXPECT_GT(tl.size(), 55u);
  EXPECT_EQ(tl.front().event, "start");
  EXPECT_EQ(tl.back().event, "end");
  EXPECT_EQ(tl[1].rows, 10);  // first sample of the attempt kept
  for (size_t i = 2; i < tl.size(); ++i) {
    if (!tl[i].is_sample() || !tl[i - 1].is_sample()) continue;
    EXPECT_LT(tl[i - 1].t, tl[i].t);
    if (tl[i].rows_per_sec) {
      EXPECT_DOUBLE_EQ(*tl[i].rows_per_sec, 1.0) << i;  // recomputed over the longer interval
      EXPECT_DOUBLE_EQ(*tl[i].tok_per_sec, 10.0) << i;
    }
  }
  bool gap20 = false;
  for (size_t i = 2; i < tl.size(); ++i)
    gap20 |= tl[i].is_sample() && tl[i - 1].is_sample() && tl[i].t - tl[i - 1].t == 20;
  EXPECT_TRUE(gap20);
}

TEST(TimelineTest, AppendingNeverSyncsAndThinningSyncsOncePerRewrite) {
  testing::TempDir d;
  testing::CountingEnv env;  // counts fsyncs of files and directories
  ASSERT_TRUE(env.CreateDirs(d.Path("shard_0")).ok());
  TimelineOptions o;
  o.max_lines = 400;
  o.keep_recent = 100;
  TimelineWriter w(&env, d.path(), 0, 1, o);
  for (int i = 1; i <= 400; ++i) ASSERT_TRUE(w.Append(Sample(i * 10.0, i, 0)).ok());
  EXPECT_EQ(env.syncs(), 0);                         // 400 lines, no fsync
  ASSERT_TRUE(w.Append(Sample(4010, 401, 0)).ok());  // line 401: one thinning = one atomic replace
  EXPECT_GE(env.syncs(), 1);
  EXPECT_LE(env.syncs(), 2);  // the file and its directory
  EXPECT_LE(testing::ReadLines(d.Path("shard_0/timeline.jsonl")).size(), 300u);
}

TEST(TimelineTest, WriterKeepsTheFileBounded) {
  testing::TempDir d;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(d.Path("shard_0")).ok());
  TimelineOptions o;
  o.max_lines = 200;
  o.keep_recent = 50;
  TimelineWriter w(env, d.path(), 0, 1, o);
  TimelineEntry start;
  start.t = 1;
  start.event = "start";
  ASSERT_TRUE(w.Append(start).ok());
  for (int i = 1; i <= 2000; ++i) ASSERT_TRUE(w.Append(Sample(1 + i * 10.0, i, 0)).ok());
  auto lines = testing::ReadLines(d.Path("shard_0/timeline.jsonl"));
  EXPECT_LE(lines.size(), 200u);
  EXPECT_GE(lines.size(), 100u);
  auto tl = ReadTimeline(env, d.path(), 0);
  ASSERT_EQ(tl.size(), lines.size());
  EXPECT_EQ(tl.front().event, "start");
  EXPECT_EQ(tl.back().rows, 2000);  // the newest samples are all there
  EXPECT_EQ(tl[tl.size() - 2].rows, 1999);
  // Old samples are sparser than new ones: the series still covers the whole run.
  EXPECT_EQ(tl[1].rows, 1);
}

}  // namespace
}  // namespace mmirage

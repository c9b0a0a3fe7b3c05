// Each rule of the tuning advice fires on a crafted run, names its evidence, and stays quiet on a healthy one.
#include "stats/advice.h"

#include <gtest/gtest.h>

#include "stats/aggregate.h"

namespace mmirage {
namespace {

TimelineEntry Event(double t, const std::string& ev, int64_t attempt = 1) {
  TimelineEntry e;
  e.t = t;
  e.attempt = attempt;
  e.event = ev;
  return e;
}

// A shard that loads its model in `load` s, then produces `rate` rows/s for `secs` seconds, sampled every 10 s.
ShardReport Shard(int64_t id, double start, double load, double secs, double rate, std::optional<double> gpu = {},
                  int64_t in_flight = 8, int64_t capacity = 8) {
  ShardReport s;
  s.shard_id = id;
  s.record.shard_id = id;
  s.record.status = ShardStatus::kSuccess;
  s.record.retry_count = 1;
  s.timeline.push_back(Event(start, "start"));
  TimelineEntry l = Event(start + load, "loaded");
  l.capacity = capacity;
  l.load_seconds = load;
  s.timeline.push_back(l);
  for (double t = 10; t <= secs + 1e-9; t += 10) {
    TimelineEntry e;
    e.t = start + load + t;
    e.attempt = 1;
    e.rows = static_cast<int64_t>(rate * t);
    e.out_tok = e.rows * 100;
    e.gpu = gpu;
    e.in_flight = in_flight;
    s.timeline.push_back(e);
  }
  TimelineEntry end = Event(start + load + secs, "end");
  end.outcome = "success";
  s.timeline.push_back(end);
  ShardStats st;
  st.runtime_seconds = load + secs;
  st.model_load_seconds = load;
  st.rows_processed = static_cast<int64_t>(rate * secs);
  st.output_tokens = st.rows_processed * 100;
  st.input_tokens = st.rows_processed * 50;
  st.num_gpus = gpu ? 1 : 0;
  s.stats = st;
  s.usage = UsageSummary{st.rows_processed, *st.input_tokens, *st.output_tokens};
  s.attempts = AttemptsFromTimeline(s.timeline, s.record, start + load + secs);
  return s;
}

RunReport MakeRun(std::vector<ShardReport> shards) {
  RunReport r;
  r.num_shards = static_cast<int64_t>(shards.size());
  r.shards = std::move(shards);
  std::vector<ShardStatsInput> in;
  for (const auto& s : r.shards) {
    ShardStatsInput i;
    i.shard_id = s.shard_id;
    i.status = s.record.status;
    i.stats = s.stats;
    i.started_at_seconds = s.attempts.empty() ? 0 : s.attempts.front().start;
    i.finished_at_seconds = s.attempts.empty() ? 0 : s.attempts.back().end;
    if (s.stats) {
      // The aggregate's GPU mean comes from the shards' stats.
      double sum = 0;
      int n = 0;
      for (const auto& e : s.timeline)
        if (e.gpu) sum += *e.gpu, ++n;
      if (n) i.stats->gpu_util_mean = sum / n, i.stats->gpu_util_samples = n;
    }
    in.push_back(i);
  }
  r.aggregate = AggregateStats(in, r.num_shards);
  r.knobs.batch_size = 16;
  r.knobs.max_new_tokens = 512;
  return r;
}

const Advice* Find(const std::vector<Advice>& a, const std::string& rule) {
  for (const auto& x : a)
    if (x.rule == rule) return &x;
  return nullptr;
}

TEST(AdviceTest, AHealthyRunGetsNoWarning) {
  auto a = ComputeAdvice(
      MakeRun({Shard(0, 0, 2, 600, 40, 92.0), Shard(1, 0, 2, 610, 40, 90.0), Shard(2, 0, 2, 590, 40, 91.0)}));
  for (const auto& x : a) EXPECT_NE(x.level, "warn") << x.rule << ": " << x.message;
  EXPECT_EQ(FormatAdviceText({}), "Advice: none (no rule of the tuning table fired)\n");
}

TEST(AdviceTest, LowGpuUtilWithFewRequestsInFlightRaisesBatchSize) {
  auto a = ComputeAdvice(
      MakeRun({Shard(0, 0, 2, 300, 5, 35.0, /*in_flight=*/2, /*capacity=*/16), Shard(1, 0, 2, 300, 5, 45.0, 2, 16)}));
  const Advice* x = Find(a, "gpu_util_low");
  ASSERT_NE(x, nullptr);
  EXPECT_NE(x->message.find("batch_size (now 16)"), std::string::npos) << x->message;
  EXPECT_NE(x->evidence.find("mean GPU utilisation 40.0 %"), std::string::npos) << x->evidence;
  EXPECT_NE(x->evidence.find("mean requests in flight 2.0 for 16 engine slots"), std::string::npos) << x->evidence;
  EXPECT_NE(FormatAdviceText(a).find("evidence: mean GPU utilisation 40.0 %"), std::string::npos);
}

TEST(AdviceTest, LowGpuUtilWithFullSlotsRaisesMaxRunningRequests) {
  auto a = ComputeAdvice(MakeRun({Shard(0, 0, 2, 300, 5, 50.0, /*in_flight=*/40, /*capacity=*/8)}));
  const Advice* x = Find(a, "gpu_util_low");
  ASSERT_NE(x, nullptr);
  EXPECT_NE(x->message.find("raise max_running_requests (now 8"), std::string::npos) << x->message;
  // Above the threshold: nothing.
  EXPECT_EQ(Find(ComputeAdvice(MakeRun({Shard(0, 0, 2, 300, 5, 75.0, 40, 8)})), "gpu_util_low"), nullptr);
}

TEST(AdviceTest, GpusWithoutSamplesAskForStats) {
  ShardReport s = Shard(0, 0, 2, 100, 5);
  s.stats->num_gpus = 2;
  auto a = ComputeAdvice(MakeRun({s}));
  ASSERT_NE(Find(a, "gpu_not_sampled"), nullptr);
  EXPECT_EQ(Find(a, "gpu_util_low"), nullptr);
}

TEST(AdviceTest, AStretchWithoutRowsAfterTheLoadPointsAtIo) {
  ShardReport s = Shard(0, 0, 2, 300, 5);
  // Rows stop between t=102 and t=192: the samples keep coming with the same row count.
  for (auto& e : s.timeline) {
    if (e.is_sample() && e.t > 102 && e.t <= 192) e.rows = 500, e.out_tok = 50000;
  }
  auto a = ComputeAdvice(MakeRun({s, Shard(1, 0, 2, 300, 5)}));
  const Advice* x = Find(a, "stall");
  ASSERT_NE(x, nullptr);
  EXPECT_NE(x->message.find("I/O"), std::string::npos) << x->message;
  EXPECT_NE(x->evidence.find("shard 0 attempt 1: no new rows or tokens for 90 s after the model was loaded"),
            std::string::npos)
      << x->evidence;
}

TEST(AdviceTest, RowsHeldBackWhileTokensFlowAreNoStall) {
  ShardReport s = Shard(0, 0, 2, 300, 5);
  for (auto& e : s.timeline) {
    if (e.is_sample() && e.t > 102 && e.t <= 192) e.rows = 500;  // the reorder buffer holds rows; tokens go on
  }
  auto all = ComputeAdvice(MakeRun({s}));
  EXPECT_EQ(Find(all, "stall"), nullptr);
}

TEST(AdviceTest, AHoleInTheSamplesIsAStallToo) {
  ShardReport s = Shard(0, 0, 2, 300, 5);
  std::vector<TimelineEntry> kept;
  for (auto& e : s.timeline)
    if (!(e.is_sample() && e.t > 50 && e.t < 150)) kept.push_back(e);  // no sample for 110 s
  s.timeline = kept;
  auto all = ComputeAdvice(MakeRun({s}));
  const Advice* x = Find(all, "stall");
  ASSERT_NE(x, nullptr);
  EXPECT_NE(x->evidence.find("no new rows or tokens for 110 s"), std::string::npos) << x->evidence;
}

TEST(AdviceTest, ABusyMachineWithAStarvedWorkerIsCpuContention) {
  ShardReport s = Shard(0, 0, 2, 300, 5);
  s.stats->machine_cpu_util_mean = 100;
  s.stats->cpu_util_mean = 31;
  for (auto& e : s.timeline)
    if (e.is_sample() && e.t > 102 && e.t <= 192) e.rows = 500, e.out_tok = 50000;  // and a stall
  auto all = ComputeAdvice(MakeRun({s}));
  const Advice* x = Find(all, "cpu_contention");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->evidence, "shard 0: machine CPU 100.0 %, mmirage 31.0 % of a core");
  const Advice* stall = Find(all, "stall");
  ASSERT_NE(stall, nullptr);
  EXPECT_NE(stall->evidence.find("saturated meanwhile"), std::string::npos) << stall->evidence;
  // A busy machine where mmirage has its core is not contention.
  s.stats->cpu_util_mean = 180;
  auto ok = ComputeAdvice(MakeRun({s}));
  EXPECT_EQ(Find(ok, "cpu_contention"), nullptr);
}

TEST(AdviceTest, ALongModelLoadIsNamed) {
  auto a = ComputeAdvice(MakeRun({Shard(0, 0, 120, 200, 5), Shard(1, 0, 110, 200, 5)}));
  const Advice* stall = Find(a, "stall");
  ASSERT_NE(stall, nullptr);
  EXPECT_NE(stall->evidence.find("no new rows or tokens for 120 s before the model was loaded"), std::string::npos)
      << stall->evidence;
  const Advice* load = Find(a, "model_load");
  ASSERT_NE(load, nullptr);
  EXPECT_NE(load->evidence.find("model load 230 s of 630 s shard runtime (36.5 %)"), std::string::npos)
      << load->evidence;
}

TEST(AdviceTest, OneShardAtOneAndAHalfTimesTheMedianIsSkewExplainedByOutputLength) {
  ShardReport slow = Shard(2, 0, 2, 1000, 5);  // same rows/s window but 2x the time
  slow.stats->rows_processed = 3000;
  slow.usage = UsageSummary{3000, 3000 * 50, 3000 * 300};  // 3x the output tokens per row
  auto a = ComputeAdvice(MakeRun({Shard(0, 0, 2, 500, 6), Shard(1, 0, 2, 520, 6), slow}));
  const Advice* x = Find(a, "shard_skew");
  ASSERT_NE(x, nullptr);
  EXPECT_NE(x->message.find("Dataset skew"), std::string::npos);
  EXPECT_NE(x->message.find("max_new_tokens (now 512)"), std::string::npos) << x->message;
  EXPECT_NE(x->evidence.find("shard 2 took 1000 s, 1.92x the median 520 s"), std::string::npos) << x->evidence;
  EXPECT_NE(x->evidence.find("3.00x the median output tokens per row"), std::string::npos) << x->evidence;
  SkewSummary k = ComputeSkew(MakeRun({Shard(0, 0, 2, 500, 6), Shard(1, 0, 2, 520, 6), slow}));
  EXPECT_EQ(k.slowest_shard, 2);
  ASSERT_TRUE(k.cv.has_value());
  EXPECT_GT(*k.cv, 0.3);
  // Below 1.5x: quiet.
  EXPECT_EQ(Find(ComputeAdvice(MakeRun({Shard(0, 0, 2, 500, 6), Shard(1, 0, 2, 700, 6)})), "shard_skew"), nullptr);
}

TEST(AdviceTest, SkewWithoutLongerDataPointsAtTheNode) {
  ShardReport slow = Shard(1, 0, 2, 900, 5);
  slow.stats->rows_processed = 2500;
  slow.usage = UsageSummary{2500, 2500 * 50, 2500 * 100};
  ShardReport a0 = Shard(0, 0, 2, 500, 5);
  a0.stats->rows_processed = 2500;
  a0.usage = slow.usage;
  ShardReport a2 = Shard(2, 0, 2, 480, 5);
  a2.stats->rows_processed = 2500;
  a2.usage = slow.usage;
  auto all = ComputeAdvice(MakeRun({a0, slow, a2}));
  const Advice* x = Find(all, "shard_skew");
  ASSERT_NE(x, nullptr);
  EXPECT_NE(x->message.find("check its node"), std::string::npos) << x->message;
}

TEST(AdviceTest, OutOfMemoryAndKvFullErrorsAskForSmallerBatches) {
  ShardReport s = Shard(0, 0, 2, 100, 5);
  CountError("CUDA error: out of memory", &s.errors);
  CountError("the KV cache is full (1024 tokens)", &s.errors);
  CountError("template error", &s.errors);
  EXPECT_EQ(s.errors.out_of_memory, 1);
  EXPECT_EQ(s.errors.kv_cache_full, 1);
  EXPECT_EQ(s.errors.other, 1);
  auto all = ComputeAdvice(MakeRun({s}));
  const Advice* x = Find(all, "memory_pressure");
  ASSERT_NE(x, nullptr);
  EXPECT_NE(x->message.find("reduce loading_params.batch_size (now 16)"), std::string::npos) << x->message;
  EXPECT_NE(x->message.find("max_new_tokens (now 512)"), std::string::npos) << x->message;
  EXPECT_NE(x->evidence.find("1 out-of-memory and 1 KV-cache-full error(s) in shard(s) 0"), std::string::npos)
      << x->evidence;
  EXPECT_NE(x->evidence.find("CUDA error: out of memory"), std::string::npos);
}

TEST(AdviceTest, LowTokensPerGpuAndLostAttempts) {
  ShardReport s = Shard(0, 0, 2, 100, 1, 90.0);  // 100 tok/s on 1 GPU
  TimelineEntry killed = Event(-50, "start", 0);
  s.timeline.insert(s.timeline.begin(), killed);
  s.attempts = AttemptsFromTimeline(s.timeline, s.record, 200);
  ASSERT_EQ(s.attempts.size(), 2u);
  EXPECT_EQ(s.attempts[0].outcome, "killed");
  auto a = ComputeAdvice(MakeRun({s}));
  const Advice* t = Find(a, "tokens_per_gpu_low");
  ASSERT_NE(t, nullptr);
  EXPECT_NE(t->evidence.find("tokens_per_sec_per_gpu 100.00"), std::string::npos) << t->evidence;
  const Advice* l = Find(a, "attempts_lost");
  ASSERT_NE(l, nullptr);
  EXPECT_NE(l->evidence.find("shard 0 #0 killed"), std::string::npos) << l->evidence;
}

TEST(AdviceTest, AttemptsComeFromTheTimelineOrFromStatusJson) {
  ShardRecord rec;
  rec.status = ShardStatus::kRunning;
  rec.retry_count = 2;
  std::vector<TimelineEntry> tl = {Event(10, "start", 1), Event(20, "end", 1), Event(30, "start", 2)};
  tl[1].outcome = "interrupted";
  TimelineEntry s;
  s.t = 40;
  s.attempt = 2;
  tl.push_back(s);
  auto a = AttemptsFromTimeline(tl, rec, 100);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].outcome, "interrupted");
  EXPECT_DOUBLE_EQ(a[0].end, 20);
  EXPECT_EQ(a[1].outcome, "running");
  EXPECT_DOUBLE_EQ(a[1].end, 100);
  rec.status = ShardStatus::kFailed;
  rec.started_at = "2026-01-02T03:04:05";
  rec.finished_at = "2026-01-02T03:04:15";
  rec.error = "boom";
  rec.slurm_job_id = "77";
  auto b = AttemptsFromTimeline({}, rec, 0);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].outcome, "failed");
  EXPECT_DOUBLE_EQ(b[0].end - b[0].start, 10);
  EXPECT_EQ(*b[0].slurm_job_id, "77");
}

// Without a timeline, an attempt is interrupted when the state says so (attempts.log), whatever its error reads.
TEST(AdviceTest, AnAttemptWithoutATimelineIsInterruptedWhenTheRecordSaysSo) {
  ShardRecord rec;
  rec.status = ShardStatus::kFailed;
  rec.retry_count = 1;
  rec.started_at = "2026-01-02T03:04:05";
  rec.finished_at = "2026-01-02T03:04:15";
  rec.error = "connection interrupted by peer";
  auto a = AttemptsFromTimeline({}, rec, 0);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].outcome, "failed");
  rec.error = "stopped";
  rec.last_attempt_interrupted = true;
  a = AttemptsFromTimeline({}, rec, 0);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].outcome, "interrupted");
}

}  // namespace
}  // namespace mmirage

// The HTML page: every section, every aggregate value in its cell, text escaped, odd data rendered without a crash.
// (Full HTML/SVG parsing and a browser render are in tests/e2e/stats_html_test.cc.)
#include "stats/report_html.h"

#include <gtest/gtest.h>

#include "data/json.h"
#include "stats/aggregate.h"
#include "stats/report_svg.h"

namespace mmirage {
namespace {

size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TimelineEntry E(double t, int64_t attempt, const std::string& ev = "") {
  TimelineEntry e;
  e.t = t;
  e.attempt = attempt;
  e.event = ev;
  return e;
}

RunReport TwoShards() {
  RunReport r;
  r.config_path = "cfg <1>.yaml";
  r.num_shards = 2;
  r.generated_at = 1700000000;
  for (int id = 0; id < 2; ++id) {
    ShardReport s;
    s.shard_id = id;
    s.record.status = ShardStatus::kSuccess;
    s.record.retry_count = id + 1;
    s.record.hostname = "node-" + std::to_string(id);
    s.timeline.push_back(E(1000, 1, "start"));
    s.timeline.back().slurm_job_id = "4242";
    s.timeline.push_back(E(1005, 1, "loaded"));
    for (int k = 1; k <= 6; ++k) {
      TimelineEntry x = E(1005 + 10 * k, 1);
      x.rows = 10 * k;
      x.out_tok = 500 * k;
      x.gpu = 50 + k;
      x.cpu = 90;
      x.in_flight = 4;
      s.timeline.push_back(x);
    }
    TimelineEntry end = E(1065, 1, "end");
    end.outcome = id == 1 ? "failed" : "success";
    end.error = "boom <script>alert('x')</script> & \"quotes\"";
    s.timeline.push_back(end);
    if (id == 1) {
      s.timeline.push_back(E(1070, 2, "start"));
      TimelineEntry x = E(1080, 2);
      x.rows = 60;
      x.resumed = 60;
      s.timeline.push_back(x);
      TimelineEntry e2 = E(1081, 2, "end");
      e2.outcome = "success";
      s.timeline.push_back(e2);
    }
    s.attempts = AttemptsFromTimeline(s.timeline, s.record, 2000);
    ShardStats st;
    st.runtime_seconds = 65;
    st.model_load_seconds = 5;
    st.rows_processed = 60;
    st.output_tokens = 3000;
    st.input_tokens = 1200;
    st.num_gpus = 1;
    st.gpu_util_mean = 53;
    s.stats = st;
    s.usage = UsageSummary{60, 1200, 3000};
    r.shards.push_back(s);
  }
  std::vector<ShardStatsInput> in;
  for (const auto& s : r.shards) {
    ShardStatsInput i;
    i.shard_id = s.shard_id;
    i.status = ShardStatus::kSuccess;
    i.stats = s.stats;
    i.started_at_seconds = 1000;
    i.finished_at_seconds = 1081;
    in.push_back(i);
  }
  r.aggregate = AggregateStats(in, 2);
  return r;
}

TEST(ReportHtmlTest, HasEverySectionAndEveryAggregateValue) {
  RunReport r = TwoShards();
  std::string h = RenderHtmlReport(r, ComputeAdvice(r));
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id : {"advice", "timeline", "throughput", "utilisation", "per-shard", "skew", "metrics"})
    EXPECT_NE(h.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  for (const auto& [k, v] : r.aggregate.as_object()) {
    std::string want = v.is_null() ? "\xE2\x80\x94" : v.is_string() ? v.as_string() : ToJson(v);
    EXPECT_NE(h.find("data-key=\"" + k + "\">" + want + "<"), std::string::npos) << k << " = " << want;
  }
  EXPECT_NE(h.find("tok/s/GPU"), std::string::npos);
  EXPECT_EQ(Count(h, "<svg"), Count(h, "</svg>"));
  EXPECT_GE(Count(h, "<svg"), 5u);  // timeline, rows/s, tok/s, GPU, CPU, bars
  EXPECT_NE(h.find("data-outcome=\"failed\""), std::string::npos);
  EXPECT_NE(h.find("SLURM job 4242"), std::string::npos);
  EXPECT_NE(h.find("data-rule=\"gpu_util_low\""), std::string::npos);  // 53 % mean
  // Self-contained.
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(h.find("src="), std::string::npos);
  EXPECT_EQ(h.find("href="), std::string::npos);
  EXPECT_EQ(h.find("url("), std::string::npos);
  // Text from the state directory is escaped.
  EXPECT_NE(h.find("boom &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quotes&quot;"), std::string::npos);
  EXPECT_NE(h.find("cfg &lt;1&gt;.yaml"), std::string::npos);
}

TEST(ReportHtmlTest, ReplicaEventsAreMarkedOnTheirShardsLane) {
  RunReport r = TwoShards();
  auto& tl = r.shards[1].timeline;
  for (auto [t, change] : {std::pair<double, const char*>{1020, "out"}, {1030, "restarted"}, {1040, "gave_up"}}) {
    TimelineEntry e = E(t, 1, "replica");
    e.replica = 2;
    e.replica_name = "replica 2 <GPUs 4,5>";
    e.change = change;
    tl.insert(tl.end() - 4, e);
  }
  std::string h = RenderHtmlReport(r, ComputeAdvice(r));
  EXPECT_EQ(Count(h, "<g class=\"replica\""), 3u);
  EXPECT_EQ(Count(h, "data-change=\"out\""), 1u);
  EXPECT_EQ(Count(h, "data-change=\"restarted\""), 1u);
  EXPECT_EQ(Count(h, "data-change=\"gave_up\""), 1u);
  EXPECT_NE(h.find("replica 2 &lt;GPUs 4,5&gt;: out at +20s"), std::string::npos);
  EXPECT_EQ(Count(h, "<svg"), Count(h, "</svg>"));
  // Drawn on shard 1's lane (the second), not shard 0's: below the first lane's bottom.
  report_svg::Frame f;
  f.t0 = 1000;
  f.span = 100;
  std::string marks = report_svg::ReplicaMarks(tl, f, 38, 30);
  EXPECT_EQ(Count(marks, "<g class=\"replica\""), 3u);
  EXPECT_NE(marks.find(" 41.0 L"), std::string::npos) << marks;  // an "out" triangle's base at the lane's top + 3
  EXPECT_NE(marks.find(" 65.0 L"), std::string::npos) << marks;  // a "restarted" one's base at the bottom - 3
  EXPECT_TRUE(report_svg::ReplicaMarks(r.shards[0].timeline, f, 8, 30).empty());
}

TEST(ReportHtmlTest, HostedRunsShowCostPerShardAndTotalAndTheAdmissionOverTime) {
  RunReport plain = TwoShards();
  EXPECT_EQ(RenderHtmlReport(plain, {}).find("id=\"hosted\""), std::string::npos);  // no hosted API: no section
  RunReport r = TwoShards();
  std::vector<ShardStatsInput> in;
  for (auto& s : r.shards) {
    s.stats->cost_usd = 0.25 + static_cast<double>(s.shard_id);
    for (auto& e : s.timeline) {
      if (!e.is_sample()) continue;
      e.window = 8 + s.shard_id;
      e.rpm_limit = 600;
    }
    ShardStatsInput i;
    i.shard_id = s.shard_id;
    i.status = ShardStatus::kSuccess;
    i.stats = s.stats;
    i.started_at_seconds = 1000;
    i.finished_at_seconds = 1081;
    in.push_back(i);
  }
  r.aggregate = AggregateStats(in, 2);
  std::string h = RenderHtmlReport(r, {});
  size_t at = h.find("id=\"hosted\"");
  ASSERT_NE(at, std::string::npos);
  std::string sec = h.substr(at, h.find("</section>", at) - at);
  EXPECT_NE(sec.find("<td>shard 0</td><td class=\"val\">0.25</td>"), std::string::npos) << sec;
  EXPECT_NE(sec.find("<td>shard 1</td><td class=\"val\">1.25</td>"), std::string::npos) << sec;
  EXPECT_NE(sec.find("data-key=\"total_cost_usd\">1.5<"), std::string::npos) << sec;
  EXPECT_NE(sec.find("concurrency window"), std::string::npos);
  EXPECT_NE(sec.find("requests/minute limit in force"), std::string::npos);
  EXPECT_EQ(sec.find("tokens/minute limit in force"), std::string::npos);  // never known: no chart
  EXPECT_EQ(Count(sec, "<path class=\"line\""), 4u);                       // 2 charts x 2 shards
  EXPECT_EQ(Count(h, "<svg"), Count(h, "</svg>"));
}

TEST(ReportHtmlTest, EmptyAndOddRunsRenderWithoutCrashing) {
  RunReport empty;
  empty.aggregate = AggregateStats({}, 0);
  std::string h = RenderHtmlReport(empty, {});
  EXPECT_NE(h.find("No attempt recorded yet"), std::string::npos);
  EXPECT_NE(h.find("No rule of the tuning table fired"), std::string::npos);

  RunReport odd = TwoShards();
  // Entries out of order, an end before its start, a sample far in the future, negative and huge values.
  auto& tl = odd.shards[0].timeline;
  tl.push_back(E(900, 7, "end"));
  tl.push_back(E(5e9, 8));
  tl.back().rows = -5;
  tl.back().gpu = 1e12;
  tl.push_back(E(-1, 9, "loaded"));
  odd.shards[0].attempts = AttemptsFromTimeline(tl, odd.shards[0].record, 0);
  ShardReport bare;  // no timeline, no stats
  bare.shard_id = 2;
  bare.record.status = ShardStatus::kMissing;
  odd.shards.push_back(bare);
  std::string o = RenderHtmlReport(odd, ComputeAdvice(odd));
  EXPECT_EQ(Count(o, "<svg"), Count(o, "</svg>"));
  EXPECT_NE(o.find("</html>"), std::string::npos);
  EXPECT_EQ(o.find("nan"), std::string::npos);
  EXPECT_EQ(o.find("inf\""), std::string::npos);
}

}  // namespace
}  // namespace mmirage

// The Ray run loop with a scripted Jobs API (a real Ray head is exercised by tests/e2e/ray_test.cc): the job's
// entrypoint and metadata, resubmission of the failed shards alone, reattachment, an unreachable dashboard, and a
// stop signal stopping the job.
#include "exec/ray_run.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <functional>

#include "data/json.h"
#include "state/shard_state.h"
#include "support/test_util.h"
#include "util/signals.h"

namespace mmirage::exec {
namespace {

class RayRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(dir_.Path("data.jsonl"), "{\"a\":1}\n{\"a\":2}\n");
    testing::WriteFile(dir_.Path("bundle/bin/mmirage"), "");
    testing::WriteFile(dir_.Path("bundle/share/mmirage/ray_driver.py"), "");
    Reload("    num_gpus: 1\n    memory: 2GiB\n    max_parallel: 3\n    runtime_env: {env_vars: {X: y}}\n");
  }

  // config_ with `ray_keys` (indented by four) below `address` in the ray block, and `num_shards` shards.
  void Reload(const std::string& ray_keys, int num_shards = 2, const std::string& state = "state") {
    state_ = dir_.Path(state);
    std::string yaml = "processors: []\nloading_params:\n  datasets: [{type: JSONL, path: " + dir_.Path("data.jsonl") +
                       ", output_dir: " + dir_.Path("out") + "}]\n  state_dir: " + state_ +
                       "\n  num_shards: " + std::to_string(num_shards) +
                       "\nprocessing_params:\n  inputs: [{name: a, key: a}]\n  outputs: []\n"
                       "  output_schema: {a: \"{{ a }}\"}\nexecution_params:\n  mode: ray\n  retry: true\n"
                       "  max_retries: 2\n  poll_interval_seconds: 1\n  ray:\n    address: http://head:8265\n" +
                       ray_keys;
    auto c = config::LoadConfigFromString(yaml, dir_.Path("cfg.yaml"));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    config_ = std::move(*c);
  }

  // POST /api/jobs/ records the body and calls on_submit(n); GET /api/jobs/<id> answers job_status(id);
  // GET /api/jobs/ answers `live_jobs`; POST .../stop is recorded.
  RayOptions Options() {
    RayOptions o;
    o.config = &config_;
    o.cwd = dir_.path();
    o.self_exe = dir_.Path("bundle/bin/mmirage");
    o.auto_retry = true;
    o.http = [this](const HttpRequest& req) {
      HttpResponse r;
      r.status_code = 200;
      calls_.push_back(req.method + " " + req.url);
      if (req.method == "POST" && req.url == "http://head:8265/api/jobs/") {
        bodies_.push_back(req.body);
        if (on_submit_) on_submit_(static_cast<int>(bodies_.size()) - 1);
        r.body = "{\"job_id\":\"raysubmit_x\",\"submission_id\":\"s\"}";
      } else if (req.method == "GET" && req.url == "http://head:8265/api/jobs/") {
        r.body = live_jobs_;
      } else if (req.method == "GET") {
        r.body = "{\"status\":\"" + job_status_(req.url.substr(req.url.rfind('/') + 1)) + "\"}";
      } else {
        r.body = "{\"stopped\":true}";
      }
      return r;
    };
    return o;
  }

  void Succeed(int id) {
    ShardState s(Env::Default(), state_, id);
    ASSERT_TRUE(s.MarkRunning({}).ok());
    ASSERT_TRUE(s.MarkSuccess(Value(), 0).ok());
  }

  testing::TempDir dir_;
  std::string state_;
  config::Config config_;
  std::vector<std::string> bodies_, calls_;
  std::string live_jobs_ = "[]";
  std::function<void(int)> on_submit_;
  std::function<std::string(const std::string&)> job_status_ = [](const std::string&) { return "SUCCEEDED"; };
};

TEST_F(RayRunTest, AShardKilledWhileRunningIsResubmittedAlone) {
  on_submit_ = [&](int n) {
    if (n == 0) {
      Succeed(0);
      ShardState s1(Env::Default(), state_, 1);
      ASSERT_TRUE(s1.MarkRunning({}).ok());  // then killed: the status stays "running"
    } else {
      Succeed(1);
    }
  };
  job_status_ = [&](const std::string&) { return bodies_.size() == 1 ? "FAILED" : "SUCCEEDED"; };
  auto r = RunRayLoop(Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->all_succeeded);
  ASSERT_EQ(bodies_.size(), 2u);
  auto first = ParseJson(bodies_[0]);
  ASSERT_TRUE(first.ok()) << bodies_[0];
  std::string entry = first->Find("entrypoint")->as_string();
  EXPECT_NE(entry.find("python3 " + dir_.Path("bundle/share/mmirage/ray_driver.py")), std::string::npos) << entry;
  EXPECT_NE(entry.find("--mmirage-bin " + dir_.Path("bundle/bin/mmirage")), std::string::npos) << entry;
  EXPECT_NE(entry.find("--shards 0,1 "), std::string::npos) << entry;
  EXPECT_NE(entry.find("--num-gpus 1"), std::string::npos) << entry;
  EXPECT_NE(entry.find("--memory 2147483648"), std::string::npos) << entry;
  EXPECT_NE(entry.find("--max-parallel 3"), std::string::npos) << entry;
  // Both shard tasks run at once (max_parallel 3 ≥ 2 shards): they split the endpoints' rate limits two ways.
  EXPECT_EQ(ToJson(*first->Find("runtime_env")), R"({"env_vars":{"X":"y","MMIRAGE_RATE_LIMIT_SHARES":"2"}})");
  EXPECT_EQ(first->Find("metadata")->Find("mmirage_config")->as_string(), dir_.Path("cfg.yaml"));
  auto second = ParseJson(bodies_[1]);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->Find("entrypoint")->as_string().find("--shards 1 "), std::string::npos);
  EXPECT_EQ(ToJson(*second->Find("runtime_env")), R"({"env_vars":{"X":"y"}})");  // one task: the whole limits
}

// MMIRAGE_RATE_LIMIT_SHARES = min(max_parallel, shards submitted), in the job's runtime_env; a value the config
// sets itself is kept, and a single task at a time gets none.
TEST_F(RayRunTest, ShardTasksThatRunAtOnceSplitTheRateLimits) {
  auto first_env = [&]() -> std::string {
    if (bodies_.empty()) return "no submission";
    auto body = ParseJson(bodies_[0]);
    if (!body.ok()) return "bad body";
    const Value* env = body->Find("runtime_env");
    return env == nullptr ? "none" : ToJson(*env);
  };
  struct Case {
    std::string keys;
    int shards;
    std::string want;
  } cases[] = {
      {"    max_parallel: 3\n", 5, R"({"env_vars":{"MMIRAGE_RATE_LIMIT_SHARES":"3"}})"},
      {"", 5, R"({"env_vars":{"MMIRAGE_RATE_LIMIT_SHARES":"5"}})"},
      {"    max_parallel: 1\n", 5, "none"},
      {"    runtime_env: {env_vars: {MMIRAGE_RATE_LIMIT_SHARES: \"9\"}}\n", 3,
       R"({"env_vars":{"MMIRAGE_RATE_LIMIT_SHARES":"9"}})"},
      {"    runtime_env: {working_dir: /w}\n", 2,
       R"({"working_dir":"/w","env_vars":{"MMIRAGE_RATE_LIMIT_SHARES":"2"}})"},
  };
  int n = 0;
  for (const Case& k : cases) {
    Reload(k.keys, k.shards, "state" + std::to_string(n++));
    bodies_.clear();
    auto r = RunRayLoop(Options());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(first_env(), k.want) << k.keys;
  }
}

TEST_F(RayRunTest, TheBudgetEndsTheLoopWhenTasksNeverStart) {
  job_status_ = [](const std::string&) { return "FAILED"; };
  auto r = RunRayLoop(Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->all_succeeded);
  EXPECT_EQ(bodies_.size(), 3u);  // max_retries + 1
  EXPECT_EQ(r->exhausted, (std::vector<int64_t>{0, 1}));
  EXPECT_NE(r->shards.at(0).reason.find("never started the shard"), std::string::npos) << r->shards.at(0).reason;
}

TEST_F(RayRunTest, ALiveJobOfTheSameConfigIsReattachedNotResubmitted) {
  Value md = Value::EmptyObject();
  md.Set("mmirage_config", Value(dir_.Path("cfg.yaml")));
  md.Set("mmirage_fingerprint", Value(std::to_string(config_.fingerprint)));
  live_jobs_ =
      "[{\"submission_id\":\"other\",\"status\":\"RUNNING\",\"metadata\":{}},"
      "{\"submission_id\":\"mine\",\"status\":\"RUNNING\",\"metadata\":" +
      ToJson(md) + "}]";
  job_status_ = [&](const std::string& id) {
    if (id == "mine") {
      Succeed(0);
      Succeed(1);
    }
    return "SUCCEEDED";
  };
  auto r = RunRayLoop(Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->all_succeeded);
  EXPECT_TRUE(bodies_.empty());
  EXPECT_EQ(r->job_ids, (std::vector<std::string>{"mine"}));
}

// A live job that runs some of the unfinished shards (here a retry job for shard 1) is waited for and judges only
// those; the others are submitted after it without an attempt charged for the job they were not in.
TEST_F(RayRunTest, AReattachedJobJudgesItsShardsAndTheOthersAreSubmittedAfterIt) {
  Value md = Value::EmptyObject();
  md.Set("mmirage_config", Value(dir_.Path("cfg.yaml")));
  md.Set("mmirage_fingerprint", Value(std::to_string(config_.fingerprint)));
  md.Set("mmirage_shards", Value("1"));
  live_jobs_ = "[{\"submission_id\":\"mine\",\"status\":\"RUNNING\",\"metadata\":" + ToJson(md) + "}]";
  job_status_ = [&](const std::string& id) {
    if (id == "mine") Succeed(1);
    return "SUCCEEDED";
  };
  on_submit_ = [&](int) { Succeed(0); };
  auto r = RunRayLoop(Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->all_succeeded);
  ASSERT_EQ(bodies_.size(), 1u);
  EXPECT_NE(bodies_[0].find("--shards 0 "), std::string::npos) << bodies_[0];
  EXPECT_NE(bodies_[0].find("\"mmirage_shards\":\"0\""), std::string::npos) << bodies_[0];
  ASSERT_EQ(r->job_ids.size(), 2u);
  EXPECT_EQ(r->job_ids[0], "mine");
  EXPECT_EQ(r->shards.at(0).attempts, 1);  // not charged for the reattached job it was not in

  // A live job of this config that runs none of the shards asked for is not waited for.
  bodies_.clear();
  calls_.clear();
  Reload("", 2, "state2");
  live_jobs_ = "[{\"submission_id\":\"mine\",\"status\":\"RUNNING\",\"metadata\":" + ToJson(md) + "}]";
  RayOptions o = Options();
  o.shard_ids = {0};
  job_status_ = [](const std::string&) { return "SUCCEEDED"; };
  on_submit_ = [&](int) { Succeed(0); };
  auto only = RunRayLoop(o);
  ASSERT_TRUE(only.ok()) << only.status().ToString();
  EXPECT_EQ(bodies_.size(), 1u);
  EXPECT_EQ(std::count(calls_.begin(), calls_.end(), "GET http://head:8265/api/jobs/mine"), 0);
}

TEST_F(RayRunTest, RetryOfGivenShardsSubmitsOnlyThoseOnceAndWaits) {
  RayOptions o = Options();
  o.auto_retry = false;
  o.wait = true;
  o.shard_ids = {1};
  job_status_ = [](const std::string&) { return "FAILED"; };
  auto r = RunRayLoop(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(bodies_.size(), 1u);
  EXPECT_NE(bodies_[0].find("--shards 1 "), std::string::npos) << bodies_[0];
  EXPECT_EQ(r->failed, (std::vector<int64_t>{1}));
  EXPECT_EQ(r->shards.count(0), 0u);
}

TEST_F(RayRunTest, AnUnreachableDashboardIsAClearError) {
  RayOptions o = Options();
  o.http = [](const HttpRequest&) {
    HttpResponse r;
    r.transport = HttpTransport::kConnect;
    r.error = "Connection refused";
    return r;
  };
  auto r = RunRayLoop(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("POST http://head:8265/api/jobs/: Connection refused"), std::string::npos)
      << r.status().message();
}

TEST_F(RayRunTest, AMissingDriverProgramIsAClearError) {
  RayOptions o = Options();
  o.self_exe = dir_.Path("data.jsonl");
  auto r = RunRayLoop(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("share/mmirage/ray_driver.py is not installed"), std::string::npos)
      << r.status().message();
}

TEST_F(RayRunTest, AStopSignalStopsTheJob) {
  job_status_ = [](const std::string&) {
    TestRequestStop(SIGTERM);
    return "RUNNING";
  };
  auto r = RunRayLoop(Options());
  TestClearStopRequest();  // the tests after this one in the binary run as if no signal came
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stopped by SIGTERM"), std::string::npos) << r.status().message();
  ASSERT_FALSE(calls_.empty());
  EXPECT_EQ(calls_.back().substr(0, 30), "POST http://head:8265/api/jobs");
  EXPECT_NE(calls_.back().find("/stop"), std::string::npos) << calls_.back();
}

}  // namespace
}  // namespace mmirage::exec

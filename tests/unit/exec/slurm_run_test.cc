// The SLURM run loop with a scripted sbatch/squeue (the real daemons are exercised by tests/e2e/slurm_test.cc):
// budget accounting, dead tasks, sparse resubmission.
#include "exec/slurm_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "state/shard_state.h"
#include "support/test_util.h"

namespace mmirage::exec {
namespace {

class SlurmRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(dir_.Path("data.jsonl"), "{\"a\":1}\n{\"a\":2}\n");
    std::string yaml =
        "processors: []\n"
        "loading_params:\n"
        "  datasets: [{type: JSONL, path: " +
        dir_.Path("data.jsonl") + ", output_dir: " + dir_.Path("out") +
        "}]\n"
        "  state_dir: " +
        dir_.Path("state") +
        "\n"
        "  num_shards: 2\n"
        "processing_params:\n"
        "  inputs: [{name: a, key: a}]\n"
        "  outputs: []\n"
        "  output_schema: {a: \"{{ a }}\"}\n"
        "execution_params:\n"
        "  mode: slurm\n"
        "  account: acct\n"
        "  gpus: 0\n"
        "  retry: true\n"
        "  merge: true\n"
        "  max_retries: 2\n"
        "  poll_interval_seconds: 1\n"
        "  settle_time_seconds: 0\n"
        "  report_dir: " +
        dir_.Path("reports") + "\n";
    auto c = config::LoadConfigFromString(yaml, dir_.Path("cfg.yaml"));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    config_ = std::move(*c);
  }

  // sbatch answers job ids 100, 101, … and calls on_submit(job index, argv); squeue answers `squeue_out(job)`;
  // sacct is unavailable.
  SlurmOptions Options() {
    SlurmOptions o;
    o.config = &config_;
    o.cwd = dir_.path();
    o.self_exe = "/bin/sh";
    o.auto_retry = true;
    o.runner = [this](const std::vector<std::string>& argv) -> Result<CommandOutput> {
      if (argv[0] == "sbatch") {
        int n = static_cast<int>(submits_.size());
        submits_.push_back(argv);
        if (on_submit_) on_submit_(n);
        return CommandOutput{0, std::to_string(100 + n) + "\n", ""};
      }
      if (argv[0] == "squeue") return CommandOutput{0, squeue_out_(argv[3]), ""};
      return CommandOutput{1, "", "Slurm accounting storage is disabled\n"};
    };
    return o;
  }

  std::string ArrayArg(int submission) {
    for (const auto& a : submits_[static_cast<size_t>(submission)])
      if (a.rfind("--array=", 0) == 0) return a;
    return "";
  }

  testing::TempDir dir_;
  config::Config config_;
  std::vector<std::vector<std::string>> submits_;
  std::function<void(int)> on_submit_;
  std::function<std::string(const std::string&)> squeue_out_;
};

TEST_F(SlurmRunTest, TasksThatNeverStartSpendTheBudgetSoTheLoopEnds) {
  squeue_out_ = [](const std::string& job) { return job + "_0|FAILED\n" + job + "_1|FAILED\n"; };
  auto r = RunSlurmLoop(Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->all_succeeded);
  EXPECT_EQ(submits_.size(), 3u);  // max_retries + 1 attempts
  EXPECT_EQ(r->exhausted, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(r->shards.count(1), 1u);
  EXPECT_EQ(r->shards.at(1).attempts, 3);
  EXPECT_NE(r->shards.at(1).reason.find("never started the shard (SLURM: FAILED)"), std::string::npos)
      << r->shards.at(1).reason;
  EXPECT_NE(r->FailureReport(2).find("Shard 1: failed, 3 of 3 attempts used (max_retries exhausted)"),
            std::string::npos);
}

TEST_F(SlurmRunTest, ATaskKilledWhileRunningIsRetriedAloneAsASparseArray) {
  Env* env = Env::Default();
  on_submit_ = [&](int n) {
    ShardState s0(env, dir_.Path("state"), 0), s1(env, dir_.Path("state"), 1);
    if (n == 0) {
      ASSERT_TRUE(s0.MarkRunning({}).ok());
      ASSERT_TRUE(s0.MarkSuccess(Value(), 0).ok());
      ASSERT_TRUE(s1.MarkRunning({}).ok());  // then killed by the time limit: status stays "running"
    } else {
      ASSERT_TRUE(s1.MarkRunning({}).ok());
      ASSERT_TRUE(s1.MarkSuccess(Value(), 0).ok());
    }
  };
  squeue_out_ = [](const std::string& job) {
    return job == "100" ? "100_0|COMPLETED\n100_1|TIMEOUT\n" : job + "_1|COMPLETED\n";
  };
  auto r = RunSlurmLoop(Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->all_succeeded);
  ASSERT_EQ(submits_.size(), 2u);
  EXPECT_EQ(ArrayArg(0), "--array=0-1");
  EXPECT_EQ(ArrayArg(1), "--array=1");
  EXPECT_EQ(r->job_ids, (std::vector<std::string>{"100", "101"}));
}

// Issue #13, item 10: the tasks' own "failed row" lines are in their SLURM logs; the loop's stderr ends with a
// summary of every shard's failed rows and the errors.jsonl paths.
TEST_F(SlurmRunTest, TheLoopEndsWithASummaryOfTheFailedRows) {
  Env* env = Env::Default();
  on_submit_ = [&](int) {
    for (int id : {0, 1}) {
      ShardState s(env, dir_.Path("state"), id);
      ASSERT_TRUE(s.MarkRunning({}).ok());
      if (id == 1) {
        testing::WriteFile(
            dir_.Path("out/shard_1/errors.jsonl"),
            "{\"row_index\":0,\"source\":\"data.jsonl:2\",\"stage\":\"extract\",\"message\":\"no a\"}\n");
      }
      ASSERT_TRUE(s.MarkSuccess(Value(), id == 1 ? 1 : 0).ok());
    }
  };
  squeue_out_ = [](const std::string& job) { return job + "_0|COMPLETED\n" + job + "_1|COMPLETED\n"; };
  ::testing::internal::CaptureStderr();
  auto r = RunSlurmLoop(Options());
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->all_succeeded);
  EXPECT_NE(err.find("1 row(s) failed in 1 shard output(s); see " + dir_.Path("out/shard_1/errors.jsonl")),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("failed row: data.jsonl:2 [extract] no a"), std::string::npos) << err;
}

TEST_F(SlurmRunTest, SuccessfulShardsAreNotResubmitted) {
  Env* env = Env::Default();
  ShardState s0(env, dir_.Path("state"), 0);
  ASSERT_TRUE(s0.MarkRunning({}).ok());
  ASSERT_TRUE(s0.MarkSuccess(Value(), 0).ok());
  on_submit_ = [&](int) {
    ShardState s1(env, dir_.Path("state"), 1);
    ASSERT_TRUE(s1.MarkRunning({}).ok());
    ASSERT_TRUE(s1.MarkSuccess(Value(), 0).ok());
  };
  squeue_out_ = [](const std::string& job) { return job + "_1|COMPLETED\n"; };
  auto r = RunSlurmLoop(Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->all_succeeded);
  ASSERT_EQ(submits_.size(), 1u);
  EXPECT_EQ(ArrayArg(0), "--array=1");
}

TEST_F(SlurmRunTest, AShardThatFailsEveryTimeExhaustsMaxRetriesPlusOneAttempts) {
  Env* env = Env::Default();
  on_submit_ = [&](int n) {
    ShardState s0(env, dir_.Path("state"), 0), s1(env, dir_.Path("state"), 1);
    if (n == 0) {
      ASSERT_TRUE(s0.MarkRunning({}).ok());
      ASSERT_TRUE(s0.MarkSuccess(Value(), 0).ok());
    }
    ASSERT_TRUE(s1.MarkRunning({}).ok());
    ASSERT_TRUE(s1.MarkFailed("row 1: no value for a", 1).ok());
  };
  squeue_out_ = [](const std::string& job) { return job + "_1|FAILED\n"; };
  auto r = RunSlurmLoop(Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->all_succeeded);
  EXPECT_EQ(submits_.size(), 3u);
  EXPECT_EQ(r->exhausted, (std::vector<int64_t>{1}));
  EXPECT_EQ(r->shards.at(1).reason, "row 1: no value for a (SLURM: FAILED)");
}

}  // namespace
}  // namespace mmirage::exec

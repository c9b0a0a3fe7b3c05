// SlurmClient with a scripted command runner: sbatch/squeue/sacct outputs as recorded on SLURM 22.05.
#include "exec/slurm_client.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace mmirage::exec {
namespace {

struct Scripted {
  std::vector<std::vector<std::string>> calls;
  std::vector<CommandOutput> replies;
  CommandRunner Runner() {
    return [this](const std::vector<std::string>& argv) -> Result<CommandOutput> {
      calls.push_back(argv);
      if (replies.empty()) return Status::NotFound(argv[0] + ": not found on PATH");
      CommandOutput r = replies.front();
      replies.erase(replies.begin());
      return r;
    };
  }
};

TEST(SlurmClientTest, SubmitWritesTheScriptAndParsesTheJobId) {
  testing::TempDir d;
  Scripted s;
  s.replies.push_back({0, "4242;cluster\n", ""});
  SlurmClient c(Env::Default(), s.Runner());
  SbatchRequest req{{"sbatch", "--parsable"}, "#!/bin/bash\necho hi\n"};
  auto id = c.Submit(req, d.Path("job.sh"));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, "4242");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].back(), d.Path("job.sh"));
  EXPECT_EQ(testing::ReadFile(d.Path("job.sh")), req.script);
}

TEST(SlurmClientTest, SubmitFailuresAreReported) {
  testing::TempDir d;
  Scripted s;
  s.replies.push_back({1, "", "sbatch: error: Invalid account or account/partition combination specified\n"});
  s.replies.push_back({0, "Submitted batch job 5\n", ""});
  SlurmClient c(Env::Default(), s.Runner());
  auto r = c.Submit({{"sbatch"}, "x"}, d.Path("a.sh"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "sbatch failed: sbatch: error: Invalid account or account/partition combination specified");
  r = c.Submit({{"sbatch"}, "x"}, d.Path("b.sh"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Unable to parse job id"), std::string::npos);
  r = c.Submit({{"sbatch"}, "x"}, d.Path("c.sh"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound());
}

TEST(SlurmClientTest, SqueueLinesGiveEveryTaskState) {
  JobSnapshot s = ParseSqueue("7",
                              "7_[4-6,9%2]|PENDING\n7_3|RUNNING\n7_2|CANCELLED by 0\n7_1|COMPLETED\n"
                              "8_0|RUNNING\ngarbage\n");
  EXPECT_EQ(s.task_states.size(), 7u);
  EXPECT_EQ(s.task_states[4], "PENDING");
  EXPECT_EQ(s.task_states[9], "PENDING");
  EXPECT_EQ(s.task_states[3], "RUNNING");
  EXPECT_EQ(s.task_states[2], "CANCELLED");
  EXPECT_EQ(s.task_states.count(0), 0u);
  EXPECT_TRUE(s.Active());
  JobSnapshot done = ParseSqueue("7", "7_0|COMPLETED\n7_1|TIMEOUT\n7_2|NODE_FAIL\n");
  EXPECT_FALSE(done.Active());
  EXPECT_EQ(ParseSqueue("7", "7|RUNNING\n").task_states.at(0), "RUNNING");
}

TEST(SlurmClientTest, PollTreatsAnUnknownJobAsGoneAndOtherFailuresAsErrors) {
  Scripted s;
  s.replies.push_back({1, "", "slurm_load_jobs error: Invalid job id specified\n"});
  s.replies.push_back({1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"});
  s.replies.push_back({0, "", ""});
  s.replies.push_back({0, "3_0|RUNNING\n", ""});
  SlurmClient c(Env::Default(), s.Runner());
  auto a = c.Poll("3");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->gone);
  EXPECT_FALSE(a->Active());
  auto b = c.Poll("3");
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().IsUnavailable());
  auto e = c.Poll("3");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->gone);
  auto f = c.Poll("3");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->Active());
  EXPECT_EQ(s.calls[0], (std::vector<std::string>{"squeue", "-h", "-j", "3", "-t", "all", "-o", "%i|%T"}));
}

TEST(SlurmClientTest, AccountingSkipsStepsAndIsAbsentWhenDisabled) {
  Scripted s;
  s.replies.push_back({0,
                       "9_0|COMPLETED|0:0\n9_0.batch|COMPLETED|0:0\n9_1|TIMEOUT|0:0\n9_1.batch|CANCELLED|0:15\n"
                       "9_2|CANCELLED by 0|0:0\n",
                       ""});
  s.replies.push_back({1, "", "Slurm accounting storage is disabled\n"});
  SlurmClient c(Env::Default(), s.Runner());
  auto a = c.Accounting("9");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->size(), 3u);
  EXPECT_EQ(a->at(1), "TIMEOUT");
  EXPECT_EQ(a->at(2), "CANCELLED");
  EXPECT_FALSE(c.Accounting("9").has_value());
  EXPECT_FALSE(c.Accounting("9").has_value());  // sacct missing
}

}  // namespace
}  // namespace mmirage::exec

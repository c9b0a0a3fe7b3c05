// The sbatch command line and batch script of SLURM mode (exec/slurm_script.h).
#include "exec/slurm_script.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace mmirage::exec {
namespace {

config::ExecutionParams Exec() {
  config::ExecutionParams e;
  e.mode = "slurm";
  e.account = "a-proj";
  e.gpus = 0;
  e.cpus_per_task = 2;
  e.time_limit = "01:00:00";
  e.job_name = "mm";
  return e;
}

SlurmPaths Paths() {
  SlurmPaths p;
  p.project_root = "/proj";
  p.report_dir = "/proj/reports";
  p.config_path = "/proj/cfg.yaml";
  p.mmirage_bin = "/opt/mmirage/bin/mmirage";
  p.hf_home = "$SCRATCH/hf";
  p.state_dir = "/proj/state";
  return p;
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
bool HasPrefix(const std::vector<std::string>& v, const std::string& p) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& a) { return a.rfind(p, 0) == 0; });
}

TEST(SlurmScriptTest, EveryDirectiveOfTheSpecIsOnTheCommandLine) {
  auto e = Exec();
  e.reservation = "res1";
  e.nodes = 1;
  e.ntasks_per_node = 1;
  auto r = BuildSbatchRequest(e, Paths(), SbatchJob{4, {}, false});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& a = r->argv;
  EXPECT_EQ(a[0], "sbatch");
  EXPECT_EQ(a[1], "--parsable");
  for (const char* x : {"--job-name=mm", "--chdir=/proj", "--output=/proj/reports/R-%x.%A_%a.out",
                        "--error=/proj/reports/R-%x.%A_%a.err", "--nodes=1", "--ntasks-per-node=1", "--cpus-per-task=2",
                        "--time=01:00:00", "--account=a-proj", "--reservation=res1", "--array=0-3"}) {
    EXPECT_TRUE(Has(a, x)) << x;
  }
}

TEST(SlurmScriptTest, GpusAreRequestedOnlyWhenPositive) {
  auto e = Exec();
  auto r = BuildSbatchRequest(e, Paths(), SbatchJob{2, {}, false});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(HasPrefix(r->argv, "--gres"));
  e.gpus = 4;
  r = BuildSbatchRequest(e, Paths(), SbatchJob{2, {}, false});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(r->argv, "--gres=gpu:4"));
}

TEST(SlurmScriptTest, ExtensionsAndExtraArgsComeLastVerbatim) {
  auto e = Exec();
  e.partition = "normal";
  e.qos = "high";
  e.mem = "64G";
  e.array_parallelism = 3;
  e.extra_sbatch_args = {"--constraint=gpu a100", "--exclusive"};
  auto r = BuildSbatchRequest(e, Paths(), SbatchJob{10, {}, false});
  ASSERT_TRUE(r.ok());
  const auto& a = r->argv;
  EXPECT_TRUE(Has(a, "--partition=normal"));
  EXPECT_TRUE(Has(a, "--qos=high"));
  EXPECT_TRUE(Has(a, "--mem=64G"));
  EXPECT_TRUE(Has(a, "--array=0-9%3"));
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[a.size() - 2], "--constraint=gpu a100");
  EXPECT_EQ(a.back(), "--exclusive");
}

TEST(SlurmScriptTest, RetriesAreSparseArrays) {
  auto r = BuildSbatchRequest(Exec(), Paths(), SbatchJob{10, {9, 1, 5}, false});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(r->argv, "--array=1,5,9"));
  EXPECT_EQ(FormatArraySpec({0, 1, 2, 3, 7}, 10, 0), "0-3,7");
  EXPECT_EQ(FormatArraySpec({4, 5}, 10, 2), "4,5%2");
  EXPECT_EQ(FormatArraySpec({}, 1, 0), "0");
}

TEST(SlurmScriptTest, BadShardIdsAndMissingAccountAreRejected) {
  EXPECT_FALSE(BuildSbatchRequest(Exec(), Paths(), SbatchJob{4, {4}, false}).ok());
  EXPECT_FALSE(BuildSbatchRequest(Exec(), Paths(), SbatchJob{4, {1, 1}, false}).ok());
  auto e = Exec();
  e.account.reset();
  auto r = BuildSbatchRequest(e, Paths(), SbatchJob{4, {}, false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("account must be set"), std::string::npos);
}

TEST(SlurmScriptTest, TheTasksThatRunAtOnceSplitTheRateLimits) {
  auto e = Exec();
  auto shares = [&](SbatchJob job) {
    auto r = BuildSbatchRequest(e, Paths(), job);
    EXPECT_TRUE(r.ok());
    size_t at = r->script.find("export MMIRAGE_RATE_LIMIT_SHARES=");
    if (at == std::string::npos) return std::string("none");
    return r->script.substr(at + 33, r->script.find('\n', at) - at - 33);
  };
  EXPECT_EQ(shares(SbatchJob{8, {}, false}), "8");         // every task at once
  EXPECT_EQ(shares(SbatchJob{8, {2, 5, 6}, false}), "3");  // a resubmission of three shards
  EXPECT_EQ(shares(SbatchJob{1, {}, false}), "none");      // one task has the whole budget
  e.array_parallelism = 2;                                 // --array=0-7%2
  EXPECT_EQ(shares(SbatchJob{8, {}, false}), "2");
}

TEST(SlurmScriptTest, ScriptRunsTheBinaryOnTheConfigWithTheArrayTaskId) {
  auto e = Exec();
  e.edf_env = "x";
  auto p = Paths();
  p.edf_env = "/proj/my env.toml";
  auto r = BuildSbatchRequest(e, p, SbatchJob{4, {}, true});
  ASSERT_TRUE(r.ok());
  const std::string& s = r->script;
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  EXPECT_NE(s.find("set -euo pipefail\n"), std::string::npos);
  EXPECT_NE(s.find("export HF_HOME=\"$SCRATCH/hf\"\n"), std::string::npos);  // $VAR left to the compute node
  EXPECT_NE(s.find("export MMIRAGE_CONFIG=\"/proj/cfg.yaml\"\n"), std::string::npos);
  EXPECT_NE(s.find("export MMIRAGE_BIN=\"/opt/mmirage/bin/mmirage\"\n"), std::string::npos);
  EXPECT_NE(s.find("export MMIRAGE_COLLECT_STATS=1\n"), std::string::npos);
  EXPECT_NE(s.find("mkdir -p \"/proj/state\"\n"), std::string::npos);
  EXPECT_NE(s.find("srun_args+=(--environment='/proj/my env.toml')\n"), std::string::npos);
  EXPECT_NE(s.find("srun_args+=(-A a-proj)\n"), std::string::npos);
  EXPECT_NE(s.find("--ntasks=1"), std::string::npos);
  EXPECT_NE(s.find("\"$MMIRAGE_BIN\" run --config \"$MMIRAGE_CONFIG\" --shard-id \"${SLURM_ARRAY_TASK_ID:?"),
            std::string::npos);
  EXPECT_NE(s.find(" --stats\n"), std::string::npos);
}

TEST(SlurmScriptTest, CommandSubstitutionIsRejectedAndQuotesAreEscaped) {
  auto p = Paths();
  p.config_path = "/proj/$(rm -rf ~).yaml";
  auto r = BuildSbatchRequest(Exec(), p, SbatchJob{1, {}, false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("command substitution"), std::string::npos);
  p.config_path = "/proj/`id`.yaml";
  EXPECT_FALSE(BuildSbatchRequest(Exec(), p, SbatchJob{1, {}, false}).ok());
  p.config_path = "/proj/a \"b\" \\c.yaml";
  r = BuildSbatchRequest(Exec(), p, SbatchJob{1, {}, false});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->script.find("export MMIRAGE_CONFIG=\"/proj/a \\\"b\\\" \\\\c.yaml\"\n"), std::string::npos);
}

TEST(SlurmScriptTest, ShellQuoteFollowsTheSpec) {
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a-b_c.d/e:f,g=h+i@j%k"), "a-b_c.d/e:f,g=h+i@j%k");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\"'\"'s'");
  EXPECT_EQ(ShellQuote("$(x)"), "'$(x)'");
}

TEST(SlurmScriptTest, PercentInTheReportDirIsEscaped) {
  auto p = Paths();
  p.report_dir = "/proj/100%";
  auto r = BuildSbatchRequest(Exec(), p, SbatchJob{1, {}, false});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(r->argv, "--output=/proj/100%%/R-%x.%A_%a.out"));
}

}  // namespace
}  // namespace mmirage::exec

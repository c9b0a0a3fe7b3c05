// Issue #13, item 9: a shard's fsyncs are O(commits), not O(rows) or O(seconds) — the heartbeat and progress.json
// are never synced, status.json only at the attempt's start and end.
#include <gtest/gtest.h>

#include <cstdio>

#include "config/config.h"
#include "pipeline/shard_runner.h"
#include "support/counting_env.h"
#include "support/test_util.h"

namespace mmirage::pipeline {
namespace {

struct SyncCount {
  int syncs = 0;
  int progress_writes = 0;
  int state_syncs = 0;  // status.json, markers, attempts.log
};

// Runs a model-free shard of `rows` rows, committing every `commit_every` rows (at batch ends); counts the syncs.
SyncCount RunCounted(int rows, int commit_every) {
  testing::TempDir d;
  std::string data;
  for (int i = 0; i < rows; ++i)
    data += "{\"id\": " + std::to_string(i) + ", \"t\": \"row " + std::to_string(i) + "\"}\n";
  testing::WriteFile(d.Path("d.jsonl"), data);
  std::string y = "processors: []\nloading_params:\n  datasets: [{type: JSONL, path: " + d.Path("d.jsonl") +
                  ", output_dir: " + d.Path("out") + ", output_format: jsonl}]\n  state_dir: " + d.Path("state") +
                  "\nprocessing_params:\n  inputs: [{name: t, key: t}]\n  outputs: []\n  remove_columns: false\n"
                  "  output_schema: {u: '{{ t | upper }}'}\nexecution_params:\n  commit_every_rows: " +
                  std::to_string(commit_every) + "\n  commit_interval_seconds: 100000\n";
  config::LoadOptions lo;
  lo.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(y, d.Path("c.yaml"), lo);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return {};
  testing::CountingEnv env;
  ShardRunOptions o;
  o.env = &env;
  o.config = &*c;
  o.quiet = true;
  auto r = RunShard(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok()) { EXPECT_EQ(r->rows_written, rows); }
  EXPECT_EQ(env.syncs_of("heartbeat"), 0);
  EXPECT_EQ(env.syncs_of("progress.json"), 0);
  return {
      env.syncs(), env.writes("progress.json"),
      env.syncs_of("status.json") + env.syncs_of(".RUNNING") + env.syncs_of(".SUCCESS") + env.syncs_of("attempts.log")};
}

TEST(ShardRunnerIoTest, SyncsGrowWithCommitsNotWithRows) {
  // Model-free rows flow in batches of 2048 rows; commit_every_rows: 1 commits after each batch.
  SyncCount ten = RunCounted(10 * 2048, 1);        // 10 commits (+ publish)
  SyncCount twenty = RunCounted(20 * 2048, 1);     // 20 commits
  SyncCount one = RunCounted(20 * 2048, 1000000);  // the same rows, committed once, when published
  std::printf("syncs: 10 commits %d, 20 commits %d, 1 commit %d (state files %d); progress.json writes %d\n", ten.syncs,
              twenty.syncs, one.syncs, ten.state_syncs, twenty.progress_writes);
  // The attempt's start and end: attempts.log, status.json twice, two markers.
  EXPECT_LE(ten.state_syncs, 5);
  EXPECT_EQ(ten.state_syncs, one.state_syncs);
  // Ten more commits cost a bounded number of syncs each (data, journal, its directory)...
  int per_commit = (twenty.syncs - ten.syncs) / 10;
  EXPECT_GE(per_commit, 1) << ten.syncs << " vs " << twenty.syncs;
  EXPECT_LE(per_commit, 4) << ten.syncs << " vs " << twenty.syncs;
  // ...and rows without commits cost none: 4000 rows committed once sync about as often as an empty shard.
  EXPECT_LE(one.syncs, ten.syncs - 9) << "one commit: " << one.syncs << ", ten commits: " << ten.syncs;
  // The fixed cost of a shard (measured 24): the state files (5), directories created durably (their parents
  // synced), the work files and the first journal (one sync of their directory), and publishing (data, the last
  // journal and _mmirage.json under one directory sync, the parent after the exchange and after the old shard's
  // removal). Each sync is a disk cache flush (milliseconds): a bound, so that none creeps back in.
  EXPECT_LE(one.syncs, 24);
  // progress.json is rewritten on every commit (plus start and end), never synced.
  EXPECT_GE(twenty.progress_writes, 20);
}

}  // namespace
}  // namespace mmirage::pipeline

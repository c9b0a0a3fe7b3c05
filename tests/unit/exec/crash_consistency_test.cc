// Issue #13 item 7: durability order, tested with the fault-injecting Env (tests/support/fault_env.h). A run of
// two shards and their merge is "crashed" at every sync point of the shard writer, the state files and merge in
// turn; after the simulated power loss, nothing half-written is marked done, and a resumed run ends with output
// identical to a fault-free run.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "config/config.h"
#include "engine/engine.h"
#include "exec/merge.h"
#include "pipeline/shard_runner.h"
#include "pipeline/shard_writer.h"
#include "state/shard_state.h"
#include "support/fake_engine.h"
#include "support/fault_env.h"
#include "support/test_util.h"
#include "util/log.h"

namespace mmirage {
namespace {

// Answers each prompt with a reply derived from it, on its own thread, in submission order.
std::unique_ptr<engine::Engine> EchoEngine() {
  return std::make_unique<testing::FakeEngine>(
      [](const engine::Request& r, int) {
        engine::Completion c;
        c.text = "echo:" + r.prompt;
        c.prompt_tokens = static_cast<int64_t>(r.prompt.size());
        c.completion_tokens = 2;
        return c;
      },
      testing::FakeEngineOptions{.capacity = 1});
}

using Tree = std::map<std::string, std::string>;  // relative path → content ("/" for a directory)

// Everything under `dir` but the shard locks.
Tree Snapshot(const std::string& dir) {
  Tree t;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return t;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::string rel = std::filesystem::relative(it->path(), dir, ec).string();
    if (rel.find(".lock") != std::string::npos) continue;
    t[rel] = it->is_directory() ? "/" : testing::ReadFile(it->path().string());
  }
  return t;
}

std::string Diff(const Tree& want, const Tree& got) {
  std::string out;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) out += "  missing " + k + "\n";
    else if (it->second != v) out += "  differs " + k + "\n";
  }
  for (const auto& [k, v] : got)
    if (!want.count(k)) out += "  extra " + k + "\n";
  return out;
}

class CrashConsistencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_level_ = GetLogLevel();
    Load(false);
  }
  void TearDown() override { SetLogLevel(saved_level_); }  // later tests in this binary read the log
  // Model-free rows (one batch, committed at once), or rows through a model output (streamed: many commits, usage).
  void Load(bool with_model) {
    with_model_ = with_model;
    SetLogLevel(LogLevel::kError);  // each crash and restart warns; the assertions say what matters
    std::string rows;
    for (int i = 0; i < 25; ++i) {
      // Row 7 has no `x`: a render error, recorded in errors.jsonl (within max_failed_rows).
      rows += "{\"id\":" + std::to_string(i) + (i == 7 ? "" : ",\"x\":{\"y\":" + std::to_string(i * 3) + "}") + "}\n";
    }
    testing::WriteFile(d_.Path("data.jsonl"), rows);
    testing::WriteFile(d_.Path("fake.gguf"), "not read: the engine is injected");
    std::string yaml =
        std::string(with_model ? "processors: [{type: llm, server_args: {model_path: " + d_.Path("fake.gguf") + "}}]\n"
                               : "processors: []\n") +
        "loading_params:\n"
        "  datasets: [{type: JSONL, path: " +
        d_.Path("data.jsonl") + ", output_dir: " + d_.Path("out") +
        ", output_format: jsonl}]\n"
        "  num_shards: 2\n" +
        std::string(with_model ? "  batch_size: 1\n" : "") + "  state_dir: " + d_.Path("state") +
        "\n"
        "processing_params:\n"
        "  inputs: [{name: id, key: id}, {name: x, key: x}]\n" +
        std::string(with_model ? "  outputs: [{name: a, type: llm, prompt: 'P{{ x.y }}'}]\n"
                                 "  remove_columns: true\n"
                                 "  output_schema: {id: '{{ id }}', a: '{{ a }}'}\n"
                               : "  outputs: []\n"
                                 "  remove_columns: true\n"
                                 "  output_schema: {id: '{{ id }}', y: '{{ x.y + 1 }}'}\n") +
        "execution_params: {commit_every_rows: 4, max_failed_rows: 5, cache: off}\n";
    config::LoadOptions o;
    o.vars = [](const std::string&) { return std::optional<std::string>(); };
    auto c = config::LoadConfigFromString(yaml, d_.Path("cfg.yaml"), o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    config_ = std::move(*c);
  }

  // Both shards, then the merge; stops at the first error (a crash).
  Status RunAll(Env* env) {
    for (int64_t shard = 0; shard < 2; ++shard) {
      pipeline::ShardRunOptions o;
      o.env = env;
      o.config = &config_;
      o.shard_id = shard;
      o.quiet = true;
      if (with_model_) {
        o.engine_factory = [](const config::Processor&, std::vector<std::string>*) {
          return Result<std::unique_ptr<engine::Engine>>(EchoEngine());
        };
      }
      auto r = pipeline::RunShard(o);
      if (!r.ok()) return r.status();
    }
    exec::MergeOptions mo;
    mo.shard_ids = std::vector<int64_t>{0, 1};
    auto m = exec::MergeDatasetDir(env, d_.Path("out"), d_.Path("merged"), mo);
    return m.ok() ? Status::OK() : m.status();
  }

  void Clear() {
    testing::RunCommand("rm -rf '" + d_.Path("out") + "' '" + d_.Path("merged") + "' '" + d_.Path("state") + "'");
  }

  testing::TempDir d_;
  config::Config config_;
  int64_t total_ = 0;
  bool with_model_ = false;
  LogLevel saved_level_ = LogLevel::kInfo;
  // redo: every crashing run is a second run (it redoes the failed row and republishes over the first run's shards).
  // no_exchange: publishing falls back to rename-aside (a file system without RENAME_EXCHANGE).
  void CrashAtEverySyncPoint(bool redo = false, bool no_exchange = false);
};

// Sync points of the shard outputs, the merge and the state files that record an attempt (progress.json and the
// heartbeat are advisory and written on a timer: they are not counted, though their writes are modelled).
bool Counted(const std::string& path) {
  if (path.find("/out") != std::string::npos || path.find("/merged") != std::string::npos) return true;
  return path.find("status.json") != std::string::npos || path.find("attempts.log") != std::string::npos;
}

void CrashConsistencyTest::CrashAtEverySyncPoint(bool redo, bool no_exchange) {
  // Fault-free reference, and how many sync points it has.
  {
    testing::FaultEnv env(d_.path());
    env.set_exchange_unavailable(no_exchange);
    if (redo) { ASSERT_TRUE(RunAll(&env).ok()); }
    env.CrashAtSyncPoint(0, Counted);
    ASSERT_TRUE(RunAll(&env).ok());
    total_ = env.sync_points();
  }
  const Tree ref_out = Snapshot(d_.Path("out")), ref_merged = Snapshot(d_.Path("merged"));
  ASSERT_TRUE(ref_merged.count("data.jsonl"));
  ASSERT_EQ(testing::ReadLines(d_.Path("merged/data.jsonl")).size(), 24u);
  ASSERT_EQ(testing::ReadLines(d_.Path("merged/errors.jsonl")).size(), 1u);
  ASSERT_GT(total_, 20);

  // Streamed rows reach the writer in flushes that depend on timing, so a run's number of sync points varies a
  // little: a run that ends before its k-th sync point must simply be right.
  int64_t crashes = 0, resumable = 0, published = 0;  // what the crashes left (so the test is not vacuous)
  for (int64_t k = 1; k <= total_ + 2; ++k) {
    Clear();
    testing::FaultEnv env(d_.path());
    env.set_exchange_unavailable(no_exchange);
    if (redo) { ASSERT_TRUE(RunAll(&env).ok()); }
    env.CrashAtSyncPoint(k, Counted);
    Status s = RunAll(&env);
    if (!env.crashed()) {
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(Diff(ref_out, Snapshot(d_.Path("out"))), "") << "no crash at " << k;
      EXPECT_EQ(Diff(ref_merged, Snapshot(d_.Path("merged"))), "") << "no crash at " << k;
      continue;
    }
    ++crashes;
    ASSERT_FALSE(s.ok());
    const std::string where = "crash at sync point " + std::to_string(k) + " (" + env.crash_path() + ")";
    ASSERT_TRUE(env.SimulateCrash().ok()) << where;

    // Nothing half-written is marked done: a published shard is complete, a shard recorded successful is
    // published, a merged output is the whole merge.
    for (int shard = 0; shard < 2; ++shard) {
      const std::string name = "shard_" + std::to_string(shard);
      if (testing::Exists(d_.Path("out/" + name + ".tmp.partial/journal.json"))) ++resumable;
      if (pipeline::ReadCompletedShard(Env::Default(), d_.Path("out"), shard)) {
        ++published;
        EXPECT_EQ(testing::ReadFile(d_.Path("out/" + name + "/data.jsonl")), ref_out.at(name + "/data.jsonl")) << where;
      }
      ShardRecord rec = ShardState(Env::Default(), d_.Path("state"), shard).Read();
      if (rec.status == ShardStatus::kSuccess) {
        EXPECT_TRUE(pipeline::ReadCompletedShard(Env::Default(), d_.Path("out"), shard).has_value()) << where;
      }
    }
    if (testing::Exists(d_.Path("merged"))) { EXPECT_EQ(Diff(ref_merged, Snapshot(d_.Path("merged"))), "") << where; }

    // The restarted run converges to the fault-free output.
    Status again = RunAll(&env);
    ASSERT_TRUE(again.ok()) << where << ": " << again.ToString();
    EXPECT_EQ(Diff(ref_out, Snapshot(d_.Path("out"))), "") << where;
    EXPECT_EQ(Diff(ref_merged, Snapshot(d_.Path("merged"))), "") << where;
    for (int shard = 0; shard < 2; ++shard) {
      EXPECT_EQ(ShardState(Env::Default(), d_.Path("state"), shard).Read().status, ShardStatus::kSuccess) << where;
    }
  }
  EXPECT_GE(crashes, total_ - 3);
  EXPECT_GT(resumable, 0);
  EXPECT_GT(published, 0);
}

TEST_F(CrashConsistencyTest, ACrashAtEverySyncPointOfAModelFreeRunResumesToTheFaultFreeOutput) {
  CrashAtEverySyncPoint();
}

TEST_F(CrashConsistencyTest, ACrashAtEverySyncPointOfAModelRunResumesToTheFaultFreeOutput) {
  Load(true);
  CrashAtEverySyncPoint();
  EXPECT_TRUE(testing::Exists(d_.Path("merged/usage.jsonl")));
}

TEST_F(CrashConsistencyTest, ACrashAtEverySyncPointOfASecondRunThatRedoesFailedRowsKeepsItsShards) {
  CrashAtEverySyncPoint(/*redo=*/true);
}

TEST_F(CrashConsistencyTest, WithoutAnAtomicExchangeACrashAtEverySyncPointOfARepublishConverges) {
  CrashAtEverySyncPoint(/*redo=*/true, /*no_exchange=*/true);
}

TEST_F(CrashConsistencyTest, LeftoversOfAnEarlierCrashNeverBlockPublishing) {
  // A published shard, a stale `.tmp.partial.old` (crash in the rename-aside fallback) and a stale merge temp.
  for (bool exchange : {true, false}) {
    SCOPED_TRACE(exchange ? "with exchange" : "without exchange");
    Clear();
    testing::FaultEnv env(d_.path());
    env.set_exchange_unavailable(!exchange);
    ASSERT_TRUE(RunAll(&env).ok());
    const Tree ref = Snapshot(d_.Path("out"));
    testing::WriteFile(d_.Path("out/shard_0.tmp.partial.old/data.jsonl"), "{\"stale\":1}\n");
    testing::WriteFile(d_.Path("out/shard_0.tmp.partial.old/_mmirage.json"), "{}");
    testing::WriteFile(d_.Path("merged.tmp.old-host.1.x/data.jsonl"), "{\"stale\":1}\n");
    Status again = RunAll(&env);  // redoes the failed row: republishes shard 0 and 1
    ASSERT_TRUE(again.ok()) << again.ToString();
    EXPECT_EQ(Diff(ref, Snapshot(d_.Path("out"))), "");
    EXPECT_FALSE(testing::Exists(d_.Path("out/shard_0.tmp.partial.old")));
    EXPECT_EQ(testing::ReadLines(d_.Path("merged/data.jsonl")).size(), 24u);
  }
}

TEST_F(CrashConsistencyTest, TheFaultEnvDropsUnsyncedWritesAndUndoesUnsyncedRenames) {
  testing::WriteFile(d_.Path("keep/a"), "old");
  testing::WriteFile(d_.Path("other/x"), "");
  testing::FaultEnv env(d_.path());
  Env* e = &env;
  {
    auto f = e->NewWritableFile(d_.Path("keep/a"), /*append=*/true);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("+synced").ok());
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->Append("+lost").ok());
    ASSERT_TRUE((*f)->Close().ok());
  }
  ASSERT_TRUE(e->RenameFile(d_.Path("keep/a"), d_.Path("keep/b")).ok());    // no SyncDir: undone
  ASSERT_TRUE(WriteFileAtomically(e, d_.Path("other/c"), "durable").ok());  // synced file and directory
  ASSERT_TRUE(e->CreateDirs(d_.Path("new/sub")).ok());                      // never synced: gone
  ASSERT_TRUE(env.SimulateCrash().ok());
  EXPECT_EQ(testing::ReadFile(d_.Path("keep/a")), "old+synced");
  EXPECT_FALSE(testing::Exists(d_.Path("keep/b")));
  EXPECT_EQ(testing::ReadFile(d_.Path("other/c")), "durable");
  EXPECT_FALSE(testing::Exists(d_.Path("new")));
  // An armed crash fails the chosen sync point and every later write.
  env.CrashAtSyncPoint(2);
  auto f = e->NewWritableFile(d_.Path("keep/d"));
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Sync().ok());
  EXPECT_FALSE(e->SyncDir(d_.Path("keep")).ok());
  EXPECT_TRUE(env.crashed());
  EXPECT_FALSE((*f)->Append("x").ok());
  EXPECT_FALSE(e->RenameFile(d_.Path("other/c"), d_.Path("other/e")).ok());
}

}  // namespace
}  // namespace mmirage

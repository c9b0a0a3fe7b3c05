// A second run redoes the rows that failed in the first: it schedules them with the same options as the first
// pass (loading_params.batch_size widens the window of rows in flight) and keeps the rows that succeeded.
#include <gtest/gtest.h>

#include <atomic>

#include "config/config.h"
#include "engine/engine.h"
#include "pipeline/shard_runner.h"
#include "support/fake_engine.h"
#include "support/test_util.h"
#include "util/log.h"

namespace mmirage::pipeline {
namespace {

constexpr int kRows = 16;

TEST(ShardRunnerRedoTest, RedoingFailedRowsHonoursBatchSize) {
  struct RestoreLogLevel {  // later tests in this binary read the log
    LogLevel saved = GetLogLevel();
    ~RestoreLogLevel() { SetLogLevel(saved); }
  } restore;
  SetLogLevel(LogLevel::kError);  // the failed rows warn; the assertions say what matters
  testing::TempDir d;
  std::string rows;
  for (int i = 0; i < kRows; ++i) rows += "{\"id\":" + std::to_string(i) + "}\n";
  testing::WriteFile(d.Path("data.jsonl"), rows);
  testing::WriteFile(d.Path("fake.gguf"), "not read: the engine is injected");
  const std::string yaml = "processors: [{type: llm, server_args: {model_path: " + d.Path("fake.gguf") +
                           "}}]\n"
                           "loading_params:\n"
                           "  datasets: [{type: JSONL, path: " +
                           d.Path("data.jsonl") + ", output_dir: " + d.Path("out") +
                           ", output_format: jsonl}]\n"
                           "  batch_size: " +
                           std::to_string(kRows) +
                           "\n"
                           "  state_dir: " +
                           d.Path("state") +
                           "\n"
                           "processing_params:\n"
                           "  inputs: [{name: id, key: id}]\n"
                           "  outputs: [{name: a, type: llm, prompt: 'Q{{ id }}'}]\n"
                           "  remove_columns: true\n"
                           "  output_schema: {id: '{{ id }}', a: '{{ a }}'}\n"
                           "execution_params: {max_failed_rows: " +
                           std::to_string(kRows) + ", cache: off}\n";
  config::LoadOptions lo;
  lo.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto config = config::LoadConfigFromString(yaml, d.Path("cfg.yaml"), lo);
  ASSERT_TRUE(config.ok()) << config.status().ToString();

  ShardRunOptions o;
  o.env = Env::Default();
  o.config = &*config;
  o.quiet = true;
  // First run: every request fails as one that can never succeed (so it is not retried): each row is recorded as
  // failed and the shard is published with them.
  o.engine_factory = [](const config::Processor&, std::vector<std::string>*) {
    return Result<std::unique_ptr<engine::Engine>>(std::make_unique<testing::FakeEngine>(
        [](const engine::Request&, int) {
          engine::Completion c;
          c.finish = engine::FinishReason::kError;
          c.error = Status::InvalidArgument("the prompt does not fit");
          return c;
        },
        testing::FakeEngineOptions{.capacity = 1}));
  };
  auto first = RunShard(o);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->rows_failed, kRows);

  // Second run: one model slot, so the scheduler's own window is 4 rows; only batch_size can widen it to all 16.
  // The engine answers only once all 16 are queued (or, when they never are, after 2 s, so the run still ends).
  std::atomic<size_t> max_queued{0};
  o.engine_factory = [&max_queued](const config::Processor&, std::vector<std::string>*) {
    return Result<std::unique_ptr<engine::Engine>>(std::make_unique<testing::FakeEngine>(
        [](const engine::Request& r, int) {
          engine::Completion c;
          c.text = "answer to " + r.prompt;
          c.prompt_tokens = 1;
          c.completion_tokens = 1;
          return c;
        },
        testing::FakeEngineOptions{.capacity = 1,
                                   .hold_until_queued = kRows,
                                   .hold_give_up = std::chrono::milliseconds(2000),
                                   .max_queued_out = &max_queued}));
  };
  auto second = RunShard(o);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->rows_written, kRows);
  EXPECT_EQ(second->rows_failed, 0);
  // Every failed row was in flight at once: the window is batch_size (16), not 4 × the engine's capacity.
  EXPECT_EQ(max_queued.load(), static_cast<size_t>(kRows));
  EXPECT_EQ(testing::ReadLines(d.Path("out/shard_0/data.jsonl")).size(), static_cast<size_t>(kRows));
}

}  // namespace
}  // namespace mmirage::pipeline

#include "pipeline/stream_scheduler.h"

#include <gtest/gtest.h>

#include "config/config.h"
#include "data/json.h"
#include "support/fake_engine.h"
#include "support/test_util.h"

namespace mmirage::pipeline {
namespace {

// Completes requests on its own thread, newest first among those queued (so completions arrive out of order).
class FakeEngine : public testing::FakeEngine {
 public:
  explicit FakeEngine(Reply reply)
      : testing::FakeEngine(std::move(reply), {.capacity = 4, .load_seconds = 0.5, .reverse_batches = true}) {}
};

config::Config MakeConfig(const std::string& outputs, const std::string& schema) {
  std::string y =
      "processors: [{type: llm, server_args: {model_path: fake.gguf}}]\n"
      "loading_params:\n  datasets: [{type: JSONL, path: d.jsonl, output_dir: o}]\n"
      "processing_params:\n  inputs: [{name: i, key: i}]\n  outputs:\n" +
      outputs + "  remove_columns: true\n  output_schema: " + schema + "\n";
  config::LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(y, "t.yaml", o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

struct Harness {
  testing::TempDir dir;
  std::string all;
  std::vector<ProcessedBatch::Failure> failures;
  StreamTotals totals;

  Status Run(const config::Config& c, FakeEngine::Reply reply, int rows, size_t window, FakeEngine** engine_out) {
    std::string text;
    for (int i = 0; i < rows; ++i) text += "{\"i\":" + std::to_string(i) + "}\n";
    testing::WriteFile(dir.Path("d.jsonl"), text);
    FakeEngine* engine = nullptr;
    process::EngineFactory factory = [&](const config::Processor&, std::vector<std::string>*) {
      auto e = std::make_unique<FakeEngine>(reply);
      engine = e.get();
      return Result<std::unique_ptr<engine::Engine>>(std::move(e));
    };
    std::vector<std::string> warnings;
    auto gen = process::OutputGenerator::Create(Env::Default(), c, factory, &warnings);
    EXPECT_TRUE(gen.ok()) << gen.status().ToString();
    RowTransform t(&c, Env::Default(), "");
    RowStream stream(Env::Default(), DatasetPart{"", {dir.Path("d.jsonl")}}, RowRange{0, UINT64_MAX});
    StreamOptions so;
    so.window = window;
    so.flush_rows = 5;
    Status s = RunStreaming(
        &stream, t, gen->get(), so,
        [&](ProcessedBatch& b) {
          all += b.lines;
          for (auto& f : b.failures) failures.push_back(f);
          return Status::OK();
        },
        &totals);
    if (engine_out) *engine_out = engine;
    (*gen)->Shutdown();
    return s;
  }
};

engine::Completion Text(std::string s, int64_t prompt_tokens = 3, int64_t completion_tokens = 2) {
  engine::Completion c;
  c.text = std::move(s);
  c.prompt_tokens = prompt_tokens;
  c.completion_tokens = completion_tokens;
  return c;
}

TEST(StreamSchedulerTest, ChainedOutputsInInputOrderDespiteOutOfOrderCompletions) {
  auto c = MakeConfig(
      "    - {name: a, type: llm, prompt: 'A{{ i }}'}\n"
      "    - {name: b, type: llm, prompt: 'B{{ a }}'}\n",
      "{i: '{{ i }}', b: '{{ b }}'}");
  Harness h;
  Status s = h.Run(
      c, [](const engine::Request& r, int) { return Text(" <" + r.prompt + "> "); }, 200, 16, nullptr);
  ASSERT_TRUE(s.ok()) << s.message();
  std::string expected;
  for (int i = 0; i < 200; ++i)
    expected += "{\"i\":" + std::to_string(i) + ",\"b\":\"<B<A" + std::to_string(i) + ">>\"}\n";
  EXPECT_EQ(h.all, expected);
  EXPECT_TRUE(h.failures.empty());
  EXPECT_EQ(h.totals.generations, 400);
  EXPECT_EQ(h.totals.prompt_tokens, 1200);
  EXPECT_EQ(h.totals.completion_tokens, 800);
}

TEST(StreamSchedulerTest, TheWindowBoundsRowsInFlight) {
  auto c = MakeConfig("    - {name: a, type: llm, prompt: '{{ i }}'}\n", "{a: '{{ a }}'}");
  Harness h;
  FakeEngine* engine = nullptr;
  ASSERT_TRUE(h.Run(
                   c, [](const engine::Request& r, int) { return Text(r.prompt); }, 300, 7, &engine)
                  .ok());
  EXPECT_EQ(std::count(h.all.begin(), h.all.end(), '\n'), 300);
}

TEST(StreamSchedulerTest, InvalidJsonIsRegeneratedThenRecordedNeverBlank) {
  auto c = MakeConfig(
      "    - {name: j, type: llm, output_type: JSON, output_schema: {n: {type: int, min: 0, max: 9}},\n"
      "       prompt: '{{ i }}', generation_retries: 1}\n",
      "{i: '{{ i }}', n: '{{ j.n }}'}");
  Harness h;
  // Row i: odd rows return bad JSON first and good JSON on retry; rows divisible by 10 are always out of range.
  std::mutex mu;
  std::map<std::string, int> seen;
  auto reply = [&](const engine::Request& r, int) {
    int attempt;
    {
      std::lock_guard<std::mutex> l(mu);
      attempt = ++seen[r.prompt];
    }
    int i = std::stoi(r.prompt);
    EXPECT_NE(r.json_schema.find("\"maximum\":9"), std::string::npos);
    if (i % 10 == 0) return Text("{\"n\": 42}");
    if (i % 2 == 1 && attempt == 1) return Text("{\"n\": ");
    return Text("{\"n\": " + std::to_string(i % 10) + "}");
  };
  ASSERT_TRUE(h.Run(c, reply, 30, 8, nullptr).ok());
  ASSERT_EQ(h.failures.size(), 3u);
  for (const auto& f : h.failures) {
    EXPECT_EQ(f.row_index % 10, 0u);
    EXPECT_EQ(f.error.stage, Stage::kGenerate);
    EXPECT_NE(f.error.message.find("output 'j' (2 attempts): field 'n' = 42 is above the maximum 9"), std::string::npos)
        << f.error.message;
  }
  EXPECT_EQ(std::count(h.all.begin(), h.all.end(), '\n'), 27);
  EXPECT_NE(h.all.find("{\"i\":1,\"n\":\"1\"}"), std::string::npos) << h.all;
  EXPECT_EQ(h.all.find("\"n\":\"\""), std::string::npos);  // never blank
}

TEST(StreamSchedulerTest, EngineErrorsBecomeRowErrors) {
  auto c = MakeConfig("    - {name: a, type: llm, prompt: '{{ i }}', generation_retries: 0}\n", "{a: '{{ a }}'}");
  Harness h;
  auto reply = [](const engine::Request& r, int) {
    engine::Completion comp;
    if (r.prompt == "3") {
      comp.finish = engine::FinishReason::kError;
      comp.error = Status::InvalidArgument("prompt has 9000 tokens, more than the context of 4096");
      return comp;
    }
    return Text("ok");
  };
  ASSERT_TRUE(h.Run(c, reply, 10, 4, nullptr).ok());
  ASSERT_EQ(h.failures.size(), 1u);
  EXPECT_EQ(h.failures[0].row_index, 3u);
  EXPECT_NE(h.failures[0].error.message.find("more than the context"), std::string::npos);
  EXPECT_EQ(std::count(h.all.begin(), h.all.end(), '\n'), 9);
}

// RunStreaming borrows the generator: on an error it returns without shutting the generator down; its owner does.
TEST(StreamSchedulerTest, AnErrorLeavesTheBorrowedGeneratorToItsOwner) {
  auto c = MakeConfig("    - {name: a, type: llm, prompt: '{{ i }}'}\n", "{a: '{{ a }}'}");
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 50; ++i) text += "{\"i\":" + std::to_string(i) + "}\n";
  testing::WriteFile(dir.Path("d.jsonl"), text);
  struct CountingEngine : FakeEngine {
    CountingEngine(Reply r, std::atomic<int>* n) : FakeEngine(std::move(r)), shutdowns(n) {}
    void Shutdown() override {
      ++*shutdowns;
      FakeEngine::Shutdown();
    }
    std::atomic<int>* shutdowns;
  };
  std::atomic<int> shutdowns{0};
  process::EngineFactory factory = [&](const config::Processor&, std::vector<std::string>*) {
    auto reply = [](const engine::Request& r, int) { return Text(r.prompt); };
    return Result<std::unique_ptr<engine::Engine>>(std::make_unique<CountingEngine>(reply, &shutdowns));
  };
  std::vector<std::string> warnings;
  auto gen = process::OutputGenerator::Create(Env::Default(), c, factory, &warnings);
  ASSERT_TRUE(gen.ok()) << gen.status().ToString();
  RowTransform t(&c, Env::Default(), "");
  RowStream stream(Env::Default(), DatasetPart{"", {dir.Path("d.jsonl")}}, RowRange{0, UINT64_MAX});
  StreamOptions so;
  so.window = 16;
  so.flush_rows = 2;
  StreamTotals totals;
  Status s = RunStreaming(
      &stream, t, gen->get(), so, [](ProcessedBatch&) { return Status::IOError("disk full"); }, &totals);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(shutdowns.load(), 0);
  (*gen)->Shutdown();  // the owner's call; late completions of abandoned rows must find nothing freed
  EXPECT_EQ(shutdowns.load(), 1);
}

}  // namespace
}  // namespace mmirage::pipeline

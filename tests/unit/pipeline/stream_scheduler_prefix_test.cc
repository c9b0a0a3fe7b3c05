// The streaming scheduler with prefix order: dispatches are grouped by prompt prefix, bounded by the dispatch limit
// and the window, and the sink still receives rows in input order.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "pipeline/stream_scheduler.h"
#include "support/fake_engine.h"
#include "support/test_util.h"

namespace mmirage::pipeline {
namespace {

// Records the prompts in the order they are submitted and the most generations outstanding at once.
class RecordingEngine : public testing::FakeEngine {
 public:
  explicit RecordingEngine(Reply reply)
      : testing::FakeEngine(std::move(reply), {.capacity = 4, .reverse_batches = true}) {}
  void Submit(engine::Request r, engine::CompletionCallback done) override {
    {
      std::lock_guard<std::mutex> l(mu);
      prompts.push_back(r.prompt);
    }
    int now = ++outstanding;
    int seen = max_outstanding.load();
    while (now > seen && !max_outstanding.compare_exchange_weak(seen, now)) {}
    testing::FakeEngine::Submit(std::move(r), [this, done = std::move(done)](engine::Completion c) {
      --outstanding;
      done(std::move(c));
    });
  }
  std::mutex mu;
  std::vector<std::string> prompts;  // guarded by mu
  std::atomic<int> outstanding{0};
  std::atomic<int> max_outstanding{0};
};

config::Config PrefixConfig() {
  std::string y =
      "processors: [{type: llm, server_args: {model_path: fake.gguf}}]\n"
      "loading_params:\n  datasets: [{type: JSONL, path: d.jsonl, output_dir: o}]\n"
      "processing_params:\n  inputs: [{name: i, key: i}, {name: s, key: s}]\n"
      "  outputs: [{name: a, type: llm, prompt: 'SYSTEM {{ s }}|{{ i }}'}]\n"
      "  order: prefix\n  remove_columns: true\n  output_schema: {i: '{{ i }}', a: '{{ a }}'}\n";
  config::LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(y, "t.yaml", o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

// The number of times consecutive submissions change system prompt.
int GroupSwitches(const std::vector<std::string>& prompts) {
  int n = 0;
  for (size_t i = 1; i < prompts.size(); ++i) n += prompts[i].substr(0, 8) != prompts[i - 1].substr(0, 8);
  return n;
}

struct Outcome {
  std::string all;
  std::vector<std::string> prompts;
  int max_outstanding = 0;
  bool window_held = true;
};

Outcome RunRows(bool prefix_order, int rows, size_t window, size_t dispatch_limit) {
  config::Config c = PrefixConfig();
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < rows; ++i) text += "{\"i\":" + std::to_string(i) + ",\"s\":" + std::to_string(i % 4) + "}\n";
  testing::WriteFile(dir.Path("d.jsonl"), text);
  RecordingEngine* engine = nullptr;
  std::atomic<int> sunk{0};
  Outcome out;
  auto reply = [&](const engine::Request& r, int) {
    int i = std::stoi(r.prompt.substr(r.prompt.find('|') + 1));
    if (static_cast<size_t>(i) >= sunk.load() + window) out.window_held = false;
    engine::Completion comp;
    comp.text = "<" + r.prompt + ">";
    return comp;
  };
  process::EngineFactory factory = [&](const config::Processor&, std::vector<std::string>*) {
    auto e = std::make_unique<RecordingEngine>(reply);
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
  so.flush_rows = 3;
  so.prefix_order = prefix_order;
  so.dispatch_limit = dispatch_limit;
  StreamTotals totals;
  Status s = RunStreaming(
      &stream, t, gen->get(), so,
      [&](ProcessedBatch& b) {
        out.all += b.lines;
        sunk += b.rows + static_cast<int>(b.failures.size());
        return Status::OK();
      },
      &totals);
  EXPECT_TRUE(s.ok()) << s.ToString();
  (*gen)->Shutdown();
  out.prompts = engine->prompts;
  out.max_outstanding = engine->max_outstanding.load();
  return out;
}

TEST(StreamSchedulerPrefixTest, RowsReachTheSinkInInputOrder) {
  Outcome o = RunRows(true, 120, 16, 4);
  std::string expected;
  for (int i = 0; i < 120; ++i)
    expected += "{\"i\":" + std::to_string(i) + ",\"a\":\"<SYSTEM " + std::to_string(i % 4) + "|" + std::to_string(i) +
                ">\"}\n";
  EXPECT_EQ(o.all, expected);
  EXPECT_EQ(o.prompts.size(), 120u);
}

TEST(StreamSchedulerPrefixTest, DispatchesAreGroupedByPromptPrefix) {
  Outcome input = RunRows(false, 120, 16, 4);
  Outcome prefix = RunRows(true, 120, 16, 4);
  EXPECT_EQ(input.all, prefix.all);
  // Input order switches system prompt on every row; prefix order sends runs of the same prompt.
  EXPECT_EQ(GroupSwitches(input.prompts), 119);
  EXPECT_LT(GroupSwitches(prefix.prompts), 60) << GroupSwitches(prefix.prompts);
}

TEST(StreamSchedulerPrefixTest, TheDispatchLimitAndTheWindowBoundWhatIsInFlight) {
  Outcome o = RunRows(true, 200, 12, 3);
  EXPECT_LE(o.max_outstanding, 3);
  EXPECT_GE(o.max_outstanding, 1);
  EXPECT_TRUE(o.window_held) << "a row beyond the window was sent before the sink caught up";
  EXPECT_EQ(std::count(o.all.begin(), o.all.end(), '\n'), 200);
}

}  // namespace
}  // namespace mmirage::pipeline

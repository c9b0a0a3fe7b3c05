// The embedded llama engine on the synthetic tiny qwen2 model (random weights, real vocab and chat template).
// Greedy decoding makes every output a pure function of the prompt, so batching and prefix sharing can be
// checked by comparing texts.
#include "engine/llama_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "data/json.h"
#include "engine/engine.h"
#include "engine_test_util.h"
#include "support/test_util.h"

namespace mmirage::engine {
namespace {

using testing::Collector;
using testing::Greedy;
using testing::TestModelPath;
using testing::TinyOptions;

class LlamaEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    model_ = TestModelPath(&error);
    ASSERT_FALSE(model_.empty()) << error;
  }

  std::unique_ptr<Engine> Make(const LlamaEngineOptions& options) {
    auto engine = CreateLlamaEngine(options);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }

  // Submits every request at once and waits for all completions.
  static std::vector<Completion> RunAll(Engine& engine, const std::vector<Request>& requests,
                                        std::vector<size_t>* order = nullptr) {
    Collector collector(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) engine.Submit(requests[i], collector.For(i));
    EXPECT_TRUE(collector.Wait()) << "timed out waiting for completions";
    std::vector<Completion> out;
    for (size_t i = 0; i < requests.size(); ++i) out.push_back(collector.at(i));
    if (order) *order = collector.order();
    return out;
  }

  std::string model_;
};

std::vector<Request> VariedRequests() {
  const char* topics[] = {"the sea", "a red fox",        "tax law", "orbital mechanics",
                          "bread",   "the number seven", "Lisbon",  "quiet mornings"};
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i) {
    Request r = Greedy(std::string("Write one sentence about ") + topics[i] + ".", 6 + 5 * i);
    r.sampling.ignore_eos = true;
    requests.push_back(r);
  }
  return requests;
}

TEST_F(LlamaEngineTest, GreedyOutputDoesNotDependOnBatching) {
  std::vector<Request> requests = VariedRequests();

  LlamaEngineOptions alone = TinyOptions(model_, 1);
  alone.prefix_reuse = false;
  auto engine1 = Make(alone);
  ASSERT_TRUE(engine1);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Completion> one_by_one = RunAll(*engine1, requests);
  auto t1 = std::chrono::steady_clock::now();
  std::vector<Completion> again = RunAll(*engine1, requests);
  engine1.reset();

  LlamaEngineOptions together = TinyOptions(model_, 8);
  together.prefix_reuse = false;
  auto engine8 = Make(together);
  ASSERT_TRUE(engine8);
  auto t2 = std::chrono::steady_clock::now();
  std::vector<Completion> batched = RunAll(*engine8, requests);
  auto t3 = std::chrono::steady_clock::now();

  int64_t tokens = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(one_by_one[i].finish, FinishReason::kLength) << one_by_one[i].error.ToString();
    EXPECT_EQ(one_by_one[i].completion_tokens, requests[i].sampling.max_new_tokens);
    EXPECT_FALSE(one_by_one[i].text.empty());
    EXPECT_EQ(again[i].text, one_by_one[i].text);
    EXPECT_EQ(batched[i].text, one_by_one[i].text);
    EXPECT_EQ(batched[i].completion_tokens, one_by_one[i].completion_tokens);
    EXPECT_EQ(batched[i].prompt_tokens, one_by_one[i].prompt_tokens);
    tokens += batched[i].completion_tokens;
  }
  // Informational (speed is judged in bench/): generated tokens per second, 1 vs 8 sequences.
  const double s1 = std::chrono::duration<double>(t1 - t0).count();
  const double s8 = std::chrono::duration<double>(t3 - t2).count();
  std::printf("[ info ] %lld tokens: 1 sequence %.1f tok/s, 8 sequences %.1f tok/s\n", static_cast<long long>(tokens),
              static_cast<double>(tokens) / s1, static_cast<double>(tokens) / s8);
}

TEST_F(LlamaEngineTest, MaxNewTokensEndsWithLengthAfterExactlyThatMany) {
  auto engine = Make(TinyOptions(model_, 2));
  ASSERT_TRUE(engine);
  Request r = Greedy("Count to ten.", 7);
  r.sampling.ignore_eos = true;
  std::vector<Completion> out = RunAll(*engine, {r});
  EXPECT_EQ(out[0].finish, FinishReason::kLength);
  EXPECT_EQ(out[0].completion_tokens, 7);
  EXPECT_GT(out[0].prompt_tokens, 5);
  EXPECT_TRUE(out[0].error.ok());
}

TEST_F(LlamaEngineTest, StopStringCutsTheTextBeforeIt) {
  auto engine = Make(TinyOptions(model_, 2));
  ASSERT_TRUE(engine);
  Request r = Greedy("Tell me a story.", 40);
  r.sampling.ignore_eos = true;
  const std::string full = RunAll(*engine, {r})[0].text;
  ASSERT_GE(full.size(), 12u) << full;
  // A stop string taken from the middle of the unconstrained output.
  const std::string stop = full.substr(full.size() / 2, 3);
  const std::string expected = full.substr(0, full.find(stop));
  r.sampling.stop = {"never appears \x01", stop};
  Completion c = RunAll(*engine, {r})[0];
  EXPECT_EQ(c.finish, FinishReason::kStop);
  EXPECT_EQ(c.text, expected);
  EXPECT_LT(c.completion_tokens, 40);
}

TEST_F(LlamaEngineTest, JsonSchemaConstrainsTheOutput) {
  auto engine = Make(TinyOptions(model_, 4));
  ASSERT_TRUE(engine);
  const std::string schema =
      R"({"properties": {"count": {"title": "Count", "type": "integer", "minimum": 0, "maximum": 3},)"
      R"( "ok": {"title": "Ok", "type": "boolean"}}, "required": ["count", "ok"], "title": "OutputSchema",)"
      R"( "type": "object"})";
  std::vector<Request> requests;
  for (const char* p : {"How many apples?", "Is the sky green?", "Rate this from 0 to 3.", "Reply in JSON.",
                        "Describe a cat.", "What is 1+1?"}) {
    Request r = Greedy(p, 200);
    r.json_schema = schema;
    requests.push_back(r);
  }
  std::vector<Completion> out = RunAll(*engine, requests);
  for (size_t i = 0; i < out.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i) + ": " + out[i].text);
    ASSERT_EQ(out[i].finish, FinishReason::kStop) << out[i].error.ToString();
    Result<Value> v = ParseJson(out[i].text);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(v->is_object());
    const Value* count = v->Find("count");
    const Value* ok = v->Find("ok");
    ASSERT_NE(count, nullptr);
    ASSERT_NE(ok, nullptr);
    ASSERT_TRUE(count->is_int());
    EXPECT_GE(count->as_int(), 0);
    EXPECT_LE(count->as_int(), 3);
    EXPECT_TRUE(ok->is_bool());
  }
}

TEST_F(LlamaEngineTest, InvalidJsonSchemaFailsOnlyThatRequest) {
  auto engine = Make(TinyOptions(model_, 2));
  ASSERT_TRUE(engine);
  Request bad = Greedy("Hi", 4);
  bad.json_schema = "{not json";
  Request good = Greedy("Hi", 4);
  std::vector<Completion> out = RunAll(*engine, {bad, good});
  EXPECT_EQ(out[0].finish, FinishReason::kError);
  EXPECT_TRUE(out[0].error.IsInvalidArgument()) << out[0].error.ToString();
  EXPECT_NE(out[1].finish, FinishReason::kError) << out[1].error.ToString();
}

TEST_F(LlamaEngineTest, TooLongPromptFailsOnlyThatRequest) {
  LlamaEngineOptions o = TinyOptions(model_, 2);
  o.n_ctx_seq = 128;
  auto engine = Make(o);
  ASSERT_TRUE(engine);
  std::string long_prompt;
  for (int i = 0; i < 300; ++i) long_prompt += "word ";
  std::vector<Request> requests = {Greedy("Short one.", 5), Greedy(long_prompt, 5), Greedy("Another.", 5)};
  std::vector<Completion> out = RunAll(*engine, requests);
  EXPECT_EQ(out[1].finish, FinishReason::kError);
  EXPECT_NE(out[1].error.message().find("prompt has "), std::string::npos) << out[1].error.ToString();
  EXPECT_NE(out[1].error.message().find("more than the context of 127"), std::string::npos) << out[1].error.ToString();
  EXPECT_GT(out[1].prompt_tokens, 300);
  for (size_t i : {0u, 2u}) {
    EXPECT_NE(out[i].finish, FinishReason::kError) << out[i].error.ToString();
    EXPECT_GT(out[i].completion_tokens, 0);
  }
}

TEST_F(LlamaEngineTest, GenerationStopsWhenTheSequenceContextIsFull) {
  LlamaEngineOptions o = TinyOptions(model_, 2);
  o.n_ctx_seq = 64;
  auto engine = Make(o);
  ASSERT_TRUE(engine);
  Request r = Greedy("Go on forever.", 500);
  r.sampling.ignore_eos = true;
  Completion c = RunAll(*engine, {r})[0];
  EXPECT_EQ(c.finish, FinishReason::kLength);
  EXPECT_EQ(c.prompt_tokens + c.completion_tokens, 64 + 1);  // the last sampled token needs no position
}

std::vector<Request> SharedInstructionRequests() {
  std::string instruction = "You are a careful annotator. Read the passage and answer the question.";
  for (int i = 0; i < 30; ++i) {
    instruction += " Rule " + std::to_string(i) + ": keep answers short, factual and in plain English.";
  }
  std::vector<Request> requests;
  const char* questions[] = {"Who wrote it?",  "When?",       "Where is it set?", "Why does it end?",
                             "Name the hero.", "Is it long?", "What genre?",      "Any sequel?"};
  for (const char* q : questions) {
    Request r = Greedy(instruction + "\nQuestion: " + q, 12);
    r.sampling.ignore_eos = true;
    requests.push_back(r);
  }
  return requests;
}

TEST_F(LlamaEngineTest, PrefixReuseKeepsOutputsAndSkipsSharedTokens) {
  std::vector<Request> requests = SharedInstructionRequests();

  LlamaEngineOptions off = TinyOptions(model_, 4);
  off.prefix_reuse = false;
  auto engine_off = Make(off);
  ASSERT_TRUE(engine_off);
  std::vector<Completion> out_off = RunAll(*engine_off, requests);
  const EngineCounters c_off = GetEngineCounters(*engine_off);
  engine_off.reset();

  auto engine_on = Make(TinyOptions(model_, 4));
  ASSERT_TRUE(engine_on);
  std::vector<Completion> out_on = RunAll(*engine_on, requests);
  const EngineCounters c_on = GetEngineCounters(*engine_on);

  ASSERT_GE(out_off[0].prompt_tokens, 250);
  int64_t cached = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(out_on[i].text, out_off[i].text);
    EXPECT_EQ(out_on[i].prompt_tokens, out_off[i].prompt_tokens);
    EXPECT_EQ(out_off[i].cached_prompt_tokens, 0);
    // The first request may start before the second one shows what is shared; it then lends its cells.
    if (i > 0) { EXPECT_GT(out_on[i].cached_prompt_tokens, 200); }
    cached += out_on[i].cached_prompt_tokens;
  }
  EXPECT_EQ(c_off.prompt_tokens_reused, 0);
  EXPECT_EQ(c_on.prompt_tokens_reused, cached);
  const double ratio = static_cast<double>(c_on.prompt_tokens_evaluated) / c_off.prompt_tokens_evaluated;
  std::printf("[ info ] prompt tokens evaluated: prefix reuse on %lld, off %lld (ratio %.3f)\n",
              static_cast<long long>(c_on.prompt_tokens_evaluated),
              static_cast<long long>(c_off.prompt_tokens_evaluated), ratio);
  EXPECT_LE(ratio, 0.3);
}

TEST_F(LlamaEngineTest, FullKvCacheDropsTheSharedPrefixInsteadOfFailingRequests) {
  // 2 sequences of 256 positions share 512 cells. Requests 0 and 1 leave a ~200-token prefix behind, held
  // only by the prefix sequence; requests 2 and 3 then fill their whole context, which needs those cells.
  LlamaEngineOptions o = TinyOptions(model_, 2);
  o.n_ctx_seq = 256;
  auto engine = Make(o);
  ASSERT_TRUE(engine);
  std::string instruction;
  for (int i = 0; i < 40; ++i) instruction += " Rule " + std::to_string(i) + " holds.";
  std::vector<Request> first = {Greedy(instruction + " First?", 2), Greedy(instruction + " Second?", 2)};
  for (Request& r : first) r.raw_prompt = true;
  std::vector<Completion> out = RunAll(*engine, first);
  ASSERT_GT(out[1].cached_prompt_tokens, 150);

  std::vector<Request> fill = {Greedy("Alpha beta gamma.", 1000), Greedy("One two three four five.", 1000)};
  for (Request& r : fill) {
    r.raw_prompt = true;
    r.sampling.ignore_eos = true;
  }
  out = RunAll(*engine, fill);
  for (const Completion& c : out) {
    EXPECT_EQ(c.finish, FinishReason::kLength) << c.error.ToString();
    EXPECT_EQ(c.prompt_tokens + c.completion_tokens, 256 + 1);
  }
}

TEST_F(LlamaEngineTest, ConcurrentSubmittersGetTheSameResults) {
  std::vector<Request> requests;
  for (int i = 0; i < 12; ++i) requests.push_back(Greedy("Item " + std::to_string(i) + ": describe it.", 5));
  auto engine = Make(TinyOptions(model_, 4));
  ASSERT_TRUE(engine);
  std::vector<Completion> serial = RunAll(*engine, requests);

  Collector collector(requests.size());
  std::vector<std::thread> submitters;
  for (size_t t = 0; t < 3; ++t) {
    submitters.emplace_back([&, t] {
      for (size_t i = t; i < requests.size(); i += 3) engine->Submit(requests[i], collector.For(i));
    });
  }
  for (std::thread& th : submitters) th.join();
  ASSERT_TRUE(collector.Wait());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(collector.calls(i), 1);
    EXPECT_EQ(collector.at(i).text, serial[i].text) << "request " << i;
  }
}

// Requests 0 and 1 are long; the others are short. Returns the completion order.
std::vector<size_t> RunLongAndShort(Engine& engine) {
  std::vector<Request> requests;
  for (int i = 0; i < 10; ++i) {
    Request r = Greedy("Request number " + std::to_string(i) + ".", i < 2 ? 120 : 3);
    r.sampling.ignore_eos = true;
    requests.push_back(r);
  }
  Collector collector(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) engine.Submit(requests[i], collector.For(i));
  EXPECT_TRUE(collector.Wait());
  return collector.order();
}

TEST_F(LlamaEngineTest, FinishedSlotTakesTheNextRequestWithoutWaitingForTheBatch) {
  auto engine = Make(TinyOptions(model_, 4));
  ASSERT_TRUE(engine);
  std::vector<size_t> order = RunLongAndShort(*engine);
  ASSERT_EQ(order.size(), 10u);
  // The eight short requests cycle through the two free slots while the long ones run.
  EXPECT_TRUE((order[8] < 2) && (order[9] < 2)) << "long requests should finish last";
  auto pos = [&](size_t id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
  EXPECT_LT(pos(9), pos(1));
}

TEST_F(LlamaEngineTest, BatchBarrierMakesShortRequestsWaitForLongOnes) {
  LlamaEngineOptions o = TinyOptions(model_, 4);
  o.batch_barrier = true;
  auto engine = Make(o);
  ASSERT_TRUE(engine);
  std::vector<size_t> order = RunLongAndShort(*engine);
  ASSERT_EQ(order.size(), 10u);
  // Requests run in waves of at most 4 (a wave may be smaller: the loop can start before everything is
  // submitted), and a wave starts only when the previous one has finished: request 9 cannot share a wave with
  // request 1, so it waits for both long requests.
  auto pos = [&](size_t id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
  EXPECT_GT(pos(9), pos(0));
  EXPECT_GT(pos(9), pos(1));
}

TEST_F(LlamaEngineTest, ShutdownFinishesEveryPendingRequestOnce) {
  auto engine = Make(TinyOptions(model_, 1));
  ASSERT_TRUE(engine);
  const size_t n = 6;
  Collector collector(n + 1);
  for (size_t i = 0; i < n; ++i) {
    Request r = Greedy("Keep talking.", 100000);
    r.sampling.ignore_eos = true;
    engine->Submit(r, collector.For(i));
  }
  engine->Shutdown();
  engine->Shutdown();  // idempotent
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(collector.calls(i), 1) << "request " << i;
    EXPECT_EQ(collector.at(i).finish, FinishReason::kError);
    EXPECT_EQ(collector.at(i).error.message(), "engine shut down");
  }
  // After Shutdown the callback still runs exactly once, with the same error.
  engine->Submit(Greedy("Late.", 4), collector.For(n));
  EXPECT_EQ(collector.calls(n), 1);
  EXPECT_EQ(collector.at(n).finish, FinishReason::kError);
}

TEST_F(LlamaEngineTest, RawPromptSkipsTheChatTemplate) {
  auto engine = Make(TinyOptions(model_, 2));
  ASSERT_TRUE(engine);
  Request chat = Greedy("Hello there", 2);
  Request raw = chat;
  raw.raw_prompt = true;
  Request kwargs = chat;
  kwargs.chat_template_kwargs = Value(Value::Object{{"enable_thinking", Value(false)}});
  std::vector<Completion> out = RunAll(*engine, {chat, raw, kwargs});
  EXPECT_EQ(out[1].prompt_tokens, 2);                          // "Hello", " there"
  EXPECT_GT(out[0].prompt_tokens, out[1].prompt_tokens + 10);  // system prompt and role markers
  EXPECT_EQ(out[2].prompt_tokens, out[0].prompt_tokens);
  EXPECT_EQ(engine->Capacity(), 2);
  EXPECT_GT(engine->LoadSeconds(), 0.0);
}

TEST(LlamaEngineLoadTest, MissingModelFileIsNotFound) {
  LlamaEngineOptions o;
  o.model_path = "/nonexistent/dir/model.gguf";
  auto engine = CreateLlamaEngine(o);
  ASSERT_FALSE(engine.ok());
  EXPECT_TRUE(engine.status().IsNotFound());
  EXPECT_NE(engine.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

TEST(LlamaEngineLoadTest, NotAGgufFileIsInvalidArgument) {
  mmirage::testing::TempDir dir;
  mmirage::testing::WriteFile(dir.Path("model.gguf"), "this is not a model\n");
  LlamaEngineOptions o;
  o.model_path = dir.Path("model.gguf");
  auto engine = CreateLlamaEngine(o);
  ASSERT_FALSE(engine.ok());
  EXPECT_TRUE(engine.status().IsInvalidArgument());
  EXPECT_EQ(engine.status().message(),
            "cannot load model '" + o.model_path + "' (not a GGUF file or unsupported architecture)");
}

}  // namespace
}  // namespace mmirage::engine

// The OpenAI engine under admission control: rate limits configured or learned from headers, the adaptive
// window. Fake loop, fake clock.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "engine/openai_engine.h"
#include "unit/engine/openai_fake_loop.h"

namespace mmirage::engine {
namespace {

using testing::FakeHttpLoop;

constexpr const char* kOkBody =
    R"({"choices":[{"finish_reason":"stop","message":{"content":"ok"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}})";

class OpenAiAdmissionTest : public ::testing::Test {
 protected:
  std::unique_ptr<Engine> Make(OpenAiEngineOptions o) {
    o.base_url = "http://127.0.0.1:9/v1";
    o.model = "m";
    o.loop = &loop_;
    o.jitter_seed = 7;
    o.backoff_base_seconds = 0.001;
    auto e = CreateOpenAiEngine(o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return std::move(*e);
  }
  void Submit(Engine* e, int n) {
    for (int k = 0; k < n; ++k) {
      size_t i = results_.size();
      results_.emplace_back();
      Request r;
      r.prompt = "hi";
      r.sampling.max_new_tokens = 10;
      e->Submit(r, [this, i](Completion c) { results_[i] = std::move(c); });
    }
    loop_.RunPosted();
  }
  void RespondOk(HeaderList headers = {}) {
    HttpResponse r;
    r.status_code = 200;
    r.body = kOkBody;
    r.rate_limit_headers = std::move(headers);
    loop_.Respond(std::move(r));
  }
  static uint64_t S(double s) { return static_cast<uint64_t>(s * 1e6); }

  FakeHttpLoop loop_;
  std::vector<std::optional<Completion>> results_;
};

TEST_F(OpenAiAdmissionTest, ConfiguredRequestRateSpacesTheRequests) {
  OpenAiEngineOptions o;
  o.requests_per_minute = 120;  // 2/s (× 0.97 headroom), a burst of one
  auto e = Make(o);
  Submit(e.get(), 5);
  EXPECT_EQ(loop_.sends(), 1u);
  RespondOk();
  loop_.Advance(S(0.45));
  EXPECT_EQ(loop_.sends(), 1u);
  loop_.Advance(S(0.1));
  EXPECT_EQ(loop_.sends(), 2u);
  loop_.Advance(S(1.1));
  EXPECT_EQ(loop_.sends(), 4u);
}

TEST_F(OpenAiAdmissionTest, TokenRateCountsPromptAndMaxTokens) {
  OpenAiEngineOptions o;
  o.tokens_per_minute = 60 * 11;  // 11 tokens/s: one request ("hi" → 1 + 10 max tokens) per second
  auto e = Make(o);
  Submit(e.get(), 3);
  EXPECT_EQ(loop_.sends(), 1u);
  loop_.Advance(S(0.9));
  EXPECT_EQ(loop_.sends(), 1u);
  loop_.Advance(S(0.2));
  EXPECT_EQ(loop_.sends(), 2u);
}

TEST_F(OpenAiAdmissionTest, LimitsAreLearnedFromTheFirstAnswer) {
  OpenAiEngineOptions o;
  o.max_concurrency = 2;
  auto e = Make(o);
  Submit(e.get(), 6);
  EXPECT_EQ(loop_.sends(), 2u);
  RespondOk({{"x-ratelimit-limit-requests", "60"}, {"x-ratelimit-remaining-requests", "58"}});
  // 1/s from now on: the freed slot waits for the bucket.
  EXPECT_EQ(loop_.sends(), 2u);
  loop_.Advance(S(1.1));
  EXPECT_EQ(loop_.sends(), 3u);
}

TEST_F(OpenAiAdmissionTest, AutoConcurrencyHalvesOn429AndStillFinishes) {
  OpenAiEngineOptions o;
  o.adaptive_concurrency = true;
  o.max_concurrency = 64;
  auto e = Make(o);
  Submit(e.get(), 30);
  EXPECT_EQ(loop_.sent().size(), 8u);  // the initial window
  loop_.RespondStatus(429, "", "0");
  // Window 4: the 429'd request waits for its retry, 7 are still out, nothing new goes.
  EXPECT_EQ(loop_.sent().size(), 7u);
  for (int i = 0; i < 3; ++i) RespondOk();
  EXPECT_EQ(loop_.sent().size(), 4u);
  RespondOk();
  EXPECT_EQ(loop_.sent().size(), 4u);  // 3 left under the window of 4: one more went
  for (int guard = 0; guard < 1000 && !loop_.sent().empty(); ++guard) {
    RespondOk();
    loop_.Advance(S(0.01));
  }
  for (const auto& r : results_) ASSERT_TRUE(r.has_value() && r->error.ok());
}

}  // namespace
}  // namespace mmirage::engine

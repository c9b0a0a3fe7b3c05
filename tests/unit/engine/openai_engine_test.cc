// The OpenAI engine's scheduling and fault handling, on a fake loop (fake clock, scripted responses).
#include "engine/openai_engine.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "data/json.h"
#include "unit/engine/openai_fake_loop.h"

namespace mmirage::engine {
namespace {

using testing::FakeHttpLoop;

constexpr const char* kOkBody =
    R"({"choices":[{"finish_reason":"stop","message":{"content":"ok"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}})";

class OpenAiEngineTest : public ::testing::Test {
 protected:
  std::unique_ptr<Engine> Make(OpenAiEngineOptions o = {}) {
    if (o.base_url.empty()) o.base_url = "http://127.0.0.1:9/v1/";
    if (o.model.empty()) o.model = "m";
    o.loop = &loop_;
    o.jitter_seed = 7;
    auto e = CreateOpenAiEngine(o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return std::move(*e);
  }
  // Submits a request whose completion lands in results_[i].
  void Submit(Engine* e, const std::string& prompt = "hi") {
    size_t i = results_.size();
    results_.emplace_back();
    Request r;
    r.prompt = prompt;
    e->Submit(r, [this, i](Completion c) { results_[i] = std::move(c); });
    loop_.RunPosted();
  }
  static uint64_t S(double s) { return static_cast<uint64_t>(s * 1e6); }

  FakeHttpLoop loop_;
  std::vector<std::optional<Completion>> results_;
};

TEST_F(OpenAiEngineTest, AtMostMaxConcurrencyRequestsAreInFlight) {
  OpenAiEngineOptions o;
  o.max_concurrency = 3;
  auto e = Make(o);
  EXPECT_EQ(e->Capacity(), 3);
  for (int i = 0; i < 10; ++i) Submit(e.get());
  EXPECT_EQ(loop_.sent().size(), 3u);
  loop_.RespondStatus(200, kOkBody);
  EXPECT_EQ(loop_.sent().size(), 3u);  // the next one took the free slot
  EXPECT_EQ(loop_.sends(), 4u);
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_EQ(results_[0]->text, "ok");
  EXPECT_EQ(results_[0]->finish, FinishReason::kStop);
  EXPECT_EQ(results_[0]->prompt_tokens, 5);
  EXPECT_EQ(results_[0]->completion_tokens, 2);
  while (!loop_.sent().empty()) loop_.RespondStatus(200, kOkBody);
  for (const auto& r : results_) ASSERT_TRUE(r.has_value() && r->error.ok());
}

TEST_F(OpenAiEngineTest, RequestsGoToTheEndpointWithTheBearerKey) {
  OpenAiEngineOptions o;
  o.api_key = "sk-secret";
  auto e = Make(o);
  Submit(e.get(), "question");
  ASSERT_EQ(loop_.sent().size(), 1u);
  const HttpRequest& r = loop_.sent()[0].request;
  EXPECT_EQ(r.url, "http://127.0.0.1:9/v1/chat/completions");  // trailing '/' of base_url dropped
  EXPECT_EQ(r.method, "POST");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0], "Authorization: Bearer sk-secret");
  EXPECT_EQ(ParseJson(r.body)->Find("messages")->as_array()[0].Find("content")->as_string(), "question");
  EXPECT_DOUBLE_EQ(r.timeout_seconds, 600);
}

TEST_F(OpenAiEngineTest, ServerErrorsAreRetriedAfterAJitteredBackoff) {
  OpenAiEngineOptions o;
  o.backoff_base_seconds = 1;
  auto e = Make(o);
  Submit(e.get());
  loop_.RespondStatus(500, R"({"error":{"message":"boom"}})");
  EXPECT_TRUE(loop_.sent().empty());
  ASSERT_EQ(loop_.delays().size(), 1u);
  EXPECT_LE(loop_.delays()[0], S(1));  // full jitter: [0, base)
  loop_.Advance(loop_.delays()[0]);
  ASSERT_EQ(loop_.sent().size(), 1u);  // resent
  loop_.RespondStatus(503, "");
  ASSERT_EQ(loop_.delays().size(), 2u);
  EXPECT_LE(loop_.delays()[1], S(2));  // second retry: [0, 2 × base)
  loop_.Advance(S(2));
  loop_.RespondStatus(200, kOkBody);
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_TRUE(results_[0]->error.ok());
  EXPECT_EQ(results_[0]->text, "ok");
}

TEST_F(OpenAiEngineTest, RetryAfterIsHonoured) {
  auto e = Make();
  Submit(e.get());
  loop_.RespondStatus(429, "slow down", "7");
  loop_.Advance(S(6.9));
  EXPECT_TRUE(loop_.sent().empty());
  loop_.Advance(S(0.2));
  EXPECT_EQ(loop_.sent().size(), 1u);
}

TEST_F(OpenAiEngineTest, AWaitingRetryDoesNotHoldAConcurrencySlot) {
  OpenAiEngineOptions o;
  o.max_concurrency = 1;
  auto e = Make(o);
  Submit(e.get(), "a");
  Submit(e.get(), "b");
  loop_.RespondStatus(429, "", "100");  // "a" waits 100 s
  ASSERT_EQ(loop_.sent().size(), 1u);   // "b" goes meanwhile
  EXPECT_NE(loop_.sent()[0].request.body.find("\"b\""), std::string::npos);
  loop_.RespondStatus(200, kOkBody);
  EXPECT_TRUE(results_[1].has_value());
  EXPECT_FALSE(results_[0].has_value());
}

TEST_F(OpenAiEngineTest, GivesUpAfterMaxRetriesWithTheLastError) {
  OpenAiEngineOptions o;
  o.max_retries = 2;
  auto e = Make(o);
  Submit(e.get());
  loop_.RespondStatus(502, "bad gateway");
  loop_.Advance(S(60));
  loop_.RespondTransport(HttpTransport::kTimeout);
  loop_.Advance(S(60));
  loop_.RespondTransport(HttpTransport::kBroken, "Connection reset by peer");
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_EQ(results_[0]->finish, FinishReason::kError);
  EXPECT_TRUE(results_[0]->error.IsUnavailable());
  EXPECT_EQ(results_[0]->error.message(), "connection broken (Connection reset by peer) (gave up after 3 attempts)");
  EXPECT_EQ(loop_.sends(), 3u);
}

TEST_F(OpenAiEngineTest, TimeoutsAreRetried) {
  OpenAiEngineOptions o;
  o.max_retries = 0;
  o.timeout_seconds = 2.5;
  auto e = Make(o);
  Submit(e.get());
  loop_.RespondTransport(HttpTransport::kTimeout);
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_EQ(results_[0]->error.message(), "no response within 2.5 s (timeout_seconds) (gave up after 1 attempt)");
}

TEST_F(OpenAiEngineTest, ClientErrorsAreNotRetried) {
  auto e = Make();
  Submit(e.get());
  loop_.RespondStatus(400, R"({"error":{"message":"the request exceeds the available context size"}})");
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_TRUE(results_[0]->error.IsInvalidArgument());
  EXPECT_EQ(results_[0]->error.message(), "HTTP 400: the request exceeds the available context size");
  EXPECT_EQ(loop_.sends(), 1u);
  EXPECT_TRUE(loop_.delays().empty());
}

TEST_F(OpenAiEngineTest, AnUnreachableEndpointFailsEverythingFastAfterTheDownTimeout) {
  OpenAiEngineOptions o;
  o.base_url = "http://127.0.0.1:9/v1";
  o.max_retries = 1000;
  o.down_timeout_seconds = 10;
  o.backoff_base_seconds = 1;
  o.backoff_max_seconds = 2;
  o.max_concurrency = 2;
  auto e = Make(o);
  for (int i = 0; i < 4; ++i) Submit(e.get());  // 2 in flight, 2 queued
  // Connection refused, again and again: before 10 s nothing fails.
  int rounds = 0;
  while (!results_[0].has_value() && rounds++ < 100) {
    while (!loop_.sent().empty()) loop_.RespondTransport(HttpTransport::kConnect, "Connection refused");
    if (!results_[0].has_value()) loop_.Advance(S(2));
  }
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_GE(rounds, 4);  // it took the down timeout, not one failure
  for (const auto& r : results_) {
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->error.IsUnavailable());
    EXPECT_EQ(r->error.message().rfind("endpoint http://127.0.0.1:9/v1 unreachable for 1", 0), 0u)
        << r->error.message();
    EXPECT_NE(r->error.message().find("down_timeout_seconds=10"), std::string::npos);
  }
  // New requests fail at once, without a transfer.
  size_t sends = loop_.sends();
  Submit(e.get());
  ASSERT_TRUE(results_.back().has_value());
  EXPECT_TRUE(results_.back()->error.IsUnavailable());
  EXPECT_EQ(loop_.sends(), sends);
}

TEST_F(OpenAiEngineTest, AnyHttpResponseResetsTheDownClock) {
  OpenAiEngineOptions o;
  o.max_retries = 1000;
  o.down_timeout_seconds = 10;
  o.backoff_max_seconds = 1;
  auto e = Make(o);
  Submit(e.get());
  for (int i = 0; i < 30; ++i) {  // 60 s of alternating refusals and 503s: reachable, never "down"
    if (i % 2 == 0) {
      loop_.RespondTransport(HttpTransport::kConnect);
    } else {
      loop_.RespondStatus(503, "");
    }
    loop_.Advance(S(2));
  }
  EXPECT_FALSE(results_[0].has_value());
  loop_.RespondStatus(200, kOkBody);
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_TRUE(results_[0]->error.ok());
}

TEST_F(OpenAiEngineTest, ShutdownFailsPendingRequestsAndLaterSubmitsAnswerAtOnce) {
  OpenAiEngineOptions o;
  o.max_concurrency = 1;
  auto e = Make(o);
  Submit(e.get());
  Submit(e.get());
  Submit(e.get());
  loop_.RespondStatus(503, "");  // the first now waits for a retry; the second is in flight; the third queued
  e->Shutdown();
  for (const auto& r : results_) {
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->error.message(), "engine shut down");
  }
  bool called = false;
  Request r;
  e->Submit(r, [&](Completion c) {
    called = true;
    EXPECT_TRUE(c.error.IsUnavailable());
  });
  EXPECT_TRUE(called);
  e->Shutdown();  // idempotent
}

TEST_F(OpenAiEngineTest, AMalformedSuccessIsRetried) {
  OpenAiEngineOptions o;
  o.max_retries = 1;
  auto e = Make(o);
  Submit(e.get());
  loop_.RespondStatus(200, "{\"choices\":");
  loop_.Advance(S(10));
  loop_.RespondStatus(200, kOkBody);
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_EQ(results_[0]->text, "ok");
}

TEST_F(OpenAiEngineTest, AnInvalidSchemaFailsThroughTheCallback) {
  auto e = Make();
  results_.emplace_back();
  Request r;
  r.json_schema = "{";
  e->Submit(r, [this](Completion c) { results_[0] = std::move(c); });
  EXPECT_FALSE(results_[0].has_value());  // not on the caller's thread
  loop_.RunPosted();
  ASSERT_TRUE(results_[0].has_value());
  EXPECT_TRUE(results_[0]->error.IsInvalidArgument());
  EXPECT_EQ(loop_.sends(), 0u);
}

TEST_F(OpenAiEngineTest, OptionsAreChecked) {
  OpenAiEngineOptions o;
  o.loop = &loop_;
  EXPECT_TRUE(CreateOpenAiEngine(o).status().IsInvalidArgument());  // no base_url
  o.base_url = "http://x/v1";
  o.max_concurrency = 0;
  EXPECT_TRUE(CreateOpenAiEngine(o).status().IsInvalidArgument());
}

}  // namespace
}  // namespace mmirage::engine

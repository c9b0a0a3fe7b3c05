// Generation cache keys: what changes a key and what does not.
#include "process/cache_key.h"

#include <gtest/gtest.h>

#include "process/batch_request.h"
#include "support/test_util.h"

namespace mmirage::process {
namespace {

engine::Request Greedy() {
  engine::Request r;
  r.prompt = "Summarise: hello";
  r.sampling.temperature = 0;
  r.sampling.max_new_tokens = 32;
  return r;
}

TEST(CacheKeyTest, EverythingThatDecidesAGenerationChangesTheKey) {
  const std::string id = "model-a";
  const std::string base = RequestKey(id, Greedy());
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(RequestKey(id, Greedy()), base);
  EXPECT_NE(RequestKey("model-b", Greedy()), base);
  auto changed = [&](auto edit) {
    engine::Request r = Greedy();
    edit(r);
    return RequestKey(id, r) != base;
  };
  EXPECT_TRUE(changed([](engine::Request& r) { r.prompt += " "; }));
  EXPECT_TRUE(changed([](engine::Request& r) { r.raw_prompt = true; }));
  EXPECT_TRUE(changed([](engine::Request& r) { r.sampling.max_new_tokens = 31; }));
  EXPECT_TRUE(changed([](engine::Request& r) { r.sampling.stop = {"\n"}; }));
  EXPECT_TRUE(changed([](engine::Request& r) { r.sampling.repetition_penalty = 1.1; }));
  EXPECT_TRUE(changed([](engine::Request& r) { r.sampling.temperature = 0.7; }));
  EXPECT_TRUE(changed([](engine::Request& r) { r.json_schema = "{\"type\":\"object\"}"; }));
  EXPECT_TRUE(changed([](engine::Request& r) {
    r.chat_template_kwargs = Value::EmptyObject();
    r.chat_template_kwargs.Set("enable_thinking", false);
  }));
  // Greedy decoding does not read the seed or the distribution knobs.
  EXPECT_FALSE(changed([](engine::Request& r) { r.sampling.seed = 5; }));
  EXPECT_FALSE(changed([](engine::Request& r) { r.sampling.top_p = 0.5; }));
}

TEST(CacheKeyTest, SampledRequestsDependOnSeedAndKnobs) {
  engine::Request a = Greedy();
  a.sampling.temperature = 0.8;
  a.sampling.seed = 1;
  engine::Request b = a;
  b.sampling.seed = 2;
  EXPECT_NE(RequestKey("m", a), RequestKey("m", b));
  b = a;
  b.sampling.top_p = 0.9;
  EXPECT_NE(RequestKey("m", a), RequestKey("m", b));
  EXPECT_TRUE(IsDeterministic(a.sampling));
  a.sampling.seed.reset();
  EXPECT_FALSE(IsDeterministic(a.sampling));
  EXPECT_TRUE(IsDeterministic(Greedy().sampling));
}

TEST(CacheKeyTest, ModelIdentityFollowsTheFileAndTheEndpoint) {
  mmirage::testing::TempDir d;
  config::Processor p;
  p.type = "llm";
  p.llm.backend = "llama";
  p.llm.model_path = d.Path("m.gguf");
  mmirage::testing::WriteFile(p.llm.model_path, std::string(1000, 'a'));
  auto a = ModelIdentity(Env::Default(), p, p.llm.model_path);
  ASSERT_TRUE(a.ok()) << a.status().message();
  mmirage::testing::WriteFile(p.llm.model_path, std::string(999, 'a') + "b");  // same size, other bytes
  auto b = ModelIdentity(Env::Default(), p, p.llm.model_path);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_FALSE(ModelIdentity(Env::Default(), p, d.Path("missing.gguf")).ok());

  config::Processor o;
  o.type = "llm";
  o.llm.backend = "openai";
  o.llm.endpoint = config::EndpointConfig{};
  o.llm.endpoint->base_url = "http://a/v1";
  o.llm.endpoint->model = "m1";
  auto x = ModelIdentity(Env::Default(), o, "");
  o.llm.endpoint->model = "m2";
  auto y = ModelIdentity(Env::Default(), o, "");
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_NE(*x, *y);
}


config::BatchApiProcessor OpenAiBatch() {
  config::BatchApiProcessor p;
  p.provider = "openai";
  p.model = "gpt-4.1-mini";
  p.temperature = 0;
  return p;
}

Value BatchReq(const config::BatchApiProcessor& p, const std::string& custom_id, const std::string& prompt,
               std::vector<std::string> schema = {}) {
  BatchPrompt in;
  in.custom_id = custom_id;
  in.prompt = prompt;
  in.expected_schema = std::move(schema);
  auto r = BuildBatchRequest(p, Env::Default(), in);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

TEST(BatchCacheKeyTest, TheRequestAsSentDecidesTheKeyNotItsCustomId) {
  config::BatchApiProcessor p = OpenAiBatch();
  const std::string base = BatchRequestKey(p, BatchReq(p, "qa-text-s0-d0p0-r1", "Ask: x"));
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(BatchRequestKey(p, BatchReq(p, "qa-text-s3-d1p0-r9", "Ask: x")), base);  // another row, same request
  EXPECT_NE(BatchRequestKey(p, BatchReq(p, "a", "Ask: y")), base);
  EXPECT_NE(BatchRequestKey(p, BatchReq(p, "a", "Ask: x", {"question"})), base);  // the schema is sent
  config::BatchApiProcessor m = p;
  m.model = "gpt-4.1";
  EXPECT_NE(BatchRequestKey(m, BatchReq(m, "a", "Ask: x")), base);
  config::BatchApiProcessor s = p;
  s.seed = 3;
  EXPECT_NE(BatchRequestKey(s, BatchReq(s, "a", "Ask: x")), base);
  config::BatchApiProcessor u = p;
  u.base_url = "http://127.0.0.1:9/v1";
  EXPECT_NE(BatchRequestKey(u, BatchReq(u, "a", "Ask: x")), base);  // another endpoint
  config::BatchApiProcessor e = p;
  e.batch_endpoint = "/v1/responses";
  EXPECT_NE(BatchRequestKey(e, BatchReq(e, "a", "Ask: x")), base);
  config::BatchApiProcessor an;
  an.provider = "anthropic";
  an.model = "claude-haiku-4-5";
  an.temperature = 0;
  const std::string ak = BatchRequestKey(an, BatchReq(an, "a", "Ask: x"));
  EXPECT_EQ(ak.size(), 32u);
  EXPECT_NE(ak, base);
  config::BatchApiProcessor an2 = an;
  an2.max_tokens = 100;
  EXPECT_NE(BatchRequestKey(an2, BatchReq(an2, "a", "Ask: x")), ak);
  EXPECT_EQ(BatchRequestKey(p, Value::EmptyObject()), "");
}

TEST(BatchCacheKeyTest, OnlyTemperatureZeroOrAnOpenAiSeedIsDeterministic) {
  config::BatchApiProcessor p = OpenAiBatch();
  EXPECT_TRUE(IsBatchDeterministic(p));
  p.temperature.reset();
  EXPECT_FALSE(IsBatchDeterministic(p));  // the provider's default temperature
  p.seed = 1;
  EXPECT_TRUE(IsBatchDeterministic(p));
  p.temperature = 0.7;
  EXPECT_TRUE(IsBatchDeterministic(p));
  config::BatchApiProcessor a;
  a.provider = "anthropic";
  EXPECT_FALSE(IsBatchDeterministic(a));
  a.temperature = 0.5;
  EXPECT_FALSE(IsBatchDeterministic(a));
  a.temperature = 0;
  EXPECT_TRUE(IsBatchDeterministic(a));
}

}  // namespace
}  // namespace mmirage::process

// Generation cache keys: what changes a key and what does not.
#include "process/cache_key.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mmirage::process

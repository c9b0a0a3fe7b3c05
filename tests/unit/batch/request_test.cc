#include "batch/request.h"

#include <gtest/gtest.h>

#include "data/json.h"
#include "batch/chunker.h"
#include "batch/provider.h"
#include "util/sha.h"

namespace mmirage::batch {
namespace {

TEST(PyJsonTest, MatchesPythonJsonDumpsSeparatorsAndEscapes) {
  auto v = ParseJson(R"({"b":[1,2.5,true,null],"a":"é \"q\" \u0001 🎉","c":{}})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(PyJson(*v, true), R"({"b":[1,2.5,true,null],"a":"é \"q\" \u0001 🎉","c":{}})");
  EXPECT_EQ(PyJson(*v, false), R"({"b": [1, 2.5, true, null], "a": "é \"q\" \u0001 🎉", "c": {}})");
  EXPECT_EQ(PyJson(*v, true, true), R"({"a":"é \"q\" \u0001 🎉","b":[1,2.5,true,null],"c":{}})");
}

TEST(AnthropicCustomIdTest, ValidIdsAreKeptOthersSanitisedAndHashed) {
  EXPECT_EQ(*NormalizeAnthropicCustomId("qa-text-s0-d0p0-r3"), "qa-text-s0-d0p0-r3");
  // Python: "a.b" → "a_b-" + sha1("a.b")[:8]
  EXPECT_EQ(*NormalizeAnthropicCustomId("a.b"), "a_b-" + Sha1Hex("a.b").substr(0, 8));
  std::string longid(70, 'x');
  EXPECT_EQ(*NormalizeAnthropicCustomId(longid), std::string(55, 'x') + "-" + Sha1Hex(longid).substr(0, 8));
  EXPECT_EQ(*NormalizeAnthropicCustomId("  padded  "), "padded");
  EXPECT_FALSE(NormalizeAnthropicCustomId("   ").ok());
  EXPECT_EQ(NormalizeAnthropicCustomId(" ").status().message(), "custom_id must be a non-empty string");
}

TEST(ImageMimeTest, FollowsPythonMimetypes) {
  EXPECT_EQ(GuessImageMimeType("/a/b.png"), "image/png");
  EXPECT_EQ(GuessImageMimeType("x.JPG"), "image/jpeg");
  EXPECT_EQ(GuessImageMimeType("x.webp"), "image/webp");
  EXPECT_EQ(GuessImageMimeType("x.unknown"), "");
  EXPECT_EQ(GuessImageMimeType("noext"), "");
}

TEST(BuildBatchRequestTest, AnthropicRejectsAMissingLocalImage) {
  config::BatchApiProcessor p;
  p.provider = "anthropic";
  p.model = "claude-haiku-4-5";
  BatchPrompt in{"id-1", "hello", {"/no/such/file.png"}, {}};
  auto r = BuildBatchRequest(p, Env::Default(), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "Image path does not exist: /no/such/file.png");
  in.images = {"data:image/bmp;base64,AAAA"};
  r = BuildBatchRequest(p, Env::Default(), in);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Unsupported image media type 'image/bmp'"), std::string::npos);
  in.images = {"data:image/png,AAAA"};
  EXPECT_EQ(BuildBatchRequest(p, Env::Default(), in).status().message(), "Data URI must be base64 encoded");
  in.images = {"https://example.com/x.png"};
  auto ok = BuildBatchRequest(p, Env::Default(), in);
  ASSERT_TRUE(ok.ok());
  EXPECT_NE(PyJson(*ok, true).find(R"({"type":"image","source":{"type":"url","url":"https://example.com/x.png"}})"),
            std::string::npos);
}

TEST(BuildBatchRequestTest, AnthropicKeysInTheOriginalsOrderAndYamlIntsStayInts) {
  config::BatchApiProcessor p;
  p.provider = "anthropic";
  p.model = "m";
  p.max_tokens = 16;
  p.temperature = 1;
  p.temperature_is_int = true;
  auto r = BuildBatchRequest(p, Env::Default(), BatchPrompt{"a.b", "hi", {}, {"x"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(PyJson(*r, true), R"({"custom_id":"a_b-)" + Sha1Hex("a.b").substr(0, 8) +
                                  R"(","params":{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],)"
                                  R"("model":"m","max_tokens":16,"temperature":1,"output_config":{"format":{"type":)"
                                  R"("json_schema","schema":{"type":"object","properties":{"x":{"type":"string"}},)"
                                  R"("required":["x"],"additionalProperties":false}}}}})");
  p.temperature_is_int = false;
  r = BuildBatchRequest(p, Env::Default(), BatchPrompt{"id", "hi", {}, {}});
  EXPECT_NE(PyJson(*r, true).find(R"("temperature":1.0})"), std::string::npos) << PyJson(*r, true);
}

TEST(BuildBatchRequestTest, OpenAiLeavesMissingPathsAndUrlsAlone) {
  config::BatchApiProcessor p;
  p.provider = "openai";
  p.model = "gpt-4o-mini";
  BatchPrompt in{"id-1", "hi", {"/no/such.png", "http://x/y.jpg"}, {"q"}};
  auto r = BuildBatchRequest(p, Env::Default(), in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(
      PyJson(*r, true),
      R"({"custom_id":"id-1","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user",)"
      R"("content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"/no/such.png"}},)"
      R"({"type":"image_url","image_url":{"url":"http://x/y.jpg"}}]}],"model":"gpt-4o-mini","response_format":)"
      R"({"type":"json_schema","json_schema":{"name":"structured_output","strict":true,"schema":{"type":"object",)"
      R"("properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}}}}})");
}

PendingRequest Req(size_t bytes, int tag) {
  return PendingRequest{std::string(bytes, 'x'), "id" + std::to_string(tag), tag};
}

TEST(BatchAccumulatorTest, ChunksByBytesAndCountIsolatingOversized) {
  BatchAccumulator acc(ChunkLimits{100, 3, false});
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(acc.Add(Req(30, i)).ok());
  auto ready = acc.TakeReady();  // 3 requests (count cap) closed; the 4th stays open
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].requests.size(), 3u);
  EXPECT_EQ(ready[0].total_bytes, 90);
  ASSERT_TRUE(acc.Add(Req(70, 4)).ok());  // 30 + 70 = 100: exactly max is allowed, and complete
  ready = acc.TakeReady();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].total_bytes, 100);
  ASSERT_TRUE(acc.Add(Req(10, 5)).ok());
  ASSERT_TRUE(acc.Add(Req(150, 6)).ok());  // oversized: closes the open chunk, then alone
  auto all = acc.TakeAll();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].requests.size(), 1u);
  EXPECT_TRUE(all[1].has_oversized_request);
  EXPECT_TRUE(acc.empty());
  BatchAccumulator strict(ChunkLimits{100, std::nullopt, true});
  Status s = strict.Add(Req(101, 0));
  EXPECT_EQ(s.message(), "Encountered oversized request: 101 bytes exceeds max_chunk_bytes=100");
}

TEST(BatchAnswerTest, ParsesOpenAiAndAnthropicResultLines) {
  auto a =
      ParseBatchAnswer("openai", R"({"custom_id":"c1","response":{"status_code":200,"body":{"choices":[{"message":)"
                                 R"({"content":"hello"}}],"usage":{"prompt_tokens":3,"completion_tokens":4}}}})");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->ok);
  EXPECT_EQ(a->text, "hello");
  EXPECT_EQ(*a->input_tokens, 3);
  auto e = ParseBatchAnswer("openai",
                            R"({"custom_id":"c2","response":{"status_code":400,"body":{"error":{"message":"bad"}}}})");
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->ok);
  EXPECT_EQ(e->error, "bad");
  auto b =
      ParseBatchAnswer("anthropic", R"({"custom_id":"c3","result":{"type":"succeeded","message":{"content":[)"
                                    R"({"type":"text","text":"a"},{"type":"tool_use"},{"type":"text","text":"b"}],)"
                                    R"("usage":{"input_tokens":5,"output_tokens":6}}}})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->text, "ab");
  EXPECT_EQ(*b->output_tokens, 6);
  auto x = ParseBatchAnswer("anthropic", R"({"custom_id":"c4","result":{"type":"expired"}})");
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->error, "Request expired");
  EXPECT_FALSE(ParseBatchAnswer("openai", "[1]").ok());
  EXPECT_FALSE(ParseBatchAnswer("openai", R"({"no":"id"})").ok());
}

TEST(ApiKeyTest, MissingOrBlankKeyIsTheOriginalsMessage) {
  config::VarLookup none = [](const std::string&) -> std::optional<std::string> { return std::string("  "); };
  EXPECT_EQ(CheckApiKey("anthropic", none).message(),
            "Missing environment variable(s) for provider 'anthropic': ['ANTHROPIC_API_KEY']");
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
}  // namespace mmirage::batch

// The OpenAI wire format and retry arithmetic (engine/openai_protocol.h).
#include "engine/openai_protocol.h"

#include <gtest/gtest.h>

#include "data/json.h"

namespace mmirage::engine {
namespace {

Value Body(const OpenAiCall& c) {
  auto v = ParseJson(c.body);
  EXPECT_TRUE(v.ok()) << c.body;
  return v.ok() ? *v : Value();
}

TEST(OpenAiProtocolTest, ChatRequestCarriesThePromptAsTheUserMessage) {
  Request r;
  r.prompt = "Say \"hi\"\n";
  r.sampling.temperature = 0;
  r.sampling.max_new_tokens = 17;
  auto c = BuildOpenAiCall(r, OpenAiMode::kChat, "my-model");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->path, "/chat/completions");
  EXPECT_TRUE(c->chat);
  Value b = Body(*c);
  EXPECT_EQ(b.Find("model")->as_string(), "my-model");
  EXPECT_FALSE(b.Find("stream")->as_bool());
  const Value& m = b.Find("messages")->as_array().at(0);
  EXPECT_EQ(m.Find("role")->as_string(), "user");
  EXPECT_EQ(m.Find("content")->as_string(), "Say \"hi\"\n");
  EXPECT_EQ(b.Find("max_tokens")->as_int(), 17);
  EXPECT_EQ(b.Find("temperature")->as_number(), 0.0);
  EXPECT_EQ(b.Find("top_p")->as_number(), 1.0);
  // Defaults stay out of the body.
  for (const char* k : {"top_k", "min_p", "stop", "seed", "frequency_penalty", "presence_penalty", "repetition_penalty",
                        "ignore_eos", "chat_template_kwargs", "response_format", "prompt"})
    EXPECT_EQ(b.Find(k), nullptr) << k;
}

TEST(OpenAiProtocolTest, ImagesBecomeImageUrlPartsWhereTheirMarkersAre) {
  Request r;
  r.prompt = std::string(kImageMarker) + "\nCompare with " + kImageMarker + ", then " + kImageMarker;
  ImageInput png;
  png.kind = ImageInput::Kind::kBytes;
  png.source = "bytes of image input 'a'";
  png.bytes = std::string("\x89PNG\r\n\x1a\n", 8);
  ImageInput jpeg = png;
  jpeg.bytes = "\xFF\xD8\xFF";
  ImageInput url;
  url.kind = ImageInput::Kind::kUrl;
  url.source = "https://h/cat.jpg";
  r.images = {png, jpeg, url};
  r.json_schema = R"({"type":"object"})";
  auto c = BuildOpenAiCall(r, OpenAiMode::kChat, "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Value b = Body(*c);
  const Value& content = *b.Find("messages")->as_array().at(0).Find("content");
  ASSERT_TRUE(content.is_array()) << c->body;
  ASSERT_EQ(content.size(), 5u) << c->body;
  EXPECT_EQ(ToJson(content.as_array()[0]),
            R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}})");
  EXPECT_EQ(ToJson(content.as_array()[1]), R"({"type":"text","text":"\nCompare with "})");
  EXPECT_EQ(ToJson(content.as_array()[2]), R"({"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}})");
  EXPECT_EQ(ToJson(content.as_array()[3]), R"({"type":"text","text":", then "})");
  EXPECT_EQ(ToJson(content.as_array()[4]), R"({"type":"image_url","image_url":{"url":"https://h/cat.jpg"}})");
  EXPECT_NE(b.Find("response_format"), nullptr);  // JSON outputs work with images

  Request bad = r;
  bad.images[0].bytes = "not an image";
  auto not_image = BuildOpenAiCall(bad, OpenAiMode::kChat, "");
  ASSERT_FALSE(not_image.ok());
  EXPECT_NE(not_image.status().message().find("not a known image format"), std::string::npos);
  bad = r;
  bad.images.pop_back();
  EXPECT_FALSE(BuildOpenAiCall(bad, OpenAiMode::kChat, "").ok());      // 3 markers, 2 images
  EXPECT_FALSE(BuildOpenAiCall(r, OpenAiMode::kCompletion, "").ok());  // images need the chat API
}

TEST(OpenAiProtocolTest, CompletionModeAndRawPromptsSendThePromptVerbatim) {
  Request r;
  r.prompt = "<|im_start|>user\nhi<|im_end|>\n";
  auto c = BuildOpenAiCall(r, OpenAiMode::kCompletion, "");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->path, "/completions");
  EXPECT_FALSE(c->chat);
  Value b = Body(*c);
  EXPECT_EQ(b.Find("prompt")->as_string(), r.prompt);
  EXPECT_EQ(b.Find("messages"), nullptr);
  EXPECT_EQ(b.Find("model"), nullptr);  // empty model: left out

  r.raw_prompt = true;  // raw prompts use /completions even in chat mode
  auto raw = BuildOpenAiCall(r, OpenAiMode::kChat, "m");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->path, "/completions");
  EXPECT_EQ(Body(*raw).Find("prompt")->as_string(), r.prompt);
}

TEST(OpenAiProtocolTest, SamplingParametersMapToTheApiAndItsExtraFields) {
  Request r;
  r.prompt = "p";
  SamplingParams& s = r.sampling;
  s.temperature = 0.7;
  s.top_p = 0.9;
  s.top_k = 20;
  s.min_p = 0.05;
  s.stop = {"\n\n", "END"};
  s.seed = 42;
  s.frequency_penalty = 0.5;
  s.presence_penalty = -0.25;
  s.repetition_penalty = 1.1;
  s.ignore_eos = true;
  r.chat_template_kwargs = Value::EmptyObject();
  r.chat_template_kwargs.Set("enable_thinking", false);
  Value b = Body(*BuildOpenAiCall(r, OpenAiMode::kChat, "m"));
  EXPECT_DOUBLE_EQ(b.Find("temperature")->as_number(), 0.7);
  EXPECT_DOUBLE_EQ(b.Find("top_p")->as_number(), 0.9);
  EXPECT_EQ(b.Find("top_k")->as_int(), 20);
  EXPECT_DOUBLE_EQ(b.Find("min_p")->as_number(), 0.05);
  ASSERT_EQ(b.Find("stop")->size(), 2u);
  EXPECT_EQ(b.Find("stop")->as_array()[1].as_string(), "END");
  EXPECT_EQ(b.Find("seed")->as_int(), 42);
  EXPECT_DOUBLE_EQ(b.Find("frequency_penalty")->as_number(), 0.5);
  EXPECT_DOUBLE_EQ(b.Find("presence_penalty")->as_number(), -0.25);
  EXPECT_DOUBLE_EQ(b.Find("repetition_penalty")->as_number(), 1.1);
  EXPECT_DOUBLE_EQ(b.Find("repeat_penalty")->as_number(), 1.1);
  EXPECT_TRUE(b.Find("ignore_eos")->as_bool());
  EXPECT_FALSE(b.Find("chat_template_kwargs")->Find("enable_thinking")->as_bool());
}

TEST(OpenAiProtocolTest, JsonSchemaBecomesAStrictResponseFormat) {
  Request r;
  r.prompt = "p";
  r.json_schema = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  Value b = Body(*BuildOpenAiCall(r, OpenAiMode::kChat, "m"));
  const Value* rf = b.Find("response_format");
  ASSERT_NE(rf, nullptr);
  EXPECT_EQ(rf->Find("type")->as_string(), "json_schema");
  const Value* js = rf->Find("json_schema");
  EXPECT_EQ(js->Find("name")->as_string(), "output");
  EXPECT_TRUE(js->Find("strict")->as_bool());
  EXPECT_EQ(*js->Find("schema"), *ParseJson(r.json_schema));
}

TEST(OpenAiProtocolTest, AnInvalidSchemaIsAnInvalidArgument) {
  Request r;
  r.json_schema = "{not json";
  auto c = BuildOpenAiCall(r, OpenAiMode::kChat, "m");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsInvalidArgument());
}

TEST(OpenAiProtocolTest, ParsesChatAndCompletionResponsesWithUsage) {
  auto chat = ParseOpenAiResponse(
      R"({"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"Hello"}}],)"
      R"("usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}})",
      true);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->text, "Hello");
  EXPECT_EQ(chat->finish, FinishReason::kStop);
  EXPECT_EQ(chat->prompt_tokens, 12);
  EXPECT_EQ(chat->completion_tokens, 3);
  EXPECT_EQ(chat->cached_prompt_tokens, 8);

  auto comp = ParseOpenAiResponse(R"({"choices":[{"text":" world","finish_reason":"length"}],)"
                                  R"("usage":{"prompt_tokens":1,"completion_tokens":4}})",
                                  false);
  ASSERT_TRUE(comp.ok());
  EXPECT_EQ(comp->text, " world");
  EXPECT_EQ(comp->finish, FinishReason::kLength);
  EXPECT_EQ(comp->cached_prompt_tokens, 0);
}

TEST(OpenAiProtocolTest, NullContentIsEmptyAndMissingUsageIsZero) {
  auto c = ParseOpenAiResponse(R"({"choices":[{"message":{"content":null},"finish_reason":"stop"}]})", true);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->text, "");
  EXPECT_EQ(c->prompt_tokens, 0);
}

TEST(OpenAiProtocolTest, MalformedResponsesAreRetryable) {
  for (const char* body : {"", "{\"choices\":", "{\"choices\":[]}", "{\"error\":\"x\"}", "{\"choices\":[{\"text\":1}]}",
                           "<html>502</html>"}) {
    auto c = ParseOpenAiResponse(body, false);
    ASSERT_FALSE(c.ok()) << body;
    EXPECT_TRUE(c.status().IsUnavailable()) << body;
    EXPECT_NE(c.status().message().find("malformed response"), std::string::npos);
  }
}

TEST(OpenAiProtocolTest, RetryAfterAcceptsSecondsAndHttpDates) {
  EXPECT_EQ(ParseRetryAfterSeconds("120", 0), 120.0);
  EXPECT_EQ(ParseRetryAfterSeconds(" 7 ", 0), 7.0);
  EXPECT_EQ(ParseRetryAfterSeconds("1.5", 0), 1.5);
  EXPECT_EQ(ParseRetryAfterSeconds("0", 0), 0.0);
  // Wed, 21 Oct 2015 07:28:00 GMT = 1445412480.
  EXPECT_EQ(ParseRetryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 - 30), 30.0);
  EXPECT_EQ(ParseRetryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 + 100), 0.0);  // past: now
  for (const char* bad : {"", "soon", "-5", "12abc", "Wed, 21 Oct 2015", "nan"})
    EXPECT_FALSE(ParseRetryAfterSeconds(bad, 0).has_value()) << bad;
}

TEST(OpenAiProtocolTest, BackoffDoublesUpToTheCapWithFullJitter) {
  const uint64_t base = 500000, cap = 30000000;
  EXPECT_EQ(BackoffDelayMicros(1, base, cap, 0.999999), 499999u);
  EXPECT_EQ(BackoffDelayMicros(1, base, cap, 0.5), 250000u);
  EXPECT_EQ(BackoffDelayMicros(2, base, cap, 0.5), 500000u);
  EXPECT_EQ(BackoffDelayMicros(3, base, cap, 0.5), 1000000u);
  EXPECT_EQ(BackoffDelayMicros(7, base, cap, 0.5), 15000000u);  // 0.5 s × 64 = 32 s, capped at 30 s
  EXPECT_EQ(BackoffDelayMicros(60, base, cap, 0.5), 15000000u);
  EXPECT_EQ(BackoffDelayMicros(3, base, cap, 0.0), 0u);
}

TEST(OpenAiProtocolTest, RetryableStatuses) {
  for (int code : {408, 409, 429, 500, 502, 503, 504}) EXPECT_TRUE(IsRetryableHttpStatus(code)) << code;
  for (int code : {400, 401, 403, 404, 413, 422}) EXPECT_FALSE(IsRetryableHttpStatus(code)) << code;
}

TEST(OpenAiProtocolTest, HttpErrorsNameTheServerMessageOnOneLine) {
  EXPECT_EQ(DescribeHttpError(400, R"({"error":{"code":400,"message":"the request exceeds the context"}})"),
            "HTTP 400: the request exceeds the context");
  EXPECT_EQ(DescribeHttpError(422, R"({"detail":"bad field"})"), "HTTP 422: bad field");
  EXPECT_EQ(DescribeHttpError(502, "Bad\nGateway\n"), "HTTP 502: Bad Gateway");
  EXPECT_EQ(DescribeHttpError(503, ""), "HTTP 503");
  std::string long_body(1000, 'x');
  EXPECT_LT(DescribeHttpError(500, long_body).size(), 300u);
}

}  // namespace
}  // namespace mmirage::engine

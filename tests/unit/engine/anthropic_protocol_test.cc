// Anthropic Messages bodies and answers.
#include "engine/anthropic_protocol.h"

#include <gtest/gtest.h>

#include "data/json.h"

namespace mmirage::engine {
namespace {

Value Body(const OpenAiCall& c) {
  auto v = ParseJson(c.body);
  EXPECT_TRUE(v.ok()) << c.body;
  return v.ok() ? *v : Value();
}

TEST(AnthropicProtocolTest, TextRequestCarriesModelMaxTokensSystemAndSampling) {
  Request r;
  r.prompt = "question";
  r.sampling.max_new_tokens = 77;
  r.sampling.temperature = 0.5;
  r.sampling.top_k = 4;
  r.sampling.stop = {"END"};
  auto c = BuildAnthropicCall(r, "claude-x", "be brief");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->path, "/messages");
  Value b = Body(*c);
  EXPECT_EQ(b.Find("model")->as_string(), "claude-x");
  EXPECT_EQ(b.Find("max_tokens")->as_int(), 77);
  EXPECT_EQ(b.Find("system")->as_string(), "be brief");
  EXPECT_EQ(b.Find("temperature")->as_number(), 0.5);
  EXPECT_EQ(b.Find("top_p"), nullptr);
  EXPECT_EQ(b.Find("top_k")->as_int(), 4);
  EXPECT_EQ(b.Find("stop_sequences")->as_array()[0].as_string(), "END");
  const Value& m = b.Find("messages")->as_array()[0];
  EXPECT_EQ(m.Find("role")->as_string(), "user");
  EXPECT_EQ(m.Find("content")->as_string(), "question");
  EXPECT_EQ(BuildAnthropicCall(r, "claude-x", "")->body.find("system"), std::string::npos);
}

TEST(AnthropicProtocolTest, ImagesAreBase64BlocksWhereTheirMarkersAre) {
  Request r;
  r.prompt = std::string("look ") + kImageMarker + " and " + kImageMarker;
  ImageInput png;
  png.kind = ImageInput::Kind::kBytes;
  png.bytes = std::string("\x89PNG\r\n\x1a\n\x01\x02", 10);
  ImageInput url;
  url.kind = ImageInput::Kind::kUrl;
  url.source = "https://x/y.jpg";
  r.images = {png, url};
  auto c = BuildAnthropicCall(r, "m", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Value b = Body(*c);
  const auto& blocks = b.Find("messages")->as_array()[0].Find("content")->as_array();
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0].Find("text")->as_string(), "look ");
  EXPECT_EQ(blocks[1].Find("type")->as_string(), "image");
  EXPECT_EQ(blocks[1].Find("source")->Find("type")->as_string(), "base64");
  EXPECT_EQ(blocks[1].Find("source")->Find("media_type")->as_string(), "image/png");
  EXPECT_EQ(blocks[1].Find("source")->Find("data")->as_string(), "iVBORw0KGgoBAg==");
  EXPECT_EQ(blocks[2].Find("text")->as_string(), " and ");
  EXPECT_EQ(blocks[3].Find("source")->Find("url")->as_string(), "https://x/y.jpg");
  r.images[0].bytes = "BM\x01\x02";  // BMP: not taken
  auto bmp = BuildAnthropicCall(r, "m", "");
  ASSERT_FALSE(bmp.ok());
  EXPECT_TRUE(bmp.status().IsInvalidArgument());
}

TEST(AnthropicProtocolTest, JsonSchemaIsAForcedTool) {
  Request r;
  r.prompt = "q";
  r.json_schema = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
  Value b = Body(*BuildAnthropicCall(r, "m", ""));
  const Value& tool = b.Find("tools")->as_array()[0];
  EXPECT_EQ(tool.Find("name")->as_string(), kAnthropicJsonTool);
  EXPECT_EQ(tool.Find("input_schema")->Find("type")->as_string(), "object");
  EXPECT_EQ(b.Find("tool_choice")->Find("name")->as_string(), kAnthropicJsonTool);
  r.json_schema = "{";
  EXPECT_FALSE(BuildAnthropicCall(r, "m", "").ok());
  EXPECT_FALSE(BuildAnthropicCall(Request{}, "", "").ok());  // no model
}

TEST(AnthropicProtocolTest, ParsesTextToolUseStopReasonAndUsage) {
  auto c = ParseAnthropicResponse(
      R"({"content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}],"stop_reason":"max_tokens",)"
      R"("usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":3}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->text, "Hello");
  EXPECT_EQ(c->finish, FinishReason::kLength);
  EXPECT_EQ(c->prompt_tokens, 15);
  EXPECT_EQ(c->cached_prompt_tokens, 5);
  EXPECT_EQ(c->completion_tokens, 3);
  auto t = ParseAnthropicResponse(
      R"({"content":[{"type":"text","text":"thinking"},{"type":"tool_use","name":"output","input":{"a":1}}],)"
      R"("stop_reason":"tool_use"})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->text, R"({"a":1})");
  EXPECT_EQ(t->finish, FinishReason::kStop);
  auto bad = ParseAnthropicResponse(R"({"type":"message"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsUnavailable());
  EXPECT_FALSE(ParseAnthropicResponse("{").ok());
}

}  // namespace
}  // namespace mmirage::engine

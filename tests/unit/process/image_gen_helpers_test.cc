// The pure parts of the image_gen processor: URL normalisation, file stems, __source_hash, request bodies, and
// the image codec (png/jpeg/webp round trips, strict base64).
#include <gtest/gtest.h>

#include "config/config.h"
#include "data/json.h"
#include "process/image_gen/image_codec.h"
#include "process/image_gen/image_gen_processor.h"

namespace mmirage::process::image_gen {
namespace {

TEST(ImageGenUrlTest, NormalisesAsTheOriginal) {
  auto a = NormalizeImageGenUrl("  http://h:1/v1/ ");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->api, "http://h:1/v1");
  EXPECT_EQ(a->root, "http://h:1");
  auto b = NormalizeImageGenUrl("http://h:1//");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->api, "http://h:1/v1");
  EXPECT_EQ(b->root, "http://h:1");
  EXPECT_FALSE(NormalizeImageGenUrl("  / ").ok());
}

TEST(ImageGenStemTest, SanitisesRunsAndStripsEnds) {
  EXPECT_EQ(SanitizeFileStem("generated_0_1_abcd1234"), "generated_0_1_abcd1234");
  EXPECT_EQ(SanitizeFileStem("../../x y//z"), "x_y_z");
  EXPECT_EQ(SanitizeFileStem("/abs/path.png"), "abs_path.png");
  EXPECT_EQ(SanitizeFileStem(""), "image");
  EXPECT_EQ(SanitizeFileStem("..._"), "image");
  EXPECT_EQ(SanitizeFileStem("caf\xc3\xa9 \xe2\x98\x95"), "caf");  // non-ASCII bytes are one run each way
  EXPECT_EQ(SanitizeFileStem("a\nb\tc"), "a_b_c");
}

TEST(ImageGenHashTest, CanonicalJsonIgnoresKeyOrder) {
  auto a = ParseJson(R"({"text":"a cat","n":1,"m":{"y":2,"x":[1,{"b":1,"a":2}]}})");
  auto b = ParseJson(R"({"m":{"x":[1,{"a":2,"b":1}],"y":2},"n":1,"text":"a cat"})");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(SourceHash(*a), SourceHash(*b));
  EXPECT_EQ(SourceHash(*a).size(), 8u);
  auto c = ParseJson(R"({"text":"a dog","n":1,"m":{"y":2,"x":[1,{"b":1,"a":2}]}})");
  EXPECT_NE(SourceHash(*a), SourceHash(*c));
  // sha256(canonical JSON) and sha256("empty"), as `sha256sum` computes them
  EXPECT_EQ(SourceHash(*ParseJson(R"({"text":"a cat"})")), "c83fd1b6");
  EXPECT_EQ(SourceHash(Value::EmptyObject()), "2e1cfa82");
}

TEST(ImageGenBodyTest, FollowsTheOriginalsRules) {
  config::ImageGenProcessor p;
  p.default_sampling_params = *ParseJson(
      R"({"num_inference_steps":30,"guidance_scale":4.0,"output_quality":80,"scheduler":"ddim","width":256,"height":128,"skip":null})");
  config::OutputVar o;
  o.width = 1024;
  auto body = BuildImageRequestBody(p, o, "flux", "a cat", "blurry", 42);
  ASSERT_TRUE(body.ok()) << body.status().message();
  EXPECT_EQ(
      *body,
      R"({"prompt":"a cat","n":1,"response_format":"b64_json","model":"flux","negative_prompt":"blurry","seed":42,)"
      R"("size":"1024x128","num_inference_steps":30,"guidance_scale":4.0,"output-quality":80,"scheduler":"ddim"})");
  const config::ImageGenProcessor none;
  const config::OutputVar plain_out;
  auto plain = BuildImageRequestBody(none, plain_out, "", "x", "", std::nullopt);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, R"({"prompt":"x","n":1,"response_format":"b64_json"})");
  EXPECT_FALSE(BuildImageRequestBody(none, plain_out, "", " \n", "", std::nullopt).ok());
  config::ImageGenProcessor two;
  two.default_sampling_params = *ParseJson(R"({"n":2,"size":"64x64"})");
  auto e = BuildImageRequestBody(two, plain_out, "", "x", "", std::nullopt);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("n must be 1"), std::string::npos);
}

TEST(ImageCodecTest, RoundTripsEveryFormat) {
  RgbImage im;
  im.width = 7;
  im.height = 5;
  for (int i = 0; i < im.width * im.height; ++i) im.pixels += std::string{char(200), char(i * 3), char(40)};
  for (ImageFormat f : {ImageFormat::kPng, ImageFormat::kJpeg, ImageFormat::kWebp}) {
    auto bytes = EncodeImage(im, f);
    ASSERT_TRUE(bytes.ok()) << ImageFormatName(f);
    EXPECT_EQ(SniffImageFormat(*bytes), f);
    auto back = DecodeImage(*bytes);
    ASSERT_TRUE(back.ok()) << ImageFormatName(f) << ": " << back.status().message();
    EXPECT_EQ(back->width, 7);
    EXPECT_EQ(back->height, 5);
    if (f == ImageFormat::kPng) {
      EXPECT_EQ(back->pixels, im.pixels);  // lossless
    }
  }
  EXPECT_FALSE(DecodeImage("not an image").ok());
  EXPECT_FALSE(DecodeImage(std::string("\x89PNG\r\n\x1a\n", 8) + "truncated").ok());
  EXPECT_EQ(ImageFormatFromName("JPG"), ImageFormat::kJpeg);
  EXPECT_EQ(ImageFormatFromName("gif"), ImageFormat::kUnknown);
}

}  // namespace
}  // namespace mmirage::process::image_gen

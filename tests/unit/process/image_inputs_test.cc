// Image values and the placement rule (process/llm/image_inputs.h), and the projector lookup (process/llm/mmproj.h).
#include "process/llm/image_inputs.h"

#include <gtest/gtest.h>

#include "data/json.h"
#include "process/llm/mmproj.h"
#include "support/test_util.h"

namespace mmirage::process::llm {
namespace {

const std::string kM = engine::kImageMarker;

Value Vars(const std::string& json) { return *ParseJson(json); }

// Renders like the pipeline: image variables become placeholders.
std::string Rendered(const std::string& text_with_names, const std::vector<std::string>& names) {
  std::string s = text_with_names;
  for (const auto& n : names) {
    const std::string token = "{{" + n + "}}";
    for (size_t p = s.find(token); p != std::string::npos; p = s.find(token))
      s.replace(p, token.size(), ImagePlaceholder(n));
  }
  return s;
}

TEST(ImageInputsTest, UnplacedImagesOpenTheUserTurnInNameOrder) {
  const std::vector<std::string> names = {"a_img", "b_img", "z_img"};
  Value vars = Vars(R"({"z_img": "/d/z.png", "a_img": "/d/a.png", "b_img": null, "q": "why?"})");
  auto placed = PlaceImages("Describe.", vars, names);
  ASSERT_TRUE(placed.ok()) << placed.status().ToString();
  EXPECT_EQ(placed->prompt, kM + "\n" + kM + "\nDescribe.");
  ASSERT_EQ(placed->images.size(), 2u);  // the null image is no image
  EXPECT_EQ(placed->images[0].source, "/d/a.png");
  EXPECT_EQ(placed->images[1].source, "/d/z.png");
  EXPECT_EQ(placed->images[0].kind, engine::ImageInput::Kind::kFile);
}

TEST(ImageInputsTest, APromptPlacesItsImagesWhereItNamesThem) {
  const std::vector<std::string> names = {"after", "before", "extra"};
  Value vars = Vars(R"({"before": "/d/1.png", "after": "/d/2.png", "extra": "/d/3.png"})");
  auto placed = PlaceImages(Rendered("First {{before}} then {{after}}, again {{before}}.", names), vars, names);
  ASSERT_TRUE(placed.ok()) << placed.status().ToString();
  EXPECT_EQ(placed->prompt, kM + "\nFirst " + kM + " then " + kM + ", again " + kM + ".");
  ASSERT_EQ(placed->images.size(), 4u);
  EXPECT_EQ(placed->images[0].source, "/d/3.png");  // unplaced first
  EXPECT_EQ(placed->images[1].source, "/d/1.png");  // then in prompt order
  EXPECT_EQ(placed->images[2].source, "/d/2.png");
  EXPECT_EQ(placed->images[3].source, "/d/1.png");
}

TEST(ImageInputsTest, PlaceholdersReplaceOnlyPresentImages) {
  Value vars = Vars(R"({"img": null, "other": "/x.png"})");
  Value r = WithImagePlaceholders(vars, {"img", "other"});
  EXPECT_TRUE(r.Find("img")->is_null());
  EXPECT_EQ(r.Find("other")->as_string(), ImagePlaceholder("other"));
  // A struct with neither bytes nor path is a null image too.
  Value s = WithImagePlaceholders(Vars(R"({"img": {"bytes": null, "path": null}})"), {"img"});
  EXPECT_TRUE(s.Find("img")->is_object());
}

TEST(ImageInputsTest, ValuesOfEveryKind) {
  auto url = ToImageInput("i", Value("https://h/x.jpg"));
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->kind, engine::ImageInput::Kind::kUrl);
  auto data = ToImageInput("i", Value("data:image/png;base64,iVBORw0KGgo="));
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->kind, engine::ImageInput::Kind::kBytes);
  EXPECT_EQ(data->bytes, std::string("\x89PNG\r\n\x1a\n", 8));
  auto pct = ToImageInput("i", Value("data:text/plain,a%20b"));
  ASSERT_TRUE(pct.ok());
  EXPECT_EQ(pct->bytes, "a b");
  Value bytes_struct = Value(Value::Object{});
  bytes_struct.Set("bytes", Value::Bytes("\xFF\xD8\xFFjpeg"));
  bytes_struct.Set("path", Value("ignored.jpg"));
  auto st = ToImageInput("i", bytes_struct);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->bytes, "\xFF\xD8\xFFjpeg");
  auto b64_struct = ToImageInput("i", Vars(R"({"bytes": "/9j/", "path": null})"));  // bytes as JSON holds them
  ASSERT_TRUE(b64_struct.ok()) << b64_struct.status().ToString();
  EXPECT_EQ(b64_struct->bytes, "\xFF\xD8\xFF");
  auto path_struct = ToImageInput("i", Vars(R"({"bytes": null, "path": "/abs/p.png"})"));
  ASSERT_TRUE(path_struct.ok());
  EXPECT_EQ(path_struct->kind, engine::ImageInput::Kind::kFile);
  EXPECT_EQ(path_struct->source, "/abs/p.png");
}

TEST(ImageInputsTest, UnusableValuesAreErrorsNamingTheVariable) {
  for (const char* bad : {R"([1, 2])", "3", R"({"bytes": 5})", R"({"path": 5})"}) {
    auto r = ToImageInput("photo", Vars(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("image input 'photo'"), std::string::npos) << r.status().ToString();
  }
  EXPECT_FALSE(ToImageInput("p", Value("data:image/png;base64,@@@")).ok());
  EXPECT_FALSE(ToImageInput("p", Value("data:image/png;base64")).ok());
  auto placed = PlaceImages("x", Vars(R"({"p": [1]})"), {"p"});
  EXPECT_FALSE(placed.ok());
}

TEST(MmprojTest, AutoFindsExactlyOneProjectorNextToTheModel) {
  mmirage::testing::TempDir dir;
  mmirage::testing::WriteFile(dir.Path("m/model.gguf"), "x");
  auto none = ResolveMmprojPath(Env::Default(), dir.Path("m/model.gguf"), "auto", nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(none.status().IsNotFound());
  EXPECT_NE(none.status().message().find("no mmproj*.gguf in '" + dir.Path("m") + "'"), std::string::npos)
      << none.status().ToString();
  mmirage::testing::WriteFile(dir.Path("m/mmproj-f16.gguf"), "x");
  auto one = ResolveMmprojPath(Env::Default(), dir.Path("m/model.gguf"), "auto", nullptr);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, dir.Path("m/mmproj-f16.gguf"));
  mmirage::testing::WriteFile(dir.Path("m/mmproj-q8.gguf"), "x");
  auto two = ResolveMmprojPath(Env::Default(), dir.Path("m/model.gguf"), "auto", nullptr);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("mmproj-f16.gguf, mmproj-q8.gguf"), std::string::npos)
      << two.status().ToString();
  auto given = ResolveMmprojPath(Env::Default(), dir.Path("m/model.gguf"), dir.Path("m/mmproj-q8.gguf"), nullptr);
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(*given, dir.Path("m/mmproj-q8.gguf"));
  auto missing = ResolveMmprojPath(Env::Default(), dir.Path("m/model.gguf"), dir.Path("nope.gguf"), nullptr);
  EXPECT_TRUE(missing.status().IsNotFound());
  auto off = ResolveMmprojPath(Env::Default(), dir.Path("m/model.gguf"), "", nullptr);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, "");
}

}  // namespace
}  // namespace mmirage::process::llm

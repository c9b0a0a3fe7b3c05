// The image_gen processor against tests/support/fake_images_server.py: its file I/O goes through the injected Env.
#include "process/image_gen/image_gen_processor.h"

#include <gtest/gtest.h>

#include <future>

#include "config/config.h"
#include "support/fake_images_server.h"
#include "support/fault_env.h"
#include "support/test_util.h"

namespace mmirage::process::image_gen {
namespace {

config::Config ImageGenConfig(const std::string& base_url, const std::string& images_dir) {
  std::string y =
      "processors:\n  - type: image_gen\n    backend: external\n    external:\n      base_url: " + base_url +
      "\n      timeout_seconds: 30\n    output_dir: " + images_dir + "\n" +
      "loading_params:\n  datasets: [{type: JSONL, path: d.jsonl, output_dir: o}]\n"
      "processing_params:\n  inputs: [{name: text, key: text}]\n"
      "  outputs:\n    - {name: img, type: image_gen, prompt: 'draw {{ text }}'}\n"
      "  output_schema: {img: '{{ img }}'}\n";
  config::LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(y, "t.yaml", o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

TEST(ImageGenProcessorTest, WritesImagesThroughTheInjectedEnv) {
  testing::TempDir d;
  testing::FakeImagesServer server(d.path());
  ASSERT_EQ(server.error(), "");
  testing::WriteFile(d.Path("work/.keep"), "");
  config::Config c = ImageGenConfig(server.BaseUrl(), d.Path("work/images"));
  testing::FaultEnv fs(d.Path("work"));
  fs.CrashAtSyncPoint(1);  // the image file's sync fails: the row must fail, naming the file
  ImageGenStartOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  o.env = &fs;
  std::vector<std::string> warnings;
  auto proc = StartImageGenProcessor(c, *c.FindProcessor("image_gen"), o, &warnings);
  ASSERT_TRUE(proc.ok()) << proc.status().ToString();
  Value vars = Value::EmptyObject();
  vars.Set("text", Value(std::string("a cat")));
  std::promise<GenerateResult> got;
  (*proc)->Generate(0, "draw a cat", vars, RowInfo{0, 0}, [&](GenerateResult r) { got.set_value(std::move(r)); });
  GenerateResult r = got.get_future().get();
  (*proc)->Shutdown();
  EXPECT_TRUE(fs.crashed());
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("cannot write " + d.Path("work/images/")), std::string::npos) << r.status.message();
}

}  // namespace
}  // namespace mmirage::process::image_gen

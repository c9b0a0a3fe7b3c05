// execution_params.mode: ray and its `ray:` block: defaults, RAY_ADDRESS, sizes, and located errors.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "config/config.h"

namespace mmirage::config {
namespace {

Result<Config> Load(const std::string& ray_block, std::optional<std::string> ray_address = std::nullopt) {
  LoadOptions o;
  o.vars = [ray_address](const std::string& name) -> std::optional<std::string> {
    if (name == "HOME") return std::string("/home/u");
    if (name == "RAY_ADDRESS") return ray_address;
    return std::nullopt;
  };
  std::string yaml =
      "processors: []\nloading_params:\n  datasets:\n    - {type: JSONL, path: /d/in.jsonl, output_dir: /d/out}\n"
      "processing_params:\n  inputs: [{name: text, key: text}]\n  outputs: []\n"
      "  output_schema: {copy: \"{{ text }}\"}\nexecution_params:\n  mode: ray\n" +
      ray_block;
  return LoadConfigFromString(yaml, "cfg.yaml", o);
}

TEST(RayConfigTest, DefaultsAndRayAddressFallback) {
  auto c = Load("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->execution.mode, "ray");
  EXPECT_EQ(c->execution.ray.address, "http://127.0.0.1:8265");
  EXPECT_EQ(c->execution.ray.num_cpus, 1);
  EXPECT_EQ(c->execution.ray.num_gpus, 0);
  EXPECT_EQ(c->execution.ray.max_parallel, 0);
  auto env = Load("", "http://head:8265/");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->execution.ray.address, "http://head:8265");
  auto given = Load("  ray: {address: \"https://ray.example:443\"}\n", "http://head:8265");
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(given->execution.ray.address, "https://ray.example:443");
}

TEST(RayConfigTest, ResourcesSizesAndRuntimeEnv) {
  auto c = Load(
      "  ray:\n    num_cpus: 4\n    num_gpus: 0.5\n    memory: 16GiB\n    max_parallel: 8\n"
      "    runtime_env: {env_vars: {HF_HOME: /shared/hf}}\n    python: /opt/ray/bin/python\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const RayParams& r = c->execution.ray;
  EXPECT_EQ(r.num_cpus, 4);
  EXPECT_EQ(r.num_gpus, 0.5);
  EXPECT_EQ(r.memory_bytes, int64_t{16} << 30);
  EXPECT_EQ(r.max_parallel, 8);
  EXPECT_EQ(r.runtime_env, R"({"env_vars":{"HF_HOME":"/shared/hf"}})");
  EXPECT_EQ(r.python, "/opt/ray/bin/python");
  auto bytes = Load("  ray: {memory: 1000}\n");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(bytes->execution.ray.memory_bytes, 1000);
}

TEST(RayConfigTest, BadValuesAreLocatedErrors) {
  struct Case {
    std::string block, line, message;
  } cases[] = {
      {"  ray: {address: \"head:8265\"}\n", "cfg.yaml:11:", "must be the Ray dashboard's http(s)://host:port"},
      {"  ray:\n    num_cpus: -1\n", "cfg.yaml:12:", "ray.num_cpus must be >= 0"},
      {"  ray:\n    num_gpus: -2\n", "cfg.yaml:12:", "ray.num_gpus must be >= 0"},
      {"  ray:\n    memory: 12XB\n", "cfg.yaml:12:", "ray.memory must be bytes or a size such as 16GiB"},
      {"  ray:\n    max_parallel: 0\n", "cfg.yaml:12:", "ray.max_parallel must be >= 1"},
      {"  ray:\n    runtime_env: [a]\n", "cfg.yaml:12:", "runtime_env"},
      {"  ray: [1, 2]\n", "cfg.yaml:11:", "execution_params.ray: expected a map"},
  };
  for (const Case& k : cases) {
    auto c = Load(k.block);
    ASSERT_FALSE(c.ok()) << k.block;
    EXPECT_NE(c.status().message().find(k.line), std::string::npos) << k.block << c.status().message();
    EXPECT_NE(c.status().message().find(k.message), std::string::npos) << k.block << c.status().message();
  }
  auto mode = LoadConfigFromString(
      "processors: []\nloading_params:\n  datasets: [{type: JSONL, path: /d/in.jsonl, output_dir: /d/out}]\n"
      "processing_params: {inputs: [], outputs: [], output_schema: {a: b}}\nexecution_params: {mode: k8s}\n",
      "cfg.yaml");
  ASSERT_FALSE(mode.ok());
  EXPECT_NE(mode.status().message().find("Must be 'local', 'slurm' or 'ray'."), std::string::npos)
      << mode.status().message();
}

}  // namespace
}  // namespace mmirage::config

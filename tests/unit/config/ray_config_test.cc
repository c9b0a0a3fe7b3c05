// execution_params.mode: ray and its `ray:` block: defaults, RAY_ADDRESS, sizes, and located errors.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "config/config.h"

namespace mmirage::config {
namespace {

Result<Config> LoadWith(const std::string& ray_block, std::map<std::string, std::string> env,
                        const std::string& mode = "ray") {
  LoadOptions o;
  env["HOME"] = "/home/u";
  o.vars = [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  std::string yaml =
      "processors: []\nloading_params:\n  datasets:\n    - {type: JSONL, path: /d/in.jsonl, output_dir: /d/out}\n"
      "processing_params:\n  inputs: [{name: text, key: text}]\n  outputs: []\n"
      "  output_schema: {copy: \"{{ text }}\"}\nexecution_params:\n  mode: " +
      mode + "\n" + ray_block;
  return LoadConfigFromString(yaml, "cfg.yaml", o);
}

Result<Config> Load(const std::string& ray_block, std::optional<std::string> ray_address = std::nullopt) {
  std::map<std::string, std::string> env;
  if (ray_address) env["RAY_ADDRESS"] = *ray_address;
  return LoadWith(ray_block, env);
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

// The forms Ray's own job client takes name the head; the Jobs API is its dashboard's port there.
TEST(RayConfigTest, RayClientGcsAndAutoAddressesNameTheHeadsDashboard) {
  struct Case {
    std::string block, want;
  } cases[] = {
      {"  ray: {address: \"ray://head:10001\"}\n", "http://head:8265"},
      {"  ray: {address: \"ray://head:10001\", dashboard_port: 8300}\n", "http://head:8300"},
      {"  ray: {address: \"ray://10.1.2.3\"}\n", "http://10.1.2.3:8265"},
      {"  ray: {address: \"ray://[fd00::7]:10001/\"}\n", "http://[fd00::7]:8265"},
      {"  ray: {address: \"head-0.cluster:6379\"}\n", "http://head-0.cluster:8265"},
      {"  ray: {address: auto, dashboard_port: 9000}\n", "http://127.0.0.1:9000"},
      {"  ray: {dashboard_port: 9000}\n", "http://127.0.0.1:9000"},
  };
  for (const Case& k : cases) {
    auto c = Load(k.block);
    ASSERT_TRUE(c.ok()) << k.block << c.status().ToString();
    EXPECT_EQ(c->execution.ray.address, k.want) << k.block;
  }
  auto given = Load("  ray: {address: \"ray://head:10001\"}\n");
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->execution.ray.given_address, "ray://head:10001");
  auto env = Load("", "ray://head:10001");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->execution.ray.address, "http://head:8265");
  // Ray's job client reads RAY_API_SERVER_ADDRESS before RAY_ADDRESS; a key in the config wins over both.
  auto api = LoadWith("", {{"RAY_ADDRESS", "ray://head:10001"}, {"RAY_API_SERVER_ADDRESS", "https://jobs.example"}});
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_EQ(api->execution.ray.address, "https://jobs.example");
  auto key = LoadWith("  ray: {address: \"ray://h:10001\"}\n", {{"RAY_API_SERVER_ADDRESS", "http://x:1"}});
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->execution.ray.address, "http://h:8265");
}

// An unusable address from the environment is an error at `mode: ray`, and no error in the modes that ignore it.
TEST(RayConfigTest, AnUnusableEnvironmentAddressIsAnErrorInRayModeOnly) {
  auto ray = Load("", "local");
  ASSERT_FALSE(ray.ok());
  EXPECT_NE(ray.status().message().find("cfg.yaml:10:"), std::string::npos) << ray.status().message();
  EXPECT_NE(ray.status().message().find("$RAY_ADDRESS='local'"), std::string::npos) << ray.status().message();
  auto api = LoadWith("", {{"RAY_API_SERVER_ADDRESS", "ftp://x"}});
  ASSERT_FALSE(api.ok());
  EXPECT_NE(api.status().message().find("$RAY_API_SERVER_ADDRESS='ftp://x'"), std::string::npos);
  auto local = LoadWith("", {{"RAY_ADDRESS", "local"}}, "local");
  EXPECT_TRUE(local.ok()) << local.status().ToString();
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
      {"  ray: {address: local}\n", "cfg.yaml:11:", "ray.address='local': 'local' starts a new Ray instance"},
      {"  ray: {address: \"anyscale://prod\"}\n", "cfg.yaml:11:", "the scheme 'anyscale://' is not one"},
      {"  ray: {address: \"ray://\"}\n", "cfg.yaml:11:", "'ray://' is not a host or host:port"},
      {"  ray: {address: \"ray://head:client\"}\n", "cfg.yaml:11:", "is not a host or host:port"},
      {"  ray: {address: \"head:1:2\"}\n", "cfg.yaml:11:", "ray://head:10001, head:6379 or auto"},
      {"  ray: {address: \"user@head:6379\"}\n", "cfg.yaml:11:", "is not a host or host:port"},
      {"  ray:\n    dashboard_port: 0\n", "cfg.yaml:12:", "ray.dashboard_port must be a port, 1 to 65535"},
      {"  ray:\n    address: http://head:8265\n    dashboard_port: 8266\n",
       "cfg.yaml:13:", "dashboard_port applies to ray://, host:port and auto addresses"},
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

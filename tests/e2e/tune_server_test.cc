// End-to-end: `mmirage tune` on managed SGLang and vLLM servers, through the fake launchers of tests/support (they
// log their command line and exec llama-server on the synthetic model): every trial starts its server with the
// trial's settings on the command line, the report lists exactly those trials, and --write keeps the best value.
#include <unistd.h>

#include <gtest/gtest.h>

#include "config/config.h"
#include "data/json.h"
#include "e2e/e2e_util.h"
#include "e2e/fake_launchers.h"

namespace mmirage::testing {
namespace {

std::string Config(const TempDir& d, const std::string& backend) {
  return "processors:\n"
         "  - type: llm\n" +
         (backend.empty() ? "" : "    backend: " + backend + "\n") +
         "    server_args:\n"
         "      model_path: " +
         kFakeHubId +
         "\n"
         "      tp_size: 1\n"
         "      extra_engine_args: {max_running_requests: 2}\n"
         "    default_sampling_params: {temperature: 0, max_new_tokens: 4}\n" +
         SummariseDataYaml(d);
}

// " --flag value" as the managed server's command line carries an extra_engine_args entry.
std::string Flag(const std::string& backend, const std::string& key, const Value& v) {
  std::string flag = backend == "vllm" && key == "max_running_requests" ? "max-num-seqs" : key;
  for (char& c : flag)
    if (c == '_') c = '-';
  return " --" + flag + " " + (v.is_string() ? v.as_string() : ToJson(v));
}

class TuneServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::access(BuiltLlamaServer().c_str(), X_OK), 0) << "llama-server is not built: " << BuiltLlamaServer();
    ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model";
    WriteFile(d_.Path("data.jsonl"), MakeRows(12));
  }

  // Tunes a config of `backend` with the fakes on the path; checks every trial against the launchers' log and the
  // tuned copy against the best trial; log_: the launchers' log.
  void TuneAndCheck(const std::string& backend, const std::string& env) {
    WriteFile(d_.Path("c.yaml"), Config(d_, backend));
    auto r = RunWithFakeLaunchers(
        d_, env, "tune --config c.yaml --budget-seconds 10 --sample 4 --format json --write tuned.yaml");
    log_ = ReadFile(d_.Path("argv.log"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    auto report = ParseJson(r.out);
    ASSERT_TRUE(report.ok()) << r.out << r.err;
    EXPECT_EQ(report->Find("backend")->as_string(), backend);
    const Value::Array& trials = report->Find("trials")->as_array();
    std::vector<std::string> lines = ReadLines(d_.Path("argv.log"));
    // One server per trial, in trial order, each with the config's settings overridden by the trial's.
    ASSERT_GE(trials.size(), 2u) << r.out;
    EXPECT_EQ(lines.size(), trials.size()) << ReadFile(d_.Path("argv.log")) << r.out;
    for (size_t i = 0; i < std::min(lines.size(), trials.size()); ++i) {
      Value extra = Value::EmptyObject();
      extra.Set("max_running_requests", Value(int64_t{2}));
      for (const auto& [key, value] : trials[i].Find("settings")->as_object())
        if (key != "order") extra.Set(key, value);
      for (const auto& [key, value] : extra.as_object())
        EXPECT_NE((lines[i] + " ").find(Flag(backend, key, value) + " "), std::string::npos)
            << "trial " << trials[i].Find("label")->as_string() << " started: " << lines[i];
    }
    EXPECT_EQ(trials[0].Find("label")->as_string(), "(config)");
    ASSERT_TRUE(trials[0].Find("ok")->as_bool()) << r.out;
    EXPECT_EQ(trials[1].Find("label")->as_string(), "max_running_requests=1") << r.out;

    // The tuned copy holds the best trial's value (the config's own when no trial beat it).
    config::LoadOptions lo;
    auto tuned = config::LoadConfig(d_.Path("tuned.yaml"), lo);
    ASSERT_TRUE(tuned.ok()) << tuned.status().ToString();
    const Value* best = report->Find("best")->Find("settings")->Find("max_running_requests");
    int64_t want = best != nullptr ? best->as_int() : 2;
    EXPECT_EQ(tuned->processors[0].llm.extra_engine_args.Find("max_running_requests")->as_int(), want)
        << ReadFile(d_.Path("tuned.yaml"));
    EXPECT_EQ(tuned->processors[0].llm.backend, backend);
  }

  TempDir d_;
  std::string log_;
};

TEST_F(TuneServerTest, SglangTrialsStartTheServerWithTheirSchedulerFlags) {
  TuneAndCheck("sglang", FakeSglangEnv());
  ASSERT_FALSE(HasFatalFailure());
  const std::string& log = log_;
  EXPECT_NE(log.find("-m sglang.launch_server --model-path " + kFakeHubId), std::string::npos) << log;
  EXPECT_NE(log.find(" --max-running-requests 2\n"), std::string::npos) << log;  // the config's own
  EXPECT_NE(log.find(" --max-running-requests 1\n"), std::string::npos) << log;  // the first coarse value
}

TEST_F(TuneServerTest, VllmTrialsStartTheServerWithMaxNumSeqs) {
  TuneAndCheck("vllm", FakeVllmEnv());
  ASSERT_FALSE(HasFatalFailure());
  const std::string& log = log_;
  EXPECT_NE(log.find("vllm serve " + kFakeHubId), std::string::npos) << log;
  EXPECT_NE(log.find(" --max-num-seqs 2\n"), std::string::npos) << log;
  EXPECT_NE(log.find(" --max-num-seqs 1\n"), std::string::npos) << log;
  EXPECT_EQ(log.find("--max-running-requests"), std::string::npos) << log;
  EXPECT_EQ(log.find("--chunked-prefill-size"), std::string::npos) << log;  // not a vLLM flag
}

// Without `backend:`, a Hub model id is tuned on the server `run` would start, with that server's knobs.
TEST_F(TuneServerTest, AHubModelWithoutABackendIsTunedOnTheChosenServer) {
  WriteFile(d_.Path("c.yaml"), Config(d_, ""));
  auto r =
      RunWithFakeLaunchers(d_, FakeSglangEnv(), "tune --config c.yaml --budget-seconds 1 --sample 2 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto report = ParseJson(r.out);
  ASSERT_TRUE(report.ok()) << r.out << r.err;
  EXPECT_EQ(report->Find("backend")->as_string(), "sglang");
  std::vector<std::string> knobs;
  for (const auto& [key, value] : report->Find("own")->as_object()) knobs.push_back(key);
  EXPECT_EQ(knobs,
            (std::vector<std::string>{"max_running_requests", "order", "chunked_prefill_size", "mem_fraction_static"}));
  EXPECT_NE(ReadFile(d_.Path("argv.log")).find("-m sglang.launch_server --model-path " + kFakeHubId),
            std::string::npos);
}

}  // namespace
}  // namespace mmirage::testing

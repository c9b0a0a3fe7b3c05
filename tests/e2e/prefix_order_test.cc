// End-to-end: processing_params.order: prefix on the synthetic model gives the same output, byte for byte, as
// input order (greedy decoding, no cache), in input order, with more prompt tokens served by the shared prefix.
#include <gtest/gtest.h>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

// `n` rows, each with one of 8 system prompts (a long shared prefix) and a short question.
std::string SharedPromptRows(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    std::string sys = "You are assistant number " + std::to_string(i % 8) + ". Answer briefly, in plain words,";
    s += "{\"id\":" + std::to_string(i) + ",\"sys\":\"" + sys + " and stay polite.\",\"q\":\"What is item " +
         std::to_string(i) + "?\"}\n";
  }
  return s;
}

std::string OrderConfig(const TempDir& d, const std::string& name, const std::string& order) {
  return "processors:\n"
         "  - type: llm\n"
         "    server_args:\n"
         "      model_path: " +
         SharedTinyModel() +
         "\n"
         "      extra_engine_args: {max_running_requests: 4, context_length: 512, n_threads: 1}\n"
         "    default_sampling_params: {temperature: 0, max_new_tokens: 6}\n"
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path(name + "_out") +
         ", output_format: jsonl}]\n"
         "  state_dir: " +
         d.Path(name + "_state") +
         "\n"
         "processing_params:\n"
         "  inputs: [{name: sys, key: sys}, {name: q, key: q}, {name: id, key: id}]\n"
         "  outputs:\n"
         "    - {name: a, type: llm, prompt: \"{{ sys }}\\n\\n{{ q }}\"}\n"
         "  order: " +
         order +
         "\n"
         "  output_schema: {id: \"{{ id }}\", a: \"{{ a }}\"}\n"
         "execution_params: {cache: off}\n";
}

TEST(PrefixOrderTest, PrefixOrderWritesTheSameBytesAsInputOrder) {
  ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model with " << MakeTestModelTool();
  TempDir d;
  WriteFile(d.Path("data.jsonl"), SharedPromptRows(40));
  std::vector<std::string> outputs;
  std::vector<int64_t> reuse;
  for (const char* order : {"input", "prefix"}) {
    WriteFile(d.Path(std::string(order) + ".yaml"), OrderConfig(d, order, order));
    auto r = RunMmirage("run --config '" + d.Path(std::string(order) + ".yaml") + "'");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    outputs.push_back(ReadFile(d.Path(std::string(order) + "_out/shard_0/data.jsonl")));
    auto status = ParseJson(ReadFile(d.Path(std::string(order) + "_state/shard_0/status.json")));
    ASSERT_TRUE(status.ok()) << order;
    const Value* reused = status->Find("stats") ? status->Find("stats")->Find("prompt_tokens_reused") : nullptr;
    reuse.push_back(reused != nullptr && reused->is_int() ? reused->as_int() : 0);
  }
  // Grouped prompts let the engine's shared prefix serve more prompt tokens.
  EXPECT_GT(reuse[1], reuse[0]);
  ASSERT_FALSE(outputs[0].empty());
  EXPECT_EQ(std::count(outputs[0].begin(), outputs[0].end(), '\n'), 40);
  EXPECT_EQ(outputs[0], outputs[1]);
  // Input order: ids ascend.
  auto lines = CatLines(d.Path("prefix_out/shard_0"));
  ASSERT_EQ(lines.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(lines[i].rfind("{\"id\":" + std::to_string(i) + ",", 0), 0u) << lines[i];
}

}  // namespace
}  // namespace mmirage::testing

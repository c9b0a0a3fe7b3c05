// The README's quickstart on the real model (SmolLM2-135M-Instruct, fetched by scripts/setup.sh): the example
// config runs unchanged except for its paths, every row is written with typed JSON facts. Slow (~20 s on 2 cores).
#include <gtest/gtest.h>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t p = s.find(from);
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

TEST(QuickstartTest, RewriteRunsOnTheRealModel) {
  std::string src = MMIRAGE_SOURCE_DIR;
  std::string model = src + "/build/models/smollm2-135m-instruct-q4_1.gguf";
  ASSERT_TRUE(Exists(model)) << model << " is missing: scripts/setup.sh fetches it";
  TempDir d;
  std::string cfg = ReadFile(src + "/examples/quickstart/rewrite.yaml");
  ASSERT_FALSE(cfg.empty());
  cfg = Replace(cfg, "build/models/smollm2-135m-instruct-q4_1.gguf", model);
  // One decode thread: ctest runs tests two at a time on 2 cores, and oversubscribed OpenMP threads spin.
  cfg = Replace(cfg, "        context_length: 1024", "        context_length: 1024\n        n_threads: 1");
  cfg = Replace(cfg, "examples/quickstart/data.jsonl", src + "/examples/quickstart/data.jsonl");
  cfg = Replace(cfg, "output_dir: out/rewrite", "output_dir: " + d.Path("out"));
  cfg = Replace(cfg, "state_dir: out/rewrite/state", "state_dir: " + d.Path("state"));
  WriteFile(d.Path("rewrite.yaml"), cfg);
  auto r = RunMmirage("run --config " + d.Path("rewrite.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The merged output is an HF dataset (the default output_format); `mmirage cat` prints its rows.
  auto cat = RunMmirage("cat " + d.Path("out/merged"));
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  std::vector<std::string> rows;
  for (size_t at = 0, nl; (nl = cat.out.find('\n', at)) != std::string::npos; at = nl + 1)
    rows.push_back(cat.out.substr(at, nl - at));
  ASSERT_EQ(rows.size(), 50u);
  for (const auto& line : rows) {
    auto v = ParseJson(line);
    ASSERT_TRUE(v.ok()) << line;
    const Value* facts = v->Find("facts");
    ASSERT_TRUE(facts && facts->is_object()) << line;
    EXPECT_TRUE(facts->Find("country")->is_string()) << line;
    EXPECT_TRUE(facts->Find("capital")->is_string()) << line;
    const Value* pop = facts->Find("population_millions");
    ASSERT_TRUE(pop->is_int()) << line;
    EXPECT_GE(pop->as_int(), 0);
    EXPECT_LE(pop->as_int(), 2000);
    EXPECT_FALSE(v->Find("conversations")->as_array()[0].Find("content")->as_string().empty()) << line;
  }
}

}  // namespace
}  // namespace mmirage::testing

// Helpers for end-to-end tests: a workspace with generated data and a config.
#pragma once

#include <string>
#include <vector>

#include "support/test_util.h"

namespace mmirage::testing {

// build/mmirage-make-test-model, next to the mmirage binary.
inline std::string MakeTestModelTool() {
  std::string bin = MMIRAGE_BINARY;
  return bin.substr(0, bin.size() - std::string("mmirage").size()) + "mmirage-make-test-model";
}

// Writes a tiny synthetic GGUF model; false (after nothing else) when the tool is missing or fails.
inline bool MakeTinyModel(const std::string& path, int seed) {
  return RunCommand("'" + MakeTestModelTool() + "' --out '" + path + "' --seed " + std::to_string(seed)).exit_code == 0;
}

// One tiny model (seed 3) shared by the tests of a binary; "" when it cannot be made.
inline const std::string& SharedTinyModel() {
  static TempDir dir;  // removed at exit
  static std::string path = [] {
    std::string p = dir.Path("tiny.gguf");
    return MakeTinyModel(p, 3) ? p : std::string();
  }();
  return path;
}

// The rows of an output in any output_format (shard or merged dir, HF dataset, Parquet, JSONL), one JSON object
// per line, read with `mmirage cat` as users read them. Empty when cat fails (the caller's size check fails).
inline std::vector<std::string> CatLines(const std::string& path) {
  auto r = RunMmirage("cat '" + path + "'");
  std::vector<std::string> lines;
  if (r.exit_code != 0) return lines;
  for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(r.out.substr(at, nl - at));
  return lines;
}

// {"id": i, "text": "...", "meta": {"lang": "en", "score": i*0.5}, "tags": [...]} × n, one per line.
inline std::string MakeRows(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += "{\"id\":" + std::to_string(i) + ",\"text\":\"The capital of country " + std::to_string(i) + " is city " +
         std::to_string(i) + "\",\"meta\":{\"lang\":\"en\",\"score\":" + std::to_string(i) + ".5},\"tags\":[\"t" +
         std::to_string(i % 3) + "\",\"x\"]}\n";
  }
  return s;
}

// A restructuring config over `data` writing to `out`, state in `state`.
inline std::string RestructureConfig(const std::string& data, const std::string& out, const std::string& state,
                                     const std::string& extra_loading = "", const std::string& extra = "") {
  return "processors: []\n"
         "loading_params:\n"
         "  datasets:\n"
         "    - type: JSONL\n"
         "      path: " +
         data +
         "\n"
         "      output_dir: " +
         out +
         "\n"
         "      output_format: jsonl\n"
         "  state_dir: " +
         state + "\n" + extra_loading +
         "processing_params:\n"
         "  inputs:\n"
         "    - name: text\n"
         "      key: text\n"
         "    - name: id\n"
         "      key: id\n"
         "    - name: lang\n"
         "      key: meta.lang\n"
         "    - name: tags\n"
         "      key: tags\n"
         "  outputs: []\n"
         "  remove_columns: true\n"
         "  output_schema:\n"
         "    id: \"{{ id }}\"\n"
         "    tags: \"{{ tags }}\"\n"
         "    conversations:\n"
         "      - role: user\n"
         "        content: \"Rewrite ({{ lang | upper }}): {{ text }}\"\n"
         "      - role: assistant\n"
         "        content: \"{{ text.split(' ')[-1] }} has {{ tags | length }} tags\"\n" +
         extra;
}

}  // namespace mmirage::testing

// The fake SGLang and vLLM launchers of tests/support (fake_sglang, fake_vllm) for e2e tests: they append their
// command line to $FAKE_SERVER_ARGV_LOG and exec llama-server on the synthetic model. Header-only; not thread-safe
// beyond what RunCommand is.
#pragma once

#include <string>

#include "e2e/e2e_util.h"

namespace mmirage::testing {

inline const std::string kFakeHubId = "Qwen/Qwen3-4B-Instruct-2507";

// The llama-server built next to the mmirage binary.
inline std::string BuiltLlamaServer() {
  std::string bin = MMIRAGE_BINARY;
  return bin.substr(0, bin.rfind('/')) + "/llama-server";
}

// Environment assignments under which python imports the fake sglang package.
inline std::string FakeSglangEnv() {
  return "MMIRAGE_PYTHON='" + PythonPath() + "' PYTHONPATH='" + std::string(MMIRAGE_SOURCE_DIR) +
         "/tests/support/fake_sglang' PATH=/usr/bin:/bin";
}

// Environment assignments under which sglang is not importable and the fake `vllm` is on PATH.
inline std::string FakeVllmEnv() {
  return "MMIRAGE_PYTHON=/bin/false PATH='" + std::string(MMIRAGE_SOURCE_DIR) +
         "/tests/support/fake_vllm':/usr/bin:/bin";
}

// `mmirage args` in `d` with the fakes configured (their log: d/argv.log) and the assignments `env`.
inline CommandResult RunWithFakeLaunchers(const TempDir& d, const std::string& env, const std::string& args) {
  return RunCommand("FAKE_SERVER_ARGV_LOG='" + d.Path("argv.log") + "' FAKE_LLAMA_SERVER='" + BuiltLlamaServer() +
                        "' FAKE_MODEL='" + SharedTinyModel() + "' " + env + " '" + MMIRAGE_BINARY + "' " + args,
                    d.path());
}

// The config after its processors: summarise d/data.jsonl (rows of MakeRows) into d/out.
inline std::string SummariseDataYaml(const TempDir& d) {
  return "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path("out") +
         ", output_format: jsonl}]\n  state_dir: " + d.Path("state") +
         "\nprocessing_params:\n"
         "  inputs: [{name: text, key: text}]\n"
         "  outputs: [{name: summary, type: llm, prompt: \"Summarise: {{ text }}\"}]\n"
         "  output_schema: {summary: \"{{ summary }}\"}\n";
}

}  // namespace mmirage::testing

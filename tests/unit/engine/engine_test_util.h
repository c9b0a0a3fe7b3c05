// Helpers for the engine tests: the synthetic test model (generated once per test binary) and a collector of
// completions that records the order in which callbacks ran.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/llama_engine.h"
#include "support/test_util.h"

namespace mmirage::engine::testing {

// The tiny qwen2 model written by mmirage-make-test-model (built next to the mmirage binary), generated once
// into a temporary directory. Returns "" and sets *error when the tool is missing or fails: callers FAIL.
inline std::string TestModelPath(std::string* error) {
  struct Generated {
    mmirage::testing::TempDir dir;  // removed at exit, with the process' statics
    std::string path;
    std::string error;
  };
  static Generated g;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tool = MMIRAGE_BINARY;
    const std::string suffix = "mmirage";
    tool = tool.substr(0, tool.size() - suffix.size()) + "mmirage-make-test-model";
    if (!mmirage::testing::Exists(tool)) {
      g.error = "the test model generator is not built: " + tool +
                " (cmake --build <build> --target mmirage-make-test-model)";
      return;
    }
    std::string out = g.dir.Path("tiny.gguf");
    auto r = mmirage::testing::RunCommand("'" + tool + "' --out '" + out + "' --seed 7 --preset tiny");
    if (r.exit_code != 0) {
      g.error = "mmirage-make-test-model failed (" + std::to_string(r.exit_code) + "): " + r.err;
      return;
    }
    g.path = out;
  });
  Generated* generated = &g;
  *error = generated->error;
  return generated->path;
}

// Options for the tiny model on a small CPU budget.
inline LlamaEngineOptions TinyOptions(const std::string& model_path, int n_parallel) {
  LlamaEngineOptions o;
  o.model_path = model_path;
  o.n_parallel = n_parallel;
  o.n_ctx_seq = 1024;
  o.n_batch = 512;
  o.n_ubatch = 512;
  o.n_threads = 1;
  return o;
}

inline Request Greedy(std::string prompt, int max_new_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0;
  r.sampling.max_new_tokens = max_new_tokens;
  return r;
}

// Collects completions by index; Wait() blocks (bounded) until every expected one arrived.
class Collector {
 public:
  explicit Collector(size_t n) : results_(n), calls_(n, 0) {}

  CompletionCallback For(size_t i) {
    return [this, i](Completion c) {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_[i];
      results_[i] = std::move(c);
      order_.push_back(i);
      cv_.notify_all();
    };
  }
  // True when all arrived within the limit.
  bool Wait(std::chrono::seconds limit = std::chrono::seconds(300)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return order_.size() >= results_.size(); });
  }
  const Completion& at(size_t i) const { return *results_[i]; }
  int calls(size_t i) const { return calls_[i]; }
  const std::vector<size_t>& order() const { return order_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::optional<Completion>> results_;
  std::vector<int> calls_;
  std::vector<size_t> order_;
};

}  // namespace mmirage::engine::testing

// `mmirage tune`: measured engine settings instead of guesses. A sample of the config's real rows (stratified by
// prompt length) runs through the real engine in short timed trials: first the config's own settings, then a
// coarse-to-fine search, one setting at a time from the best so far (not a full grid), over the knobs that matter
// for the tuned processor's backend (exec/tune_space.h) and over processing_params.order, within a time budget.
// Trial outputs are thrown away: nothing is written to the output, state or generation cache. A trial whose engine
// fails to start (out of memory, bad combination) or that loses more rows than the config's own settings (KV cache
// full, ...) is reported as failed, never fatal. Not thread-safe; one call at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/value.h"
#include "process/output_generator.h"
#include "util/env.h"

namespace mmirage::exec {

struct TuneOptions {
  const config::Config* config = nullptr;  // borrowed
  double budget_seconds = 300;             // wall time for all trials (the first trial always runs)
  int64_t sample_rows = 32;
  Env* env = nullptr;                     // default Env::Default()
  process::EngineFactory engine_factory;  // default: process::llm::DefaultEngineFactory (tests inject)
};

// One knob: `key` is "order", "max_concurrency" (endpoint) or an extra_engine_args key; value as YAML would hold it.
struct TuneSetting {
  std::string key;
  Value value;
};

struct TuneTrial {
  std::vector<TuneSetting> changes;  // against the config's own settings (empty: the config itself)
  bool ok = false;
  std::string error;   // why it failed (engine start, lost rows)
  double seconds = 0;  // wall time of the trial, model load included
  double load_seconds = 0;
  int64_t rows = 0, failed_rows = 0, output_tokens = 0, prompt_tokens = 0, prompt_tokens_reused = 0;
  double output_tokens_per_sec = 0, rows_per_sec = 0;  // after the model load
  double p95_latency_seconds = 0;                      // per request, submit to answer
  std::string Label() const;                           // "n_parallel=16 order=prefix", "(config)"
};

struct TuneReport {
  std::string processor;  // the tuned processor's type, e.g. "llm"
  std::string backend;    // llama | llama-server | openai | sglang | vllm
  int64_t sample_rows = 0;
  double budget_seconds = 0, elapsed_seconds = 0;
  std::vector<TuneTrial> trials;  // trials[0]: the config's own settings (measured again last when time allows)
  std::vector<TuneSetting> own;   // the config's value of every knob searched (engine defaults where unset)
  size_t best = 0;                // index into trials
  double gain = 1;                // best output tok/s over the config's own (the faster of its measurements)
  int num_gpus = 0;
  std::optional<double> gpu_days_per_billion_tokens;  // at the best settings (device-days on CPU)
  std::optional<double> prefix_gain;                  // order prefix vs input, rows/s, when both were measured
  std::vector<std::string> notes;

  const TuneTrial& Best() const { return trials[best]; }
  // {"processor", "backend", "sample_rows", "budget_seconds", "elapsed_seconds", "trials": [{"settings", "ok",
  // "error", "output_tokens_per_sec", "rows_per_sec", "p95_latency_seconds", ...}], "best": {...}, "gain",
  // "gpu_days_per_billion_tokens", "prefix_gain", "notes"}.
  Value ToValue() const;
};

// Errors: no `llm` output to tune (kInvalidArgument), dataset reading, a sample with no usable row, the config's
// own settings failing to start (that trial's error: nothing to compare against).
Result<TuneReport> RunTune(const TuneOptions& options);

// The config with `changes` applied to processor `processor_index` (and processing_params.order).
config::Config ApplyTuneSettings(const config::Config& config, size_t processor_index,
                                 const std::vector<TuneSetting>& changes);

}  // namespace mmirage::exec

// `mmirage estimate`: what a run of a config will cost before it runs — tokens, wall time, GPU time, money.
// A reproducible sample spread over the dataset is rendered, its prompt tokens counted with the model's own
// tokenizer and, unless generation is off, run for real on the configured engine in a temporary directory (nothing
// of the real run's state, outputs or cache is touched); totals are extrapolated with a 90 % interval
// (stats/estimate_math.h). Paid endpoints (backend openai, batch_api) are never called unless `generate_via` names
// a synchronous OpenAI-compatible endpoint; without it their output tokens are bounded by max tokens.
// Errors: see RunEstimate. Not thread-safe; one call at a time (it may run a shard in-process).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/value.h"
#include "process/output_generator.h"
#include "stats/estimate_math.h"
#include "util/env.h"

namespace mmirage::exec {

struct EstimateOptions {
  const config::Config* config = nullptr;
  int64_t sample_rows = 64;
  bool generate = true;      // false: --no-generate
  std::string generate_via;  // base URL of an OpenAI-compatible endpoint for paid outputs
  Env* env = nullptr;
  process::EngineFactory engine_factory;  // default: process::llm::DefaultEngineFactory (tests inject)
};

struct EstimateReport {
  int64_t rows_total = 0;
  bool rows_total_exact = true;  // false: some parts' rows were estimated from file size
  int64_t sample_rows = 0;
  Interval input_tokens;
  std::optional<Interval> output_tokens;           // nullopt: unknown
  bool output_tokens_bound = false;                // true: an upper bound from max tokens, not a measurement
  std::optional<Interval> wall_seconds;            // all shards, at the configured concurrency
  std::optional<Interval> wall_seconds_per_shard;  // the largest shard
  std::optional<double> gpu_days_per_billion_tokens;
  std::optional<double> gpu_hours;
  std::optional<Interval> cost_usd;
  // The same rows through the provider's batch API (process/llm/pricing.h), when it has one: its name and cost.
  std::optional<Interval> batch_cost_usd;
  std::string batch_api;
  // Measured on the sample run.
  std::optional<double> rows_per_sec, output_tokens_per_sec, model_load_seconds;
  int64_t sample_failed_rows = 0;
  int64_t num_shards = 1, concurrency = 1;
  struct OutputCache {
    std::string name;
    bool cached = false;
    std::string reason;
  };
  std::vector<OutputCache> outputs;
  std::vector<std::string> assumptions;  // sentences: what is measured, what is assumed

  // The JSON object of --format json: rows_total, sample_rows, input_tokens / output_tokens / wall_seconds as
  // {"estimate", "low", "high"} (or null), gpu_days_per_billion_tokens, cost_usd (same shape, or null),
  // assumptions; then our extras (output_tokens_bound, wall_seconds_per_shard, gpu_hours, measured, outputs).
  Value ToValue() const;
};

// Errors: dataset resolution/reading (kNotFound, kIOError, kCorruption with file:line), a model whose
// tokenizer cannot be loaded, a sample run that cannot start (engine load failure). Rows that fail in the
// sample run are counted (sample_failed_rows), not errors.
Result<EstimateReport> RunEstimate(const EstimateOptions& options);

}  // namespace mmirage::exec

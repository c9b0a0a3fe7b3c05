// Per-shard statistics: base values measured by the worker and derived values recomputed
// every time the object is serialised. Plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/value.h"

namespace mmirage {

struct ShardStats {
  std::optional<double> runtime_seconds;  // mark running → mark success, seconds
  int64_t rows_processed = 0;             // rows written (rows listed in errors.jsonl are not counted)
  std::optional<double> gpu_util_mean, gpu_util_min, gpu_util_max;  // percent
  int64_t gpu_util_samples = 0;
  std::optional<int64_t> input_tokens, output_tokens;  // null when the sum is 0
  std::optional<int64_t> num_gpus;
  std::optional<double> model_load_seconds;       // null when the sum is 0
  std::optional<double> throughput_rows_per_sec;  // stored once, at success
  // Extensions (after MMIRAGE's keys): prompt tokens served from a shared prefix instead of evaluated, and the
  // output token rate of the whole shard (meaningful on CPU too, where per-GPU rates are null).
  std::optional<int64_t> prompt_tokens_reused;
  // Extensions (vision): images run through the vision encoder, and images whose encoding was reused (null when
  // the shard sent no image to the embedded engine).
  std::optional<int64_t> images_encoded, images_reused;
  // Extensions from the utilisation poller (stats/utilization.h): this process's CPU use in percent of one core
  // (as `top`; above 100 with several busy threads) and the whole machine's CPU use in percent of all cores.
  std::optional<double> cpu_util_mean, machine_cpu_util_mean;
  // Extension, batch_api with prices configured: what the provider tokens cost (serialised only when set).
  std::optional<double> cost;
  // Extension, an llm processor on a hosted API with a known price: what its generations cost, USD.
  std::optional<double> cost_usd;
  // Extensions from the generation cache: generations answered by it and their output tokens. input_tokens and
  // output_tokens (and every rate) count generated tokens only. Serialised only when set.
  std::optional<int64_t> cached_generations, cached_output_tokens;
  // Extensions from an engine fleet (engine/fleet.h): its replicas, their restarts, and the output tokens each
  // generated (a list, one per replica). Serialised only when set.
  std::optional<int64_t> replicas, replica_restarts;
  Value replica_output_tokens;

  // The object with derived values, keys in MMIRAGE's order.
  Value ToValue() const;
  // Reads the base values back (unconvertible → null); derived values are ignored.
  static ShardStats FromValue(const Value& v);

  // max(0, runtime − model_load) (runtime when load is null); nullopt when runtime is null.
  std::optional<double> InferenceRuntime() const;
};

// Python's round(x, ndigits) (round-half-even on the decimal representation is approximated by std::round on the
// scaled value, which matches for the values we store).
double RoundTo(double x, int ndigits);

// A duration in words, e.g. "2 days, 1 hour and 33.12 seconds".
std::string HumanDuration(double seconds);

}  // namespace mmirage

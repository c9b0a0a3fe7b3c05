// OutputGenerator: produces the value of a model output variable for one row — renders nothing itself (the
// prompt comes rendered), submits to the processor's engine, checks JSON outputs against their schema, and
// regenerates on an invalid output or an engine error up to `generation_retries` times (with a new seed, twice
// the max_new_tokens when the output was cut, and temperature 0.7 when it was greedy — a greedy retry would only
// repeat itself). The result is a value or an error for that row; never a blank.
//
// Thread-safety: Generate may be called from any thread; `done` runs on an engine thread and must be quick.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/admission.h"
#include "engine/engine.h"
#include "engine/fleet.h"
#include "process/output_processor.h"
#include "util/env.h"

namespace mmirage::cache {
class GenerationCache;
}  // namespace mmirage::cache

namespace mmirage::process {

// Makes the engine of an `llm` processor (injectable for tests). Appends warnings.
using EngineFactory =
    std::function<Result<std::unique_ptr<engine::Engine>>(const config::Processor&, std::vector<std::string>*)>;
// The embedded llama.cpp engine, options mapped by MapEngineOptions.
EngineFactory LlamaEngineFactory();

class OutputGenerator {
 public:
  // Creates one engine per processor type that some output uses (`llm`; a config with image inputs gives the
  // factory the processor with server_args.mmproj_path "auto" when unset: see process/llm/mmproj.h), or its
  // OutputProcessor (`custom`, `image_gen`: started here, workers booted and servers validated). Errors: engine
  // load and processor start failures (located at the processor), a processor type this build cannot run
  // (batch_api). `env` (borrowed, must outlive the generator) is the processors' file access (image_gen's images).
  static Result<std::unique_ptr<OutputGenerator>> Create(Env* env, const config::Config& config,
                                                         const EngineFactory& factory,
                                                         std::vector<std::string>* warnings);
  ~OutputGenerator();

  // `vars` is the row's variable environment so far (inputs and earlier outputs, an object): processors that need
  // more than the prompt (images, user functions, extra templates) read it. The config's image variables become
  // the request's images of `llm` outputs (process/llm/image_inputs.h); an unusable image value finishes at once, on
  // this thread, with an error. REQUIRES: config.processing.outputs[output_index] is a model output.
  void Generate(size_t output_index, std::string prompt, const Value& vars, const RowInfo& row,
                std::function<void(GenerateResult)> done);

  // Looks deterministic requests up in `cache` (borrowed; must outlive this generator's generations) before the
  // engine, and stores what the engine generates. Computes each processor's model identity (process/cache_key.h);
  // a processor whose identity cannot be computed runs uncached, with a warning. Call before Generate.
  void EnableCache(cache::GenerationCache* cache);
  // Seconds spent on the cache's behalf outside the cache itself: model identities and request keys.
  double CacheKeySeconds() const;

  int Capacity() const;                     // sum of the engines' parallel slots
  double LoadSeconds() const;               // sum of the engines' load times
  int NumGpus() const;                      // max over engines
  engine::EngineCounters Counters() const;  // summed over engines
  // Per replica of every fleet engine (engine/fleet.h), in engine order; empty without a fleet.
  std::vector<engine::ReplicaStats> ReplicaStats() const;
  // The fleets' replica health events since the last call (engine/fleet.h), oldest first per fleet; thread-safe.
  std::vector<engine::FleetEvent> TakeReplicaEvents();
  // The admission controller of the first engine paced by one (a hosted API); nullptr when none is.
  std::shared_ptr<const engine::AdmissionController> Admission() const;
  void Shutdown();

 private:
  struct Route;
  struct Attempt;
  explicit OutputGenerator(const config::Config* config);
  void Submit(std::shared_ptr<Attempt> attempt);
  void OnCompletion(const std::shared_ptr<Attempt>& attempt, engine::Completion c, bool cached);

  const config::Config* config_;
  std::map<std::string, std::unique_ptr<engine::Engine>> engines_;      // by processor type
  std::map<std::string, std::unique_ptr<OutputProcessor>> processors_;  // by processor type (custom, image_gen)
  std::vector<std::unique_ptr<Route>> routes_;                          // by output index
  cache::GenerationCache* cache_ = nullptr;
  std::atomic<int64_t> cache_key_us_{0};
};

}  // namespace mmirage::process

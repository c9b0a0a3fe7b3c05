// Private to `mmirage tune` (exec/tune.cc): one timed trial of a config on a sample file, and the sample itself.
// A trial creates the engines, streams the sample through the real scheduler into a sink that only counts, and
// shuts the engines down; nothing is written but the caller's temporary files, and the generation cache is never
// enabled. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "exec/tune.h"
#include "process/output_generator.h"
#include "util/env.h"

namespace mmirage::exec {

struct TuneSample {
  std::string jsonl;  // the sampled rows, one JSON object per line, in dataset order
  int64_t rows = 0;
};

// Up to `n` rows of the first dataset (its first 5000 rows scanned), stratified by the rendered length of the first
// model output's prompt. Errors: dataset resolution/reading; no row that extracts (kInvalidArgument).
Result<TuneSample> DrawTuneSample(Env* env, const config::Config& config, int64_t n);

struct TrialInput {
  Env* env = nullptr;
  const config::Config* config = nullptr;  // the config of this trial (settings applied)
  std::string sample_path;                 // JSONL
  const process::EngineFactory* factory = nullptr;
  // After the model load, a trial stops at the first handed-over rows past this many seconds (0: runs the whole
  // sample) and is measured on the rows done, so that one slow setting cannot eat the budget.
  double max_seconds = 0;
};

// Runs one trial. Never fails: an engine that does not start or a stream error is the trial's `error` (ok false).
// Sets *num_gpus to the most GPUs an engine of the trial reported.
TuneTrial RunTuneTrial(const TrialInput& in, int* num_gpus);

}  // namespace mmirage::exec

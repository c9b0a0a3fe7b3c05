// `preview`: for the first rows of a shard, the extracted variables, every rendered prompt (the user turn as the
// model gets it, `<image N: var>` where each image goes) and the rendered output row, with model outputs as
// placeholders. No model is loaded and nothing is written. Not thread-safe (one call at a time).
#pragma once

#include <cstdint>
#include <ostream>

#include "config/config.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::exec {

struct PreviewOptions {
  int64_t rows = 3;   // rows shown per dataset split (from the start of the config's shard)
  bool json = false;  // one JSON object per row instead of the text report
};

// Writes the preview of every dataset of `config` to `out`. A row that fails (bad JSON, a JMESPath or template
// error) is shown with its error and counted. Returns that count; errors: the dataset cannot be listed or read.
Result<int64_t> Preview(Env* env, const config::Config& config, const PreviewOptions& options, std::ostream& out);

}  // namespace mmirage::exec

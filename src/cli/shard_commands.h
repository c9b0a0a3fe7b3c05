// `mmirage check`, `retry` and `stats`, and what check and retry share: printing the classification and
// re-running (or resubmitting) failed shards. Errors are reported on stderr; functions return the exit code.
// Thread-safety: one command per process, on the main thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/common.h"
#include "exec/shard_classify.h"

namespace mmirage::cli {

Runner RegisterCheck(CLI::App* app);
Runner RegisterRetry(CLI::App* app);
Runner RegisterStats(CLI::App* app);

// Table then summary JSON on stdout (or the one `--json` object), plus a warning on stderr per exhausted or stale
// shard.
void PrintClassification(const exec::Classification& c, bool json);

// What `check --retry` and `retry` were asked for.
struct RetryRequest {
  bool yes = false;    // -y: no confirmation
  bool json = false;   // --json: the prompt goes to stderr, our stdout stays JSON
  bool stats = false;  // --stats for the re-run shards
  std::string log_level = "INFO";
};
// Confirms, then re-runs the retryable failed shards of `c` (locally, as worker processes, within their attempt
// budget), resubmits them (SLURM) or runs them as one waited-for Ray job (ray mode), and prints the
// classification afterwards. Returns the exit code.
int RetryShards(const config::Config& config, const exec::ClassifyOptions& co, const exec::Classification& c,
                const RetryRequest& request);

}  // namespace mmirage::cli

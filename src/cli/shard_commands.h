// `mmirage check`, `retry` and `stats` (spec cli.md §2.3, §2.4, §2.7, §3, §4), and what check and retry share:
// printing the classification, asking for confirmation and re-running failed shards locally.
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

// cli.md §3.2 with our fix: `-y` skips the prompt; without a terminal on stdin → a message and false; otherwise
// asks "Retry <n> shard(s)? (y/N) " (on stderr when `prompt_on_stderr`, so that stdout stays JSON) and accepts
// "y" and "yes" (trimmed, any case).
// What `check --retry` and `retry` were asked for.
struct RetryRequest {
  bool yes = false;    // -y: no confirmation
  bool json = false;   // --json: the prompt goes to stderr, our stdout stays JSON
  bool stats = false;  // --stats for the re-run shards
  std::string log_level = "INFO";
};
// Confirms, then re-runs the retryable failed shards of `c` (locally, as worker processes, within their attempt
// budget) or resubmits them (SLURM), and prints the classification afterwards. Returns the exit code.
int RetryShards(const config::Config& config, const exec::ClassifyOptions& co, const exec::Classification& c,
                const RetryRequest& request);

}  // namespace mmirage::cli

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
bool ConfirmRetry(size_t n, bool yes, bool prompt_on_stderr);

// Runs `<this binary> run --config <config_path> --shard-id N [--log-level L] [--stats]` for each id in turn, the
// children's stdout sent to our stderr. Returns the number of shards whose run exited non-zero.
int RerunShardsLocally(const std::string& config_path, const std::vector<int64_t>& ids, const std::string& log_level,
                       bool stats);

}  // namespace mmirage::cli

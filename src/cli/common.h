// Shared plumbing of the subcommands: config loading with printed diagnostics, exit codes. Runners report errors
// on stderr and return an exit code. One command per process, on the main thread.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "config/config.h"
#include "util/status.h"

namespace mmirage::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInProgress = 75;  // batch_api: some batch is still running at the provider (EX_TEMPFAIL)

struct CommonOptions {
  std::string config_path;
  std::string log_level = "INFO";
};

// Adds --config (required when `require_config`) and --log-level to a subcommand.
void AddCommonOptions(CLI::App* cmd, CommonOptions* opts, bool require_config = true);
// Applies --log-level. Returns false (after printing) on a bad value.
bool ApplyLogLevel(const CommonOptions& opts);

// Loads and validates the config; prints every warning (and on failure every error) to stderr, one per line.
std::optional<config::Config> LoadConfigOrReport(const std::string& path, std::optional<int64_t> shard_override = {});

// Prints "error: <message>" lines (one per line of the message) to stderr.
void ReportError(const Status& s);

// Subcommand registration: each returns a function run after parsing that yields the exit code.
using Runner = std::function<int()>;
Runner RegisterRun(CLI::App* app);
Runner RegisterMerge(CLI::App* app);
Runner RegisterMergeDir(CLI::App* app);
Runner RegisterValidate(CLI::App* app);
Runner RegisterPreview(CLI::App* app);
Runner RegisterQuery(CLI::App* app);
Runner RegisterCat(CLI::App* app);
Runner RegisterCollect(CLI::App* app);
Runner RegisterTune(CLI::App* app);
// One batch_api shard's next step (cmd_collect.cc): returns 0 (exported, submitted or complete), 75 (a batch is
// still in progress) or 1 (an error, logged). `merge_after`: merge the datasets once the shard is complete.
int RunBatchShardCommand(const config::Config& config, int64_t shard_id, const std::string& export_prompts,
                         bool resubmit_failed, bool collect_only, std::optional<bool> wait, bool merge_after);

}  // namespace mmirage::cli

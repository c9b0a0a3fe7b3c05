// `mmirage retry`: re-run the retryable failed shards (SLURM, Ray and local mode). Exit 0 only when every shard has
// succeeded at the end; a running shard is not "already succeeded".
#include <iostream>
#include <memory>

#include "cli/shard_commands.h"
#include "cli/slurm_cli.h"
#include "state/shard_state.h"
#include "util/log.h"

namespace mmirage::cli {
namespace {

struct RetryOptions {
  CommonOptions common;
  bool yes = false;
  bool json = false;
  bool stats = false;
  bool reset = false;
};

int Retry(const RetryOptions& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path);
  if (!config) return kExitFailure;
  if (config->FindProcessor("batch_api")) {
    std::cerr << "error: retrying batch_api jobs is not available in this build yet\n";
    return kExitFailure;
  }
  exec::ClassifyOptions co = exec::ClassifyOptionsFromConfig(Env::Default(), *config);
  exec::Classification c = exec::ClassifyShards(co);
  if (o.reset && !c.exhausted.empty()) {
    // --reset: exhausted shards get a fresh budget (a "reset" line in their attempts.log), then retry as usual.
    for (int64_t id : c.exhausted) {
      Status st = ShardState(Env::Default(), config->loading.state_dir, id).ResetBudget();
      if (!st.ok()) {
        LOG_ERROR("Shard " << id << ": cannot reset its retry budget: " << st.ToString());
        return kExitFailure;
      }
      LOG_INFO("Shard " << id << ": retry budget reset");
    }
    c = exec::ClassifyShards(co);
  }
  PrintClassification(c, o.json);
  if (c.failed.empty()) {
    if (!c.exhausted.empty()) {
      LOG_ERROR("No retryable shards remain: " << c.exhausted.size()
                                               << " shard(s) used their attempts without "
                                                  "progress; `mmirage retry --config "
                                               << o.common.config_path << " --reset` gives them a fresh budget");
      return kExitFailure;
    }
    if (!c.running.empty()) {
      LOG_WARN(c.running.size() << " shard(s) still running; nothing to retry yet");
      return kExitFailure;
    }
    LOG_INFO("All shards already succeeded.");
    return kExitOk;
  }
  return RetryShards(*config, co, c, RetryRequest{o.yes, o.json, o.stats, o.common.log_level});
}

}  // namespace

Runner RegisterRetry(CLI::App* app) {
  auto o = std::make_shared<RetryOptions>();
  auto* cmd = app->add_subcommand("retry", "Re-run the failed shards that have attempts left");
  AddCommonOptions(cmd, &o->common);
  cmd->add_flag("-y,--yes", o->yes, "Do not ask for confirmation");
  cmd->add_flag("--json", o->json, "Print JSON objects {\"summary\", \"shards\"} instead of tables");
  cmd->add_flag("--stats", o->stats, "Re-run shards with GPU utilisation sampling");
  cmd->add_flag("--reset", o->reset,
                "Give exhausted shards a fresh retry budget (recorded in attempts.log), then retry");
  return [o]() { return Retry(*o); };
}

}  // namespace mmirage::cli

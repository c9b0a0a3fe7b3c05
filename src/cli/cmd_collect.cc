// `mmirage collect`: fetch the results of a batch_api config's submitted shards, publish the shards whose batches
// are all done, and say which are still in progress (exit 75). Also the batch_api path of `mmirage run`.
#include <iostream>
#include <memory>

#include "cli/common.h"
#include "cli/merge_common.h"
#include "exec/shard_classify.h"
#include "batch/shard.h"
#include "util/env.h"
#include "util/log.h"
#include "util/signals.h"

namespace mmirage::cli {
namespace {

std::optional<std::string> GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

struct CollectOptions {
  CommonOptions common;
  std::optional<int64_t> shard_id;
  bool resubmit_failed = false;
  bool wait = false;
};

int Collect(const CollectOptions& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path, o.shard_id);
  if (!config) return kExitFailure;
  if (!batch::IsBatchConfig(*config)) {
    LOG_ERROR("collect needs a config with batch_api outputs; " << config->path << " has none");
    return kExitFailure;
  }
  InstallStopSignalHandlers();
  std::vector<int64_t> ids;
  if (o.shard_id) {
    ids.push_back(*o.shard_id);
  } else {
    for (int64_t i = 0; i < config->loading.num_shards; ++i) ids.push_back(i);
  }
  int worst = kExitOk;
  int64_t complete = 0, in_progress = 0, failed = 0;
  for (int64_t id : ids) {
    int rc = RunBatchShardCommand(*config, id, "", o.resubmit_failed, /*collect_only=*/true,
                                  o.wait ? std::optional<bool>(true) : std::nullopt, false);
    if (rc == kExitOk) ++complete;
    else if (rc == kExitInProgress) ++in_progress;
    else ++failed;
    if (rc == kExitFailure || (rc == kExitInProgress && worst == kExitOk)) worst = rc;
    if (StopRequested()) return 128 + StopSignal();
  }
  LOG_INFO("collect: " << complete << " shard(s) complete, " << in_progress << " in progress, " << failed << " failed");
  if (worst == kExitOk && config->execution.merge && !o.shard_id) {
    LOG_INFO("Execution_params.merge is true; merging shard outputs");
    return MergeAllDatasets(Env::Default(), *config, MergeTarget{}, /*allow_partial=*/false);
  }
  return worst;
}

}  // namespace

int RunBatchShardCommand(const config::Config& config, int64_t shard_id, const std::string& export_prompts,
                         bool resubmit_failed, bool collect_only, std::optional<bool> wait, bool merge_after) {
  batch::BatchShardOptions bo;
  bo.env = Env::Default();
  bo.config = &config;
  bo.shard_id = shard_id;
  bo.export_prompts = export_prompts;
  bo.resubmit_failed = resubmit_failed;
  bo.collect_only = collect_only;
  bo.wait = wait;
  bo.slurm_job_id = GetEnv("SLURM_JOB_ID");
  bo.slurm_array_task_id = GetEnv("SLURM_ARRAY_TASK_ID");
  auto r = batch::RunBatchShard(bo);
  if (!r.ok()) {
    LOG_ERROR("Shard " << shard_id << " failed: " << r.status().message());
    return kExitFailure;
  }
  switch (r->outcome) {
    case batch::BatchOutcome::kExported:
      LOG_INFO("Exported the requests of shard " << shard_id << " to " << r->export_path);
      return kExitOk;
    case batch::BatchOutcome::kSubmitted:
      LOG_INFO("Shard " << shard_id << ": " << r->batches_total
                        << " batch(es) submitted; run `mmirage collect "
                           "--config "
                        << config.path << "` later to fetch the results");
      return kExitOk;
    case batch::BatchOutcome::kInProgress:
      LOG_INFO("Shard " << shard_id << ": " << r->batches_total - r->batches_done << " batch(es) still in progress");
      return kExitInProgress;
    case batch::BatchOutcome::kComplete:
      if (merge_after) {
        LOG_INFO("Execution_params.merge is true; merging shard outputs");
        return MergeAllDatasets(Env::Default(), config, MergeTarget{}, /*allow_partial=*/false);
      }
      return kExitOk;
  }
  return kExitFailure;
}

Runner RegisterCollect(CLI::App* app) {
  auto o = std::make_shared<CollectOptions>();
  auto* cmd = app->add_subcommand("collect", "batch_api: fetch finished batches and publish the complete shards");
  AddCommonOptions(cmd, &o->common);
  cmd->add_option("--shard-id", o->shard_id, "Only this shard")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--resubmit-failed", o->resubmit_failed,
                "Submit the requests that failed at the provider again (as a new chunk) instead of publishing");
  cmd->add_flag("--wait", o->wait, "Poll (processor poll_interval_seconds) until every batch is done");
  return [o]() { return Collect(*o); };
}

}  // namespace mmirage::cli

// `mmirage run`: run one shard locally (the --shard-id given, else the config's), then merge when
// execution_params.merge is true.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/common.h"
#include "cli/merge_common.h"
#include "cli/ray_cli.h"
#include "cli/slurm_cli.h"
#include "exec/local_executor.h"
#include "batch/shard.h"
#include "batch/provider.h"
#include "pipeline/shard_runner.h"
#include "util/process/process_info.h"
#include "util/env.h"
#include "util/log.h"
#include "util/signals.h"
#include "util/process/subprocess.h"

namespace mmirage::cli {
namespace {

struct RunOptions {
  CommonOptions common;
  std::optional<int64_t> shard_id;
  bool force_retry = false;
  bool stats = false;
  bool quiet = false;
  std::string progress = "auto";
  std::string export_prompts;
  bool resubmit_failed = false;
};

std::optional<std::string> GetEnvVar(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

int Run(const RunOptions& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path, o.shard_id);
  if (!config) return kExitFailure;
  bool batch = batch::IsBatchConfig(*config);
  if (!o.export_prompts.empty() && !batch) LOG_WARN("--export-prompts is ignored: the config has no batch_api output");
  if (batch && !o.export_prompts.empty() && config->execution.mode == "slurm" && !o.shard_id) {
    LOG_ERROR("--export-prompts is not supported in slurm mode. Run it in local mode.");
    return kExitFailure;
  }
  if (batch && o.export_prompts.empty()) {  // the key, before any row is read or any worker starts
    const config::Processor* p = config->FindProcessor("batch_api");
    Status key = p ? batch::CheckApiKey(p->batch_api.provider, config::ProcessVarLookup()) : Status::OK();
    if (!key.ok()) {
      LOG_ERROR(key.message());
      return kExitFailure;
    }
  }
  if (config->execution.mode == "slurm" && !o.shard_id) return RunSlurm(*config, o.force_retry, o.stats);
  if (config->execution.mode == "ray" && !o.shard_id) return RunRay(*config, o.force_retry, o.stats);
  if (batch && (o.shard_id || !(config->execution.retry || o.force_retry) || !o.export_prompts.empty())) {
    InstallStopSignalHandlers();
    return RunBatchShardCommand(*config, config->loading.shard_id, o.export_prompts, o.resubmit_failed,
                                /*collect_only=*/false, std::nullopt, config->execution.merge && !o.shard_id);
  }
  Env* env = Env::Default();
  if (!o.shard_id && (config->execution.retry || o.force_retry)) {
    // Every shard, as worker processes, with retries; then merge.
    auto self = SelfExecutablePath();
    if (!self.ok()) {
      ReportError(self.status());
      return kExitFailure;
    }
    InstallStopSignalHandlers();
    exec::LocalRunOptions lo;
    lo.config_path = env->AbsolutePath(o.common.config_path);
    lo.binary = *self;
    lo.log_level = o.common.log_level;
    lo.collect_stats = o.stats;
    int rc = exec::RunAllShardsLocally(env, *config, lo);
    if (rc != 0 || !config->execution.merge) return rc;
    LOG_INFO("Execution_params.merge is true; merging shard outputs");
    return MergeAllDatasets(env, *config, MergeTarget{}, /*allow_partial=*/false);
  }
  pipeline::ShardRunOptions ro;
  ro.env = env;
  ro.config = &*config;
  ro.shard_id = config->loading.shard_id;
  ro.slurm_job_id = GetEnvVar("SLURM_JOB_ID");
  ro.slurm_array_task_id = GetEnvVar("SLURM_ARRAY_TASK_ID");
  ro.collect_gpu_stats = o.stats || GetEnvVar("MMIRAGE_COLLECT_STATS").value_or("") == "1";
  ro.cuda_visible_devices = GetEnvVar("CUDA_VISIBLE_DEVICES");
  if (auto iv = GetEnvVar("MMIRAGE_TIMELINE_INTERVAL_SECONDS")) {  // timeline.jsonl sample period (default 10 s)
    char* end = nullptr;
    double secs = std::strtod(iv->c_str(), &end);
    if (iv->empty() || *end != '\0' || !(secs >= 0.5 && secs <= 86400)) {
      LOG_ERROR("MMIRAGE_TIMELINE_INTERVAL_SECONDS='" << *iv << "': expected a number of seconds in [0.5, 86400]");
      return kExitUsage;
    }
    ro.timeline_interval_seconds = secs;
  }
  ro.quiet = o.quiet || o.progress == "none";
  ro.progress_on_terminal = o.progress == "terminal" || (o.progress == "auto" && ::isatty(2) == 1);
  InstallStopSignalHandlers();
  auto report = pipeline::RunShard(ro);
  if (!report.ok()) {
    LOG_ERROR("Shard " << ro.shard_id << " failed: " << report.status().message());
    return StopRequested() ? 128 + StopSignal() : kExitFailure;
  }
  if (config->execution.merge && !o.shard_id) {
    LOG_INFO("Execution_params.merge is true; merging shard outputs");
    return MergeAllDatasets(env, *config, MergeTarget{}, /*allow_partial=*/false);
  }
  return kExitOk;
}

}  // namespace

Runner RegisterRun(CLI::App* app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app->add_subcommand("run", "Process a shard of every dataset (and merge when configured)");
  AddCommonOptions(cmd, &o->common);
  cmd->add_option("--shard-id", o->shard_id, "Run only this shard (overrides loading_params.shard_id)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--force-retry", o->force_retry, "Retry failed shards even if execution_params.retry is false");
  cmd->add_flag("--stats", o->stats, "Sample GPU utilisation while running (MMIRAGE_COLLECT_STATS=1)");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress display (the log still reports start, end and errors)");
  cmd->add_option("--progress", o->progress,
                  "auto (a live line on a terminal, else a log line every 10 s), terminal, log or none")
      ->check(CLI::IsMember({"auto", "terminal", "log", "none"}));
  cmd->add_option("--export-prompts", o->export_prompts, "batch_api dry run: write the request files here")
      ->check([](const std::string& v) {
        return v.find_first_not_of(" \t") == std::string::npos ? std::string("must not be blank") : std::string();
      });
  cmd->add_flag("--resubmit-failed", o->resubmit_failed,
                "batch_api: submit the requests that failed at the provider again (as a new chunk)");
  return [o]() { return Run(*o); };
}

}  // namespace mmirage::cli

// `mmirage submit` and `run` in slurm mode: the CLI side of exec/slurm_run.h (printing, merge, exit codes).
#include <iostream>
#include <memory>

#include "cli/merge_common.h"
#include "cli/slurm_cli.h"
#include "exec/slurm_run.h"
#include "util/log.h"
#include "util/parse_int.h"

namespace mmirage::cli {
namespace {

struct SubmitOptions {
  CommonOptions common;
  std::string shard_ids;
  bool wait = false;
  bool stats = false;
};

// --shard-ids: comma-separated, blank tokens ignored, digits only, < num_shards.
Result<std::vector<int64_t>> ParseShardIds(const std::string& list, int64_t num_shards) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string t = list.substr(start, comma - start);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.erase(0, 1);
    start = comma + 1;
    if (t.empty()) continue;
    std::optional<int64_t> id = ParseNonNegativeInt64(t);
    if (!id) return Status::InvalidArgument("Invalid shard id '" + t + "'; expected integers");
    if (*id >= num_shards) {
      return Status::InvalidArgument("Invalid shard id " + t + "; expected 0 <= shard_id < " +
                                     std::to_string(num_shards));
    }
    ids.push_back(*id);
  }
  return ids;
}

void PrintFailures(const exec::SlurmRunReport& r, int64_t max_retries) {
  std::string rep = r.FailureReport(max_retries);
  if (!rep.empty()) std::cerr << rep;
}

int Submit(const SubmitOptions& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path);
  if (!config) return kExitFailure;
  if (config->execution.mode != "slurm") {
    LOG_ERROR("submit requires execution_params.mode=slurm");
    return kExitFailure;
  }
  auto ids = ParseShardIds(o.shard_ids, config->loading.num_shards);
  if (!ids.ok()) {
    ReportError(ids.status());
    return kExitUsage;
  }
  exec::SlurmOptions so;
  so.config = &*config;
  so.stats = o.stats;
  so.wait = o.wait;
  auto report = exec::SubmitAndMaybeWait(so, *ids);
  if (!report.ok()) {
    ReportError(report.status());
    return kExitFailure;
  }
  if (!o.wait) return kExitOk;
  if (report->all_succeeded) {
    LOG_INFO("All submitted shards completed successfully");
    return kExitOk;
  }
  PrintFailures(*report, config->execution.max_retries);
  return kExitFailure;
}

}  // namespace

int RunSlurm(const config::Config& config, bool force_retry, bool stats) {
  exec::SlurmOptions so;
  so.config = &config;
  so.stats = stats;
  so.auto_retry = force_retry || config.execution.retry;
  so.wait = config.execution.merge;
  auto report = exec::RunSlurmLoop(so);
  if (!report.ok()) {
    ReportError(report.status());
    return kExitFailure;
  }
  if (!so.auto_retry && !so.wait) return kExitOk;  // submitted, not waited for
  if (!report->all_succeeded) {
    const int64_t max_retries = config.execution.max_retries;
    PrintFailures(*report, max_retries);
    if (!report->exhausted.empty()) {
      LOG_ERROR("Pipeline ended with " << report->exhausted.size() << " shard(s) that exhausted max_retries="
                                       << max_retries << "; merge will not start");
    } else {
      LOG_ERROR("SLURM run completed with failed shards; merge will not start");
    }
    return kExitFailure;
  }
  if (config.execution.merge) {
    LOG_INFO("Execution_params.merge is true; merging shard outputs");
    return MergeAllDatasets(Env::Default(), config, MergeTarget{}, /*allow_partial=*/false);
  }
  return kExitOk;
}

Status SubmitSlurmShards(const config::Config& config, const std::vector<int64_t>& ids, bool stats) {
  exec::SlurmOptions so;
  so.config = &config;
  so.stats = stats;
  auto job = exec::SubmitShards(so, ids);
  return job.ok() ? Status::OK() : job.status();
}

Runner RegisterSubmit(CLI::App* app) {
  auto o = std::make_shared<SubmitOptions>();
  auto* cmd = app->add_subcommand("submit", "Submit shards as a SLURM array job");
  AddCommonOptions(cmd, &o->common);
  cmd->add_option("--shard-ids", o->shard_ids, "Comma-separated shard ids (default: every shard)");
  cmd->add_flag("--wait", o->wait, "Wait for the job; exit 0 only if every submitted shard succeeded");
  cmd->add_flag("--stats", o->stats, "Sample GPU utilisation in the tasks (MMIRAGE_COLLECT_STATS=1)");
  return [o]() { return Submit(*o); };
}

}  // namespace mmirage::cli

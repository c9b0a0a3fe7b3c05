// `run` in ray mode (cli/ray_cli.h).
#include <iostream>

#include "cli/common.h"
#include "cli/merge_common.h"
#include "cli/ray_cli.h"
#include "exec/ray_run.h"
#include "util/env.h"
#include "util/log.h"
#include "util/signals.h"

namespace mmirage::cli {

int RunRay(const config::Config& config, bool force_retry, bool stats) {
  exec::RayOptions ro;
  ro.config = &config;
  ro.stats = stats;
  ro.auto_retry = force_retry || config.execution.retry;
  ro.wait = config.execution.merge;
  InstallStopSignalHandlers();
  auto report = exec::RunRayLoop(ro);
  if (!report.ok()) {
    ReportError(report.status());
    return StopRequested() ? 128 + StopSignal() : kExitFailure;
  }
  if (!ro.auto_retry && !ro.wait) return kExitOk;  // submitted, not waited for
  if (!report->all_succeeded) {
    const int64_t max_retries = config.execution.max_retries;
    std::cerr << report->FailureReport(max_retries);
    if (!report->exhausted.empty()) {
      LOG_ERROR("Pipeline ended with " << report->exhausted.size() << " shard(s) that exhausted max_retries="
                                       << max_retries << "; merge will not start");
    } else {
      LOG_ERROR("Ray run completed with failed shards; merge will not start");
    }
    return kExitFailure;
  }
  if (config.execution.merge) {
    LOG_INFO("Execution_params.merge is true; merging shard outputs");
    return MergeAllDatasets(Env::Default(), config, MergeTarget{}, /*allow_partial=*/false);
  }
  return kExitOk;
}

Status RunRayShards(const config::Config& config, const std::vector<int64_t>& ids, bool stats) {
  exec::RayOptions ro;
  ro.config = &config;
  ro.stats = stats;
  ro.wait = true;
  ro.shard_ids = ids;
  InstallStopSignalHandlers();
  return exec::RunRayLoop(ro).status();
}

}  // namespace mmirage::cli

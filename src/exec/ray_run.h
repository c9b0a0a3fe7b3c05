// Ray mode orchestration (execution_params.mode: ray, docs/ray.md): submits the shards not yet successful as one Ray
// job through the dashboard's Jobs REST API (POST /api/jobs/). The job's entrypoint runs share/mmirage/ray_driver.py
// with the cluster's Python, which starts one Ray task per shard (the configured num_cpus/num_gpus/memory, at most
// max_parallel at once), each running `<mmirage_bin> run --config C --shard-id N` in project_root. This process
// polls the job (GET /api/jobs/<id>), judges each shard from the state directory like SLURM mode, and resubmits the
// failed ones until every shard succeeded or spent its budget (max_retries + 1 attempts). A job of the same config
// still pending or running when `run` starts is reattached to, not submitted again: it is judged for the shards it
// runs (its metadata's mmirage_shards), and the other unfinished shards are submitted after it. A stop signal
// (SIGINT/SIGTERM) stops the job (POST /api/jobs/<id>/stop) before returning, so the cluster keeps no task of ours.
// Thread-safety: one call at a time. Ownership: everything in the options is borrowed for the call.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "exec/slurm_run.h"
#include "util/env.h"
#include "util/http/event_loop.h"
#include "util/status.h"

namespace mmirage::exec {

using HttpFn = std::function<HttpResponse(const HttpRequest&)>;

struct RayOptions {
  Env* env = nullptr;  // default Env::Default()
  const config::Config* config = nullptr;
  HttpFn http;                     // default HttpFetch
  std::string cwd;                 // default: the process's working directory
  std::string self_exe;            // default SelfExecutablePath(); used when mmirage_bin is unset
  config::VarLookup vars;          // default the process environment
  bool stats = false;              // tasks collect GPU stats (--stats)
  bool auto_retry = false;         // resubmit failed shards (execution_params.retry or --force-retry)
  bool wait = false;               // wait even without auto_retry (merge: true needs completion)
  std::vector<int64_t> shard_ids;  // non-empty: only these shards (those of them not yet successful)
};

// The driver program for `mmirage_bin`: <dir>/share/mmirage/ray_driver.py or <dir>/../share/mmirage/ray_driver.py.
// kNotFound when neither exists (checked on this host: the bundle must be on storage the cluster sees).
Result<std::string> FindRayDriver(Env* env, const std::string& mmirage_bin);

// `run` in ray mode: the loop above. The report's slurm_state fields hold the Ray job's final status. Errors: the
// Jobs API unreachable or refusing the job, a stop signal (kCancelled, after stopping the job), bad paths.
Result<SlurmRunReport> RunRayLoop(const RayOptions& options);

}  // namespace mmirage::exec

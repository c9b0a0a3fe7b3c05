// SLURM mode orchestration: submit the shards not yet successful as an array job, wait for it while printing
// progress across shards, judge each shard from the state directory, and resubmit the failed ones as a sparse
// array until every shard succeeded or the failed ones spent their budget (max_retries + 1 attempts, counting
// submissions made by this process too, so the loop always ends). A task that ended while its status still says
// `running` is a failed attempt, reported with SLURM's final state. A job the controller forgot is finished;
// squeue failing for 10 minutes in a row is an error.
// Thread-safety: one call at a time. Ownership: everything in the options is borrowed for the call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "exec/slurm_client.h"
#include "exec/slurm_script.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::exec {

struct SlurmOptions {
  Env* env = nullptr;  // default Env::Default()
  const config::Config* config = nullptr;
  CommandRunner runner;     // default DefaultCommandRunner() (real sbatch/squeue/sacct)
  std::string cwd;          // default: the process's working directory
  std::string self_exe;     // default SelfExecutablePath(); used when mmirage_bin is unset
  config::VarLookup vars;   // default the process environment
  bool stats = false;       // tasks collect GPU stats (--stats)
  bool auto_retry = false;  // resubmit failed shards (execution_params.retry or --force-retry)
  bool wait = false;        // wait even without auto_retry (merge: true needs completion)
};

// Resolves the paths and submits one array job for `shard_ids` (empty: every shard). Logs
// "Submitting SLURM job: <argv>" and "Submitted SLURM job <id> for shard ids: <ids or ALL>". Returns the job id.
// Errors: those of ResolveSlurmPaths/BuildSbatchRequest (kInvalidArgument) and SlurmClient::Submit.
Result<std::string> SubmitShards(const SlurmOptions& options, const std::vector<int64_t>& shard_ids);

// The verdict on one shard after a job ended.
struct ShardOutcome {
  int64_t shard_id = 0;
  bool success = false;
  int64_t attempts = 0;     // attempts spent so far (see above)
  bool exhausted = false;   // failed and attempts >= max_retries + 1
  std::string slurm_state;  // the task's final SLURM state when known ("TIMEOUT", "CANCELLED", …)
  std::string reason;       // failed: why, in one line
};

struct SlurmRunReport {
  std::vector<std::string> job_ids;        // every submission, in order
  std::map<int64_t, ShardOutcome> shards;  // the shards judged last (run: all of them)
  bool all_succeeded = false;
  std::vector<int64_t> failed, exhausted;  // ascending; exhausted ⊆ failed
  // Multi-line report: one line per failed shard with its attempts and reason.
  std::string FailureReport(int64_t max_retries) const;
  // After a judged round: logs one warning per failed shard ("Shard N failed (attempt A of M): reason") and returns
  // the failed shards that may still be retried (not exhausted), ascending. Shared by the SLURM and Ray loops.
  std::vector<int64_t> LogFailedAndRetryable(int64_t max_retries) const;
};

// `run` in slurm mode: the loop above over every shard. Returns OK with the report whatever the shards' fate
// (all_succeeded says); an error only when SLURM itself cannot be used (sbatch fails, squeue fails for 10 min).
// Without auto_retry: one submission, then (when `wait`) one judgement. Without auto_retry and wait: returns
// right after the submission (fire and forget; all_succeeded false, shards empty).
Result<SlurmRunReport> RunSlurmLoop(const SlurmOptions& options);

// `submit`: submits `shard_ids` (empty: all); with `wait`, waits and judges exactly those shards.
Result<SlurmRunReport> SubmitAndMaybeWait(const SlurmOptions& options, const std::vector<int64_t>& shard_ids);

}  // namespace mmirage::exec

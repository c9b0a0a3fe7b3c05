// The sbatch submission of SLURM mode: one array task per shard, each running this mmirage binary on the config
// with `--shard-id $SLURM_ARRAY_TASK_ID`. Every directive goes on sbatch's command line (an argv, never a shell);
// the batch script (written next to the task logs) quotes every config value: double-quoted values (DQ, `$VAR`
// expands on the compute node) reject command substitution, single-quoted ones (SQ) are inert. `--gres=gpu:N` only
// when gpus > 0. srun starts exactly one copy of the shard worker per task.
// Pure functions except ResolveSlurmPaths (reads the file system through Env). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::exec {

// Paths of the submission, resolved on the submitting host.
struct SlurmPaths {
  std::string project_root;  // absolute, symlinks resolved: the tasks' working directory (--chdir)
  std::string report_dir;    // absolute: the tasks' stdout/stderr files
  std::string config_path;   // absolute path of the config
  std::string mmirage_bin;   // absolute path of the binary each task runs
  std::string hf_home;       // "shell path": `$VAR…` verbatim, else absolute
  std::string state_dir;     // "shell path" of loading_params.state_dir
  std::string edf_env;       // empty: none; else absolute or `$VAR…`
};

// Resolves the paths: project_root (default `cwd`), report_dir/hf_home/state_dir/edf_env relative to it,
// mmirage_bin from execution_params.mmirage_bin (relative to `cwd`) or `self_exe`.
// Errors: kInvalidArgument when project_root does not exist or mmirage_bin is not a file.
Result<SlurmPaths> ResolveSlurmPaths(Env* env, const config::Config& config, const std::string& cwd,
                                     const std::string& self_exe, const config::VarLookup& vars);

// What to run: argv[0] is "sbatch"; the path of a file holding `script` is appended by SlurmClient::Submit.
struct SbatchRequest {
  std::vector<std::string> argv;
  std::string script;
};

struct SbatchJob {
  int64_t num_shards = 1;
  std::vector<int64_t> shard_ids;  // empty: every shard 0..num_shards-1
  bool stats = false;              // MMIRAGE_COLLECT_STATS=1 in the tasks
};

// Builds the sbatch command and script. Errors (kInvalidArgument): account unset; a value that goes into the
// script contains command substitution (` or $(); a shard id outside [0, num_shards); a duplicate id.
Result<SbatchRequest> BuildSbatchRequest(const config::ExecutionParams& exec, const SlurmPaths& paths,
                                         const SbatchJob& job);

// The --array value: "0-<n-1>" for all shards, else the ids ascending with runs of 3+ as ranges ("1,5,9",
// "0-3,7"); "%K" appended when `throttle` > 0.
std::string FormatArraySpec(const std::vector<int64_t>& ids, int64_t num_shards, int64_t throttle);

// SQ (single-quoted): bare when only [A-Za-z0-9_@%+=:,./-], else '…' with ' written as '"'"'; empty → ''.
std::string ShellQuote(std::string_view v);
// DQ (double-quoted): "…" with \ and " escaped; `$VAR` stays active. kInvalidArgument on ` or $(.
Result<std::string> DoubleQuoteNoSubst(std::string_view v);

}  // namespace mmirage::exec

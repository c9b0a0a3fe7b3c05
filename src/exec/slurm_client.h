// SlurmClient: the SLURM commands SLURM mode uses, run through an injectable CommandRunner (never a shell):
//   sbatch --parsable … <script file>       submit → job id
//   squeue -h -j <job> -t all -o %i|%T      the state of every array task while the controller remembers it
//   sacct -n -P -j <job> -o JobID,State,ExitCode   final states, when accounting is enabled
//   scancel <job>                           cancel
// Parsing is separate (ParseSqueue/ParseSacct) and tested on recorded outputs.
//
// Thread-safety: a SlurmClient holds no mutable state; safe from several threads if its runner is.
// Ownership: `env` is borrowed and must outlive the client.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/slurm_script.h"
#include "util/env.h"
#include "util/status.h"
#include "util/process/subprocess.h"

namespace mmirage::exec {

// SLURM job state names (squeue %T / sacct State, first word: "CANCELLED by 0" → "CANCELLED").
// Active: the task may still run (PENDING, RUNNING, COMPLETING, CONFIGURING, SUSPENDED, REQUEUED, …, and any
// state this code does not know). Terminal: COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED,
// BOOT_FAIL, DEADLINE, OUT_OF_MEMORY, REVOKED, SPECIAL_EXIT.
bool IsTerminalJobState(const std::string& state);

// What the controller says about one array job.
struct JobSnapshot {
  std::map<int64_t, std::string> task_states;  // array task id → state
  bool gone = false;                           // the controller no longer knows the job (finished and purged)
  bool Active() const;                         // some task is not terminal (and the job is not gone)
};

// Parses `squeue -h -o %i|%T` lines of job `job_id`: "123_4|RUNNING", "123_[5-7,9%2]|PENDING" (every listed
// task), "123|RUNNING" (a non-array job: task 0). Lines of other jobs and malformed lines are ignored.
JobSnapshot ParseSqueue(const std::string& job_id, const std::string& out);
// Parses `sacct -n -P -o JobID,State,ExitCode` lines: task lines "123_4|TIMEOUT|0:0" (steps "123_4.batch" are
// skipped; "123_[5-7]" pending ranges expanded).
std::map<int64_t, std::string> ParseSacct(const std::string& job_id, const std::string& out);

// Runs a command (argv, no shell) to completion and captures its output. Errors: kNotFound (no such program).
using CommandRunner = std::function<Result<CommandOutput>(const std::vector<std::string>& argv)>;
// RunCommandCapture with a 300 s timeout (a hung controller must not hang mmirage).
CommandRunner DefaultCommandRunner();

class SlurmClient {
 public:
  SlurmClient(Env* env, CommandRunner runner) : env_(env), runner_(std::move(runner)) {}

  // Writes request.script to `script_path` (kept for reference next to the task logs) and runs request.argv with
  // the path appended. Returns the job id (the integer before ';' of the --parsable output).
  // Errors: kIOError (script not written), kNotFound (sbatch not on PATH), kUnavailable "sbatch failed: <stderr>"
  // on a non-zero exit, kInternal "Unable to parse job id from sbatch output: …".
  Result<std::string> Submit(const SbatchRequest& request, const std::string& script_path) const;

  // One squeue poll. A job unknown to the controller ("Invalid job id") is `gone`, not an error.
  // Errors: kNotFound (squeue not on PATH), kUnavailable (squeue failed otherwise, e.g. controller unreachable).
  Result<JobSnapshot> Poll(const std::string& job_id) const;

  // Final task states from accounting; nullopt when sacct is missing, accounting is disabled, or it fails.
  std::optional<std::map<int64_t, std::string>> Accounting(const std::string& job_id) const;

  // scancel <job_id> (a task: "<job>_<task>"). kUnavailable with stderr on failure.
  Status Cancel(const std::string& job_id) const;

 private:
  Env* env_;
  CommandRunner runner_;
};

}  // namespace mmirage::exec

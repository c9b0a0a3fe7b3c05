#include "exec/slurm_run.h"

#include <algorithm>
#include <sstream>

#include "exec/shard_classify.h"
#include "pipeline/failure_report.h"
#include "util/log.h"
#include "util/process/process_info.h"
#include "util/process/subprocess.h"

namespace mmirage::exec {
namespace {

constexpr double kSqueueFailureLimitSeconds = 600;

std::string JoinIds(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s.empty() ? "ALL" : s;
}

std::string JoinArgs(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + ShellQuote(a);
  return s;
}

struct Ctx {
  SlurmOptions o;
  SlurmPaths paths;
  ClassifyOptions classify;
  int64_t num_shards = 1;
};

Result<Ctx> MakeCtx(const SlurmOptions& in) {
  Ctx c;
  c.o = in;
  if (c.o.env == nullptr) c.o.env = Env::Default();
  if (!c.o.runner) c.o.runner = DefaultCommandRunner();
  if (!c.o.vars) c.o.vars = config::ProcessVarLookup();
  if (c.o.cwd.empty()) c.o.cwd = c.o.env->AbsolutePath(".");
  if (c.o.self_exe.empty()) { MMIRAGE_ASSIGN_OR_RETURN(c.o.self_exe, SelfExecutablePath()); }
  const config::Config& cfg = *c.o.config;
  if (cfg.execution.mode != "slurm") return Status::InvalidArgument("execution_params.mode is not slurm");
  MMIRAGE_ASSIGN_OR_RETURN(c.paths, ResolveSlurmPaths(c.o.env, cfg, c.o.cwd, c.o.self_exe, c.o.vars));
  c.num_shards = cfg.loading.num_shards;
  c.classify = ClassifyOptionsFromConfig(c.o.env, cfg);
  // The tasks run in project_root: a relative state_dir is read from there too.
  if (!c.paths.state_dir.empty() && c.paths.state_dir[0] == '$') {
    return Status::InvalidArgument("loading_params.state_dir: " + c.paths.state_dir +
                                   " is not defined on this host; SLURM mode reads the shards' states from it");
  }
  c.classify.state_dir = c.paths.state_dir;
  return c;
}

Result<std::string> Submit(const Ctx& c, const std::vector<int64_t>& ids) {
  SbatchJob job;
  job.num_shards = c.num_shards;
  job.shard_ids = ids;
  job.stats = c.o.stats;
  if (static_cast<int64_t>(ids.size()) == c.num_shards) job.shard_ids.clear();  // the whole array: "0-<n-1>"
  MMIRAGE_ASSIGN_OR_RETURN(SbatchRequest req, BuildSbatchRequest(c.o.config->execution, c.paths, job));
  MMIRAGE_TRY(c.o.env->CreateDirs(c.paths.report_dir));
  std::string script = JoinPath(c.paths.report_dir, "R-" + c.o.config->execution.job_name + ".submit-" +
                                                        std::to_string(c.o.env->NowMicros()) + ".sh");
  LOG_INFO("Submitting SLURM job: " << JoinArgs(req.argv) << " " << ShellQuote(script));
  SlurmClient client(c.o.env, c.o.runner);
  MMIRAGE_ASSIGN_OR_RETURN(std::string job_id, client.Submit(req, script));
  LOG_INFO("Submitted SLURM job " << job_id << " for shard ids: " << JoinIds(job.shard_ids));
  return job_id;
}

// "SLURM job 12: 1/4 shards succeeded, 2 running, 1 pending, 0 failed; rows 150/400".
std::string ProgressLine(const std::string& job_id, const std::vector<int64_t>& ids,
                         const std::map<int64_t, std::string>& states, const Classification& cls) {
  int64_t ok = 0, running = 0, pending = 0, failed = 0, rows_done = 0, rows_total = 0;
  bool totals_known = true;
  for (int64_t id : ids) {
    const ShardDetail& d = cls.shards[static_cast<size_t>(id)];
    auto it = states.find(id);
    std::string st = it == states.end() ? "PENDING" : it->second;
    if (d.shard_class == ShardClass::kSuccessful) ++ok;
    else if (st == "PENDING" || st == "CONFIGURING") ++pending;
    else if (!IsTerminalJobState(st)) ++running;
    else ++failed;
    rows_done += d.rows_done.value_or(0);
    if (d.rows_total) rows_total += *d.rows_total;
    else totals_known = false;
  }
  std::ostringstream os;
  os << "SLURM job " << job_id << ": " << ok << "/" << ids.size() << " shards succeeded, " << running << " running, "
     << pending << " pending, " << failed << " ended without success; rows " << rows_done;
  if (totals_known && rows_total > 0) os << "/" << rows_total;
  return os.str();
}

// Polls until no task of the job is active, then settles. Returns every task's last known SLURM state.
Result<std::map<int64_t, std::string>> WaitForJob(const Ctx& c, const std::string& job_id,
                                                  const std::vector<int64_t>& ids) {
  Env* env = c.o.env;
  const auto& e = c.o.config->execution;
  SlurmClient client(env, c.o.runner);
  LOG_INFO("Waiting for SLURM job " << job_id);
  std::map<int64_t, std::string> states;
  uint64_t failing_since = 0;
  const uint64_t poll_us = static_cast<uint64_t>(std::max<int64_t>(1, e.poll_interval_seconds)) * 1000000;
  while (true) {
    auto snap = client.Poll(job_id);
    if (!snap.ok()) {
      if (snap.status().IsNotFound()) return snap.status();
      uint64_t now = env->MonotonicMicros();
      if (failing_since == 0) failing_since = now;
      if (static_cast<double>(now - failing_since) / 1e6 > kSqueueFailureLimitSeconds) {
        return Status::Unavailable("cannot follow SLURM job " + job_id + ": " + snap.status().message());
      }
      LOG_WARN(snap.status().message() << " (retrying)");
      env->SleepMicros(poll_us);
      continue;
    }
    failing_since = 0;
    for (const auto& [id, st] : snap->task_states) states[id] = st;
    if (!snap->Active()) break;
    LOG_INFO(ProgressLine(job_id, ids, states, ClassifyShards(c.classify)));
    env->SleepMicros(poll_us);
  }
  if (e.settle_time_seconds > 0) {
    LOG_INFO("Waiting " << e.settle_time_seconds << "s for state files to settle");
    env->SleepMicros(static_cast<uint64_t>(e.settle_time_seconds) * 1000000);
  }
  if (auto acct = client.Accounting(job_id)) {
    for (const auto& [id, st] : *acct) states[id] = st;
  }
  return states;
}

// Attempts spent: what the workers recorded, or what we submitted when that is more.
struct Budget {
  std::map<int64_t, int64_t> at_start, submitted;
  int64_t Spent(int64_t id, int64_t recorded) const {
    auto a = at_start.find(id);
    auto s = submitted.find(id);
    int64_t ours = (a == at_start.end() ? 0 : a->second) + (s == submitted.end() ? 0 : s->second);
    return std::max(recorded, ours);
  }
};

ShardOutcome Judge(const Ctx& c, const ShardDetail& d, const std::string& task_state, int64_t attempts_before,
                   int64_t spent, const std::string& job_id) {
  ShardOutcome out;
  out.shard_id = d.shard_id;
  out.slurm_state = task_state;
  out.attempts = spent;
  // batch_api: a task that submitted its shard's batches did its job; `collect` finishes the shard.
  if (d.shard_class == ShardClass::kSuccessful || d.shard_class == ShardClass::kSubmitted) {
    out.success = true;
    return out;
  }
  std::string slurm = task_state.empty() ? "" : " (SLURM: " + task_state + ")";
  std::string log = JoinPath(c.paths.report_dir, "R-" + c.o.config->execution.job_name + "." + job_id + "_" +
                                                     std::to_string(d.shard_id) + ".err");
  if (d.attempts <= attempts_before && d.status != ShardStatus::kSuccess) {
    out.reason = "the task never started the shard" + slurm + "; see " + log;
  } else if (d.status == ShardStatus::kRunning) {
    out.reason = "the task ended while the shard was running" + slurm +
                 (d.stale_reason.empty() ? "" : "; " + d.stale_reason) + "; see " + log;
  } else {
    out.reason = d.error.value_or(std::string("status ") + ShardStatusName(d.status)) + slurm;
  }
  out.exhausted = spent >= c.o.config->execution.max_retries + 1;
  return out;
}

// Judges `ids` after job `job_id` ended, into report->shards.
void JudgeRound(const Ctx& c, const std::string& job_id, const std::vector<int64_t>& ids,
                const std::map<int64_t, std::string>& states, const std::map<int64_t, int64_t>& attempts_before,
                const Budget& budget, SlurmRunReport* report) {
  Classification cls = ClassifyShards(c.classify);
  for (int64_t id : ids) {
    const ShardDetail& d = cls.shards[static_cast<size_t>(id)];
    auto st = states.find(id);
    auto before = attempts_before.find(id);
    report->shards[id] =
        Judge(c, d, st == states.end() ? "" : st->second, before == attempts_before.end() ? 0 : before->second,
              budget.Spent(id, d.attempts), job_id);
  }
  report->failed.clear();
  report->exhausted.clear();
  for (const auto& [id, s] : report->shards) {
    if (s.success) continue;
    report->failed.push_back(id);
    if (s.exhausted) report->exhausted.push_back(id);
  }
  report->all_succeeded = report->failed.empty();
}

// One submission of `ids`, then (when waiting) the judgement of those ids.
Status Round(const Ctx& c, const std::vector<int64_t>& ids, bool wait, Budget* budget, SlurmRunReport* report) {
  Classification before = ClassifyShards(c.classify);
  std::map<int64_t, int64_t> attempts_before;
  for (int64_t id : ids) attempts_before[id] = before.shards[static_cast<size_t>(id)].attempts;
  MMIRAGE_ASSIGN_OR_RETURN(std::string job_id, Submit(c, ids));
  report->job_ids.push_back(job_id);
  for (int64_t id : ids) budget->submitted[id]++;
  if (!wait) return Status::OK();
  MMIRAGE_ASSIGN_OR_RETURN(auto states, WaitForJob(c, job_id, ids));
  JudgeRound(c, job_id, ids, states, attempts_before, *budget, report);
  return Status::OK();
}

}  // namespace

std::vector<int64_t> SlurmRunReport::LogFailedAndRetryable(int64_t max_retries) const {
  std::vector<int64_t> retryable;
  for (int64_t id : failed) {
    const ShardOutcome& s = shards.at(id);
    LOG_WARN("Shard " << id << " failed (attempt " << s.attempts << " of " << max_retries + 1 << "): " << s.reason);
    if (!s.exhausted) retryable.push_back(id);
  }
  return retryable;
}

std::string SlurmRunReport::FailureReport(int64_t max_retries) const {
  std::ostringstream os;
  for (int64_t id : failed) {
    const ShardOutcome& s = shards.at(id);
    os << "Shard " << id << ": failed, " << s.attempts << " of " << max_retries + 1 << " attempts used"
       << (s.exhausted ? " (max_retries exhausted)" : "") << ": " << s.reason << "\n";
  }
  return os.str();
}

Result<std::string> SubmitShards(const SlurmOptions& options, const std::vector<int64_t>& shard_ids) {
  MMIRAGE_ASSIGN_OR_RETURN(Ctx c, MakeCtx(options));
  return Submit(c, shard_ids);
}

Result<SlurmRunReport> SubmitAndMaybeWait(const SlurmOptions& options, const std::vector<int64_t>& shard_ids) {
  MMIRAGE_ASSIGN_OR_RETURN(Ctx c, MakeCtx(options));
  std::vector<int64_t> ids = shard_ids;
  if (ids.empty()) {
    for (int64_t i = 0; i < c.num_shards; ++i) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  Budget budget;
  Classification cls = ClassifyShards(c.classify);
  for (int64_t id : ids) budget.at_start[id] = cls.shards[static_cast<size_t>(id)].attempts;
  SlurmRunReport report;
  MMIRAGE_TRY(Round(c, ids, c.o.wait, &budget, &report));
  return report;
}

Result<SlurmRunReport> RunSlurmLoop(const SlurmOptions& options) {
  MMIRAGE_ASSIGN_OR_RETURN(Ctx c, MakeCtx(options));
  const int64_t max_retries = c.o.config->execution.max_retries;
  SlurmRunReport report;
  Budget budget;
  Classification cls = ClassifyShards(c.classify);
  std::vector<int64_t> ids;
  for (const ShardDetail& d : cls.shards) {
    budget.at_start[d.shard_id] = d.attempts;
    if (d.shard_class == ShardClass::kSuccessful) {
      report.shards[d.shard_id] = ShardOutcome{d.shard_id, true, d.attempts, false, "", ""};
    } else {
      ids.push_back(d.shard_id);
    }
  }
  if (ids.empty()) {
    LOG_INFO("All " << c.num_shards << " shards already completed successfully; nothing to submit");
    report.all_succeeded = true;
    return report;
  }
  if (ids.size() < cls.shards.size()) {
    LOG_INFO((cls.shards.size() - ids.size())
             << " of " << cls.shards.size() << " shards already succeeded; submitting the others");
  }
  const bool wait = c.o.auto_retry || c.o.wait;
  while (true) {
    MMIRAGE_TRY(Round(c, ids, wait, &budget, &report));
    if (!wait) {
      LOG_INFO(
          "Not waiting for the job (execution_params.retry and merge are false); follow it with "
          "`mmirage check --config "
          << c.paths.config_path << "`");
      return report;
    }
    if (report.all_succeeded) {
      // The tasks' own reports are in their log files: the failed rows of every shard here too.
      (void)pipeline::LogFailureSummary(c.o.env, *c.o.config);
      LOG_INFO("All shards completed successfully");
      return report;
    }
    ids = report.LogFailedAndRetryable(max_retries);
    if (!c.o.auto_retry || ids.empty()) {
      (void)pipeline::LogFailureSummary(c.o.env, *c.o.config);
      return report;
    }
    LOG_INFO("Retrying failed shards: " << JoinIds(ids));
  }
}

}  // namespace mmirage::exec

#include "exec/ray_run.h"

#include <algorithm>
#include <sstream>

#include "data/json.h"
#include "exec/shard_classify.h"
#include "exec/slurm_script.h"
#include "pipeline/failure_report.h"
#include "process/llm/engine_factory.h"
#include "util/log.h"
#include "util/process/process_info.h"
#include "util/signals.h"

namespace mmirage::exec {
namespace {

constexpr double kApiFailureLimitSeconds = 600;  // the Jobs API unreachable this long (while waiting) is an error

struct Ctx {
  RayOptions o;
  SlurmPaths paths;  // project_root (the tasks' cwd), config_path, mmirage_bin, state_dir
  std::string driver;
  ClassifyOptions classify;
  int64_t num_shards = 1;
  mutable int64_t logged_shares = 1;  // the rate-limit split last logged: Submit logs each new value once
};

std::string JoinIds(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

Result<Ctx> MakeCtx(const RayOptions& in) {
  Ctx c;
  c.o = in;
  if (c.o.env == nullptr) c.o.env = Env::Default();
  if (!c.o.http) c.o.http = HttpFetch;
  if (!c.o.vars) c.o.vars = config::ProcessVarLookup();
  if (c.o.cwd.empty()) c.o.cwd = c.o.env->AbsolutePath(".");
  if (c.o.self_exe.empty()) { MMIRAGE_ASSIGN_OR_RETURN(c.o.self_exe, SelfExecutablePath()); }
  const config::Config& cfg = *c.o.config;
  if (cfg.execution.mode != "ray") return Status::InvalidArgument("execution_params.mode is not ray");
  MMIRAGE_ASSIGN_OR_RETURN(c.paths, ResolveSlurmPaths(c.o.env, cfg, c.o.cwd, c.o.self_exe, c.o.vars));
  MMIRAGE_ASSIGN_OR_RETURN(c.driver, FindRayDriver(c.o.env, c.paths.mmirage_bin));
  if (!c.paths.state_dir.empty() && c.paths.state_dir[0] == '$') {
    return Status::InvalidArgument("loading_params.state_dir: " + c.paths.state_dir +
                                   " is not defined on this host; Ray mode reads the shards' states from it");
  }
  c.num_shards = cfg.loading.num_shards;
  c.classify = ClassifyOptionsFromConfig(c.o.env, cfg);
  c.classify.state_dir = c.paths.state_dir;
  return c;
}

// One Jobs API call; the JSON body of a 2xx answer. Errors: kUnavailable (transport, 5xx), kInvalidArgument (4xx).
Result<Value> Api(const Ctx& c, const std::string& method, const std::string& path, const std::string& body) {
  HttpRequest req;
  req.method = method;
  req.url = c.o.config->execution.ray.address + path;
  req.body = body;
  req.timeout_seconds = 60;
  if (method == "POST") req.headers.push_back("Content-Type: application/json");
  HttpResponse resp = c.o.http(req);
  std::string where = method + " " + req.url;
  if (resp.transport != HttpTransport::kOk)
    return Status::Unavailable("Ray Jobs API " + where + ": " + resp.error + " (is the dashboard running there?)");
  if (resp.status_code < 200 || resp.status_code >= 300) {
    std::string msg =
        "Ray Jobs API " + where + ": HTTP " + std::to_string(resp.status_code) + ": " + resp.body.substr(0, 300);
    return resp.status_code >= 500 ? Status::Unavailable(msg) : Status::InvalidArgument(msg);
  }
  auto v = ParseJson(resp.body);
  if (!v.ok()) return Status::Unavailable("Ray Jobs API " + where + ": the answer is not JSON");
  return *v;
}

std::string Entrypoint(const Ctx& c, const std::vector<int64_t>& ids) {
  const config::RayParams& r = c.o.config->execution.ray;
  std::vector<std::string> argv = {r.python,        c.driver,
                                   "--mmirage-bin", c.paths.mmirage_bin,
                                   "--config",      c.paths.config_path,
                                   "--cwd",         c.paths.project_root,
                                   "--shards",      JoinIds(ids),
                                   "--num-cpus",    std::to_string(r.num_cpus),
                                   "--num-gpus",    std::to_string(r.num_gpus)};
  if (r.memory_bytes > 0) argv.insert(argv.end(), {"--memory", std::to_string(r.memory_bytes)});
  if (r.max_parallel > 0) argv.insert(argv.end(), {"--max-parallel", std::to_string(r.max_parallel)});
  if (c.o.stats) argv.push_back("--stats");
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + ShellQuote(a);
  return s;
}

Value Metadata(const Ctx& c) {
  Value m = Value::EmptyObject();
  m.Set("mmirage_config", Value(c.paths.config_path));
  m.Set("mmirage_fingerprint", Value(std::to_string(c.o.config->fingerprint)));
  return m;
}

// The job's runtime_env: the configured one, and kRateLimitSharesVar in its env_vars when more than one shard task
// runs at once (min(max_parallel, shards)) — they split the endpoints' rate limits like local workers and SLURM
// array tasks. A value the config sets there itself is kept. Null when there is nothing to pass.
Value RuntimeEnv(const Ctx& c, size_t num_ids) {
  const config::RayParams& r = c.o.config->execution.ray;
  Value env = Value::EmptyObject();
  if (!r.runtime_env.empty()) {
    auto parsed = ParseJson(r.runtime_env);
    if (parsed.ok() && parsed->is_object()) env = *parsed;
  }
  int64_t shares = static_cast<int64_t>(num_ids);
  if (r.max_parallel > 0) shares = std::min(shares, r.max_parallel);
  const Value* given = env.Find("env_vars");
  if (shares > 1 && (given == nullptr || given->is_object())) {
    Value vars = given != nullptr ? *given : Value::EmptyObject();
    if (vars.Find(process::llm::kRateLimitSharesVar) == nullptr) {
      vars.Set(process::llm::kRateLimitSharesVar, Value(std::to_string(shares)));
      if (shares != c.logged_shares)
        LOG_INFO("The " << shares << " Ray shard tasks that run at once split the endpoints' rate limits ("
                        << process::llm::kRateLimitSharesVar << "=" << shares << ")");
      c.logged_shares = shares;
    }
    env.Set("env_vars", vars);
  }
  return env.as_object().empty() ? Value() : env;
}

Result<std::string> Submit(const Ctx& c, const std::vector<int64_t>& ids) {
  Value body = Value::EmptyObject();
  std::string id = "mmirage-" + c.o.config->execution.job_name + "-" + std::to_string(c.o.env->NowMicros());
  body.Set("entrypoint", Value(Entrypoint(c, ids)));
  body.Set("submission_id", Value(id));
  Value metadata = Metadata(c);
  metadata.Set("mmirage_shards", Value(JoinIds(ids)));  // a reattaching run judges these shards only
  body.Set("metadata", metadata);
  Value runtime_env = RuntimeEnv(c, ids.size());
  if (!runtime_env.is_null()) body.Set("runtime_env", runtime_env);
  const config::RayParams& r = c.o.config->execution.ray;
  LOG_INFO(
      "Submitting Ray job to " << r.address
                               << (r.given_address == r.address ? "" : " (the dashboard of " + r.given_address + ")")
                               << ": " << Entrypoint(c, ids));
  MMIRAGE_TRY(Api(c, "POST", "/api/jobs/", ToJson(body)).status());
  LOG_INFO("Submitted Ray job " << id << " for shard ids: " << JoinIds(ids));
  return id;
}

// A job of this config (same path and fingerprint) still pending or running: its submission id ("" when none) and
// the shards it runs (empty when its metadata does not say).
struct LiveJob {
  std::string id;
  std::vector<int64_t> shards;
};

LiveJob FindLiveJob(const Ctx& c) {
  auto jobs = Api(c, "GET", "/api/jobs/", "");
  if (!jobs.ok() || !jobs->is_array()) return {};
  Value want = Metadata(c);
  for (const Value& j : jobs->as_array()) {
    const Value* st = j.is_object() ? j.Find("status") : nullptr;
    const Value* md = j.is_object() ? j.Find("metadata") : nullptr;
    const Value* sid = j.is_object() ? j.Find("submission_id") : nullptr;
    if (!st || !md || !md->is_object() || !sid || !sid->is_string() || !st->is_string()) continue;
    if (st->as_string() != "PENDING" && st->as_string() != "RUNNING") continue;
    bool same = true;
    for (const auto& [key, value] : want.as_object()) {
      const Value* theirs = md->Find(key);
      same = same && theirs != nullptr && ToJson(*theirs) == ToJson(value);
    }
    if (!same) continue;
    LiveJob live{sid->as_string(), {}};
    const Value* shards = md->Find("mmirage_shards");
    std::stringstream list(shards != nullptr && shards->is_string() ? shards->as_string() : "");
    for (std::string id; std::getline(list, id, ',');) {
      try {
        live.shards.push_back(std::stoll(id));
      } catch (const std::exception&) { return {sid->as_string(), {}}; }
    }
    return live;
  }
  return {};
}

bool Terminal(const std::string& st) { return st == "SUCCEEDED" || st == "FAILED" || st == "STOPPED"; }

// Sleeps `micros` in small steps; false when a stop signal arrived.
bool SleepUnlessStopped(Env* env, uint64_t micros) {
  for (uint64_t slept = 0; slept < micros; slept += 100000) {
    if (StopRequested()) return false;
    env->SleepMicros(std::min<uint64_t>(100000, micros - slept));
  }
  return !StopRequested();
}

// Polls until the job is terminal; returns its final status. A stop signal stops the job first.
Result<std::string> WaitForJob(const Ctx& c, const std::string& job_id, const std::vector<int64_t>& ids) {
  Env* env = c.o.env;
  const uint64_t poll_us =
      static_cast<uint64_t>(std::max<int64_t>(1, c.o.config->execution.poll_interval_seconds)) * 1000000;
  LOG_INFO("Waiting for Ray job " << job_id);
  uint64_t failing_since = 0;
  std::string last;
  int64_t done_logged = -1;
  while (true) {
    if (StopRequested()) break;
    auto job = Api(c, "GET", "/api/jobs/" + job_id, "");
    const Value* st = job.ok() && job->is_object() ? job->Find("status") : nullptr;
    if (st != nullptr && st->is_string()) {
      failing_since = 0;
      if (Terminal(st->as_string())) return st->as_string();
      if (st->as_string() != last) LOG_INFO("Ray job " << job_id << ": " << st->as_string());
      last = st->as_string();
    } else {
      uint64_t now = env->MonotonicMicros();
      if (failing_since == 0) failing_since = now;
      std::string why = job.ok() ? "no status in the answer" : job.status().message();
      if (static_cast<double>(now - failing_since) / 1e6 > kApiFailureLimitSeconds)
        return Status::Unavailable("cannot follow Ray job " + job_id + ": " + why);
      LOG_WARN(why << " (retrying)");
    }
    Classification cls = ClassifyShards(c.classify);
    int64_t ok = 0;
    for (int64_t id : ids) ok += cls.shards[static_cast<size_t>(id)].shard_class == ShardClass::kSuccessful;
    if (ok != done_logged) LOG_INFO("Ray job " << job_id << ": " << ok << "/" << ids.size() << " shards succeeded");
    done_logged = ok;
    if (!SleepUnlessStopped(env, poll_us)) break;
  }
  LOG_WARN("Received " << StopSignalName() << "; stopping Ray job " << job_id);
  auto stopped = Api(c, "POST", "/api/jobs/" + job_id + "/stop", "{}");
  if (!stopped.ok()) LOG_ERROR("Could not stop Ray job " << job_id << ": " << stopped.status().message());
  return Status::Unavailable("stopped by " + std::string(StopSignalName()) + "; Ray job " + job_id + " stopped");
}

ShardOutcome Judge(const Ctx& c, const ShardDetail& d, const std::string& job_state, int64_t attempts_before,
                   int64_t spent, const std::string& job_id) {
  ShardOutcome out;
  out.shard_id = d.shard_id;
  out.slurm_state = job_state;
  out.attempts = spent;
  if (d.shard_class == ShardClass::kSuccessful || d.shard_class == ShardClass::kSubmitted) {
    out.success = true;
    return out;
  }
  std::string logs = " (Ray job " + job_id + " " + job_state + "; its log: `ray job logs " + job_id + "`)";
  if (d.attempts <= attempts_before && d.status != ShardStatus::kSuccess)
    out.reason = "the task never started the shard" + logs;
  else if (d.status == ShardStatus::kRunning) out.reason = "the task ended while the shard was running" + logs;
  else out.reason = d.error.value_or(std::string("status ") + ShardStatusName(d.status)) + logs;
  out.exhausted = spent >= c.o.config->execution.max_retries + 1;
  return out;
}

// One job for `ids` (or the reattached `live` one), waited for and judged into *report.
Status Round(const Ctx& c, const std::vector<int64_t>& ids, const std::string& live, std::map<int64_t, int64_t>* spent,
             SlurmRunReport* report) {
  Classification before = ClassifyShards(c.classify);
  std::string job_id = live;
  if (job_id.empty()) { MMIRAGE_ASSIGN_OR_RETURN(job_id, Submit(c, ids)); }
  report->job_ids.push_back(job_id);
  if (!c.o.auto_retry && !c.o.wait) return Status::OK();
  MMIRAGE_ASSIGN_OR_RETURN(std::string final_state, WaitForJob(c, job_id, ids));
  Classification after = ClassifyShards(c.classify);
  report->failed.clear();
  report->exhausted.clear();
  for (int64_t id : ids) {
    const ShardDetail& d = after.shards[static_cast<size_t>(id)];
    int64_t& ours = (*spent)[id];
    ++ours;
    ShardOutcome s =
        Judge(c, d, final_state, before.shards[static_cast<size_t>(id)].attempts, std::max(ours, d.attempts), job_id);
    report->shards[id] = s;
  }
  for (const auto& [id, s] : report->shards) {
    if (s.success) continue;
    report->failed.push_back(id);
    if (s.exhausted) report->exhausted.push_back(id);
  }
  report->all_succeeded = report->failed.empty();
  return Status::OK();
}

// Keeps in *ids the shards `job_shards` names (all when it is empty) and returns the others.
std::vector<int64_t> SplitOffShardsNotIn(const std::vector<int64_t>& job_shards, std::vector<int64_t>* ids) {
  if (job_shards.empty()) return {};
  std::vector<int64_t> in_job, rest;
  for (int64_t id : *ids)
    (std::find(job_shards.begin(), job_shards.end(), id) != job_shards.end() ? in_job : rest).push_back(id);
  *ids = std::move(in_job);
  return rest;
}

}  // namespace

Result<std::string> FindRayDriver(Env* env, const std::string& mmirage_bin) {
  std::string dir = Dirname(mmirage_bin);
  for (const std::string& p :
       {JoinPath(dir, "share/mmirage/ray_driver.py"), JoinPath(Dirname(dir), "share/mmirage/ray_driver.py")}) {
    if (env->FileExists(p)) return p;
  }
  return Status::NotFound("the Ray driver program share/mmirage/ray_driver.py is not installed next to " + mmirage_bin +
                          " (install the bundle with scripts/install.sh)");
}

Result<SlurmRunReport> RunRayLoop(const RayOptions& options) {
  MMIRAGE_ASSIGN_OR_RETURN(Ctx c, MakeCtx(options));
  SlurmRunReport report;
  std::map<int64_t, int64_t> spent;
  std::vector<int64_t> ids;
  const std::vector<int64_t>& only = c.o.shard_ids;
  for (const ShardDetail& d : ClassifyShards(c.classify).shards) {
    if (!only.empty() && std::find(only.begin(), only.end(), d.shard_id) == only.end()) continue;
    spent[d.shard_id] = d.attempts;
    if (d.shard_class == ShardClass::kSuccessful)
      report.shards[d.shard_id] = ShardOutcome{d.shard_id, true, d.attempts};
    else ids.push_back(d.shard_id);
  }
  if (ids.empty()) {
    LOG_INFO("All " << spent.size() << " shards already completed successfully; nothing to submit");
    report.all_succeeded = true;
    return report;
  }
  LiveJob live = FindLiveJob(c);
  std::vector<int64_t> rest;  // shards a reattached job does not run: submitted after it
  if (!live.id.empty()) rest = SplitOffShardsNotIn(live.shards, &ids);
  if (ids.empty()) {  // the live job runs none of the shards asked for: not waited for
    ids = std::move(rest);
    rest.clear();
    live.id.clear();
  }
  if (!live.id.empty()) LOG_INFO("Reattaching to Ray job " << live.id << " of this config");
  while (true) {
    MMIRAGE_TRY(Round(c, ids, live.id, &spent, &report));
    live.id.clear();
    if (!rest.empty()) {
      ids = std::move(rest);
      rest.clear();
      if (c.o.auto_retry && !report.all_succeeded) {
        for (int64_t id : report.LogFailedAndRetryable(c.o.config->execution.max_retries)) ids.push_back(id);
        std::sort(ids.begin(), ids.end());
      }
      LOG_INFO("Submitting the shards the reattached job does not run: " << JoinIds(ids));
      continue;
    }
    if (!c.o.auto_retry && !c.o.wait) {
      LOG_INFO(
          "Not waiting for the Ray job (execution_params.retry and merge are false); follow it with "
          "`mmirage check --config "
          << c.paths.config_path << "`");
      return report;
    }
    if (report.all_succeeded) {
      (void)pipeline::LogFailureSummary(c.o.env, *c.o.config);
      LOG_INFO("All shards completed successfully");
      return report;
    }
    ids = report.LogFailedAndRetryable(c.o.config->execution.max_retries);
    if (!c.o.auto_retry || ids.empty()) {
      (void)pipeline::LogFailureSummary(c.o.env, *c.o.config);
      return report;
    }
    LOG_INFO("Retrying failed shards: " << JoinIds(ids));
  }
}

}  // namespace mmirage::exec

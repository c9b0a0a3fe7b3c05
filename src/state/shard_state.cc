#include "state/shard_state.h"

#include <time.h>

#include <cstdio>
#include <ctime>

#include "data/json.h"

namespace mmirage {
namespace {

Value OptStr(const std::optional<std::string>& s) { return s ? Value(*s) : Value(); }

std::optional<std::string> GetStr(const Value& obj, const char* key) {
  const Value* v = obj.Find(key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->as_string();
}

int64_t CountLines(const std::string& s) {
  int64_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

std::string LocalIsoTime(uint64_t micros) {
  time_t secs = static_cast<time_t>(micros / 1000000);
  int frac = static_cast<int>(micros % 1000000);
  struct tm tm;
  ::localtime_r(&secs, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  if (frac != 0) std::snprintf(buf + n, sizeof buf - n, ".%06d", frac);
  return buf;
}

std::optional<double> ParseLocalIsoTime(const std::string& s) {
  struct tm tm = {};
  int us = 0;
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  if (static_cast<size_t>(consumed) < s.size()) {
    if (s[consumed] != '.') return std::nullopt;
    std::string frac = s.substr(consumed + 1);
    if (frac.empty() || frac.size() > 6) return std::nullopt;
    while (frac.size() < 6) frac.push_back('0');
    us = std::atoi(frac.c_str());
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_isdst = -1;
  time_t t = ::mktime(&tm);
  if (t == -1) return std::nullopt;
  return static_cast<double>(t) + us / 1e6;
}

Value ShardRecord::ToValue() const {
  Value v = Value::EmptyObject();
  v.Set("status", status);
  v.Set("retry_count", retry_count);
  v.Set("shard_id", shard_id);
  v.Set("started_at", OptStr(started_at));
  v.Set("finished_at", OptStr(finished_at));
  v.Set("error", OptStr(error));
  v.Set("hostname", OptStr(hostname));
  v.Set("pid", pid ? Value(*pid) : Value());
  v.Set("slurm_job_id", OptStr(slurm_job_id));
  v.Set("slurm_array_task_id", OptStr(slurm_array_task_id));
  v.Set("datasets", datasets);
  v.Set("stats", stats);
  v.Set("failed_rows", failed_rows);
  if (!batch.is_null()) v.Set("batch", batch);
  return v;
}

std::string ShardRecord::ToJson() const { return ToJsonPretty(ToValue(), 2, /*sort_keys=*/true) + "\n"; }

ShardState::ShardState(Env* env, std::string state_dir, int64_t shard_id)
    : env_(env), dir_(JoinPath(state_dir, "shard_" + std::to_string(shard_id))), shard_id_(shard_id) {}

ShardRecord ShardState::Read() const {
  ShardRecord r;
  r.shard_id = shard_id_;
  auto log = env_->ReadFileToString(JoinPath(dir_, "attempts.log"));
  if (log.ok()) r.attempts_logged = CountLines(*log);
  auto text = env_->ReadFileToString(JoinPath(dir_, "status.json"));
  if (!text.ok()) {
    r.status = "missing";
    r.retry_count = r.attempts_logged;
    return r;
  }
  auto v = ParseJson(*text);
  if (!v.ok() || !v->is_object()) {
    r.status = "unknown";
    r.retry_count = r.attempts_logged;
    return r;
  }
  r.status = GetStr(*v, "status").value_or("unknown");
  const Value* rc = v->Find("retry_count");
  r.retry_count = (rc && rc->is_int()) ? rc->as_int() : 0;
  if (r.attempts_logged > r.retry_count) r.retry_count = r.attempts_logged;
  r.started_at = GetStr(*v, "started_at");
  r.finished_at = GetStr(*v, "finished_at");
  r.error = GetStr(*v, "error");
  r.hostname = GetStr(*v, "hostname");
  if (const Value* p = v->Find("pid"); p && p->is_int()) r.pid = p->as_int();
  r.slurm_job_id = GetStr(*v, "slurm_job_id");
  r.slurm_array_task_id = GetStr(*v, "slurm_array_task_id");
  if (const Value* d = v->Find("datasets"); d && d->is_array()) r.datasets = *d;
  if (const Value* s = v->Find("stats"); s && s->is_object()) r.stats = *s;
  if (const Value* f = v->Find("failed_rows"); f && f->is_int()) r.failed_rows = f->as_int();
  if (const Value* b = v->Find("batch"); b && b->is_object()) r.batch = *b;
  return r;
}

Status ShardState::WriteRecord(const ShardRecord& r, const char* marker) {
  MMIRAGE_TRY(WriteFileAtomically(env_, JoinPath(dir_, "status.json"), r.ToJson()));
  for (const char* m : {".RUNNING", ".SUBMITTED", ".SUCCESS", ".FAILED"}) {
    std::string p = JoinPath(dir_, m);
    if (env_->FileExists(p)) MMIRAGE_TRY(env_->RemoveFile(p));
  }
  return WriteFileAtomically(env_, JoinPath(dir_, marker), LocalIsoTime(env_->NowMicros()) + "\n");
}

Result<int64_t> ShardState::MarkRunning(const RunInfo& info) {
  MMIRAGE_TRY(env_->CreateDirs(dir_));
  ShardRecord prev = Read();
  ShardRecord r;
  r.status = "running";
  r.retry_count = prev.retry_count + 1;
  r.shard_id = shard_id_;
  uint64_t now = env_->NowMicros();
  r.started_at = LocalIsoTime(now);
  r.hostname = env_->Hostname();
  r.pid = env_->Pid();
  r.slurm_job_id = info.slurm_job_id;
  r.slurm_array_task_id = info.slurm_array_task_id;
  r.datasets = info.datasets;
  // The attempt is counted before any work starts, durably, in a log that a bad status.json cannot reset.
  {
    MMIRAGE_ASSIGN_OR_RETURN(auto log, env_->NewWritableFile(JoinPath(dir_, "attempts.log"), /*append=*/true));
    MMIRAGE_TRY(log->Append(std::to_string(r.retry_count) + " " + *r.started_at + " " + *r.hostname + " " +
                            std::to_string(*r.pid) + "\n"));
    MMIRAGE_TRY(log->Sync());
    MMIRAGE_TRY(log->Close());
  }
  MMIRAGE_TRY(WriteRecord(r, ".RUNNING"));
  return r.retry_count;
}

Status ShardState::MarkSuccess(Value stats, int64_t failed_rows) {
  ShardRecord r = Read();
  r.status = "success";
  r.finished_at = LocalIsoTime(env_->NowMicros());
  r.error.reset();
  r.stats = std::move(stats);
  r.failed_rows = failed_rows;
  return WriteRecord(r, ".SUCCESS");
}

Status ShardState::MarkSubmitted(Value batch) {
  ShardRecord r = Read();
  r.status = "submitted";
  r.finished_at = LocalIsoTime(env_->NowMicros());
  r.error.reset();
  r.batch = std::move(batch);
  return WriteRecord(r, ".SUBMITTED");
}

Status ShardState::MarkFailed(const std::string& error, int64_t failed_rows) {
  ShardRecord r = Read();
  r.status = "failed";
  r.finished_at = LocalIsoTime(env_->NowMicros());
  r.error = error;
  r.stats = Value();
  r.failed_rows = failed_rows;
  return WriteRecord(r, ".FAILED");
}

}  // namespace mmirage

#include "state/shard_state.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <vector>

#include "data/json.h"

namespace mmirage {
namespace {

Value OptStr(const std::optional<std::string>& s) { return s ? Value(*s) : Value(); }

std::optional<std::string> GetStr(const Value& obj, const char* key) {
  const Value* v = obj.Find(key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->as_string();
}

constexpr int64_t kInterrupted = -2;  // marks an attempt stopped by a signal
// A WriteFileAtomically temp older than this is a leftover of a killed process (a live one exists for milliseconds).
constexpr uint64_t kStaleTempMicros = 60ull * 1000 * 1000;

// attempts.log: one line per attempt "<n> <started_at> <hostname> <pid> [<rows committed at its start>]", and
// "reset <time>" lines (retry --reset). Fills attempts_logged and attempts_spent; `rows_now` is what the shard has
// committed now (progress.json), -1 when unknown.
void ParseAttemptsLog(const std::string& log, int64_t rows_now, ShardRecord* r) {
  std::vector<int64_t> since_reset;  // rows at the start of each attempt since the last reset (-1: unknown)
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    std::string_view line(log.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    if (line.rfind("reset", 0) == 0) {
      since_reset.clear();
      continue;
    }
    if (line.rfind("interrupted", 0) == 0) {
      // The last attempt was stopped by a signal (Ctrl-C, SIGTERM, a preemption): it does not spend the budget.
      if (!since_reset.empty()) since_reset.back() = kInterrupted;
      if (r->attempts_logged > 0) r->last_attempt_interrupted = true;
      continue;
    }
    ++r->attempts_logged;
    r->last_attempt_interrupted = false;
    std::vector<std::string_view> fields;
    size_t f = 0;
    while (f < line.size()) {
      size_t sp = line.find(' ', f);
      if (sp == std::string_view::npos) sp = line.size();
      if (sp > f) fields.push_back(line.substr(f, sp - f));
      f = sp + 1;
    }
    int64_t rows = -1;
    if (fields.size() >= 5) {
      int64_t v = 0;
      bool ok = !fields[4].empty() && fields[4].size() < 19;
      for (char c : fields[4]) {
        if (c < '0' || c > '9') ok = false;
        else v = v * 10 + (c - '0');
      }
      if (ok) rows = v;
    }
    since_reset.push_back(rows);
  }
  r->attempts_spent = 0;
  for (size_t i = 0; i < since_reset.size(); ++i) {
    if (since_reset[i] == kInterrupted) continue;
    int64_t next = i + 1 < since_reset.size() ? since_reset[i + 1] : rows_now;
    if (next == kInterrupted) next = -1;
    bool progressed = since_reset[i] >= 0 && next > since_reset[i];
    // Progress refunds the budget: only the attempts since the last one that moved the shard forward count.
    r->attempts_spent = progressed ? 0 : r->attempts_spent + 1;
  }
}

int64_t RowsCommittedNow(Env* env, const std::string& shard_dir) {
  auto text = env->ReadFileToString(JoinPath(shard_dir, "progress.json"));
  if (!text.ok()) return -1;
  auto v = ParseJson(*text);
  if (!v.ok() || !v->is_object()) return -1;
  const Value* d = v->Find("rows_done");
  return d != nullptr && d->is_int() && d->as_int() >= 0 ? d->as_int() : -1;
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
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &consumed) != 6) {
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
  v.Set("status", ShardStatusName(status));
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
  if (log.ok()) ParseAttemptsLog(*log, RowsCommittedNow(env_, dir_), &r);
  auto text = env_->ReadFileToString(JoinPath(dir_, "status.json"));
  if (!text.ok()) {
    r.status = ShardStatus::kMissing;
    r.retry_count = r.attempts_logged;
    return r;
  }
  auto v = ParseJson(*text);
  if (!v.ok() || !v->is_object()) {
    r.status = ShardStatus::kUnknown;
    r.retry_count = r.attempts_logged;
    return r;
  }
  r.status = ParseShardStatus(GetStr(*v, "status").value_or("unknown"));
  const Value* rc = v->Find("retry_count");
  r.retry_count = (rc && rc->is_int()) ? rc->as_int() : 0;
  if (r.attempts_logged > r.retry_count) r.retry_count = r.attempts_logged;
  // Attempts status.json knows of but attempts.log does not (a deleted log) are spent.
  if (r.retry_count > r.attempts_logged) r.attempts_spent += r.retry_count - r.attempts_logged;
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
    if (!env_->FileExists(p)) continue;
    Status s = env_->RemoveFile(p);
    if (!s.ok() && env_->FileExists(p)) return s;  // gone meanwhile (another writer of the shard) is fine
  }
  return WriteFileAtomically(env_, JoinPath(dir_, marker), LocalIsoTime(env_->NowMicros()) + "\n");
}

Result<int64_t> ShardState::MarkRunning(const RunInfo& info) {
  MMIRAGE_TRY(CreateDirsDurably(env_, dir_));  // else a crash could lose the whole record, attempts.log included
  RemoveStaleTempFiles(env_, dir_, kStaleTempMicros);  // of a process killed mid-replace
  ShardRecord prev = Read();
  ShardRecord r;
  r.status = ShardStatus::kRunning;
  r.retry_count = prev.retry_count + 1;
  r.shard_id = shard_id_;
  uint64_t now = env_->NowMicros();
  r.started_at = LocalIsoTime(now);
  r.hostname = env_->Hostname();
  r.pid = env_->Pid();
  r.slurm_job_id = info.slurm_job_id;
  r.slurm_array_task_id = info.slurm_array_task_id;
  r.datasets = info.datasets;
  // The attempt is counted before any work starts, durably, in a log that a bad status.json cannot reset, with
  // the rows committed so far: the next attempt (or the classifier) sees from it whether this one made progress.
  {
    int64_t rows_now = std::max<int64_t>(0, RowsCommittedNow(env_, dir_));
    MMIRAGE_ASSIGN_OR_RETURN(auto log, env_->NewWritableFile(JoinPath(dir_, "attempts.log"), /*append=*/true));
    MMIRAGE_TRY(log->Append(std::to_string(r.retry_count) + " " + *r.started_at + " " + *r.hostname + " " +
                            std::to_string(*r.pid) + " " + std::to_string(rows_now) + "\n"));
    MMIRAGE_TRY(log->Sync());
    MMIRAGE_TRY(log->Close());
  }
  MMIRAGE_TRY(WriteRecord(r, ".RUNNING"));
  return r.retry_count;
}

Status ShardState::ResetBudget() {
  MMIRAGE_TRY(env_->CreateDirs(dir_));
  MMIRAGE_ASSIGN_OR_RETURN(auto log, env_->NewWritableFile(JoinPath(dir_, "attempts.log"), /*append=*/true));
  MMIRAGE_TRY(log->Append("reset " + LocalIsoTime(env_->NowMicros()) + "\n"));
  MMIRAGE_TRY(log->Sync());
  return log->Close();
}

Status ShardState::MarkSuccess(Value stats, int64_t failed_rows) {
  ShardRecord r = Read();
  r.status = ShardStatus::kSuccess;
  r.finished_at = LocalIsoTime(env_->NowMicros());
  r.error.reset();
  r.stats = std::move(stats);
  r.failed_rows = failed_rows;
  return WriteRecord(r, ".SUCCESS");
}

Status ShardState::MarkSubmitted(Value batch) {
  ShardRecord r = Read();
  r.status = ShardStatus::kSubmitted;
  r.finished_at = LocalIsoTime(env_->NowMicros());
  r.error.reset();
  r.batch = std::move(batch);
  return WriteRecord(r, ".SUBMITTED");
}

Status ShardState::MarkFailed(const std::string& error, int64_t failed_rows) {
  return MarkEnded(error, failed_rows, /*interrupted=*/false);
}

Status ShardState::MarkInterrupted(const std::string& error, int64_t failed_rows) {
  return MarkEnded(error, failed_rows, /*interrupted=*/true);
}

Status ShardState::MarkEnded(const std::string& error, int64_t failed_rows, bool interrupted) {
  ShardRecord r = Read();
  if (interrupted) {
    MMIRAGE_ASSIGN_OR_RETURN(auto log, env_->NewWritableFile(JoinPath(dir_, "attempts.log"), /*append=*/true));
    MMIRAGE_TRY(log->Append("interrupted " + std::to_string(r.retry_count) + "\n"));
    MMIRAGE_TRY(log->Sync());
    MMIRAGE_TRY(log->Close());
  }
  r.status = ShardStatus::kFailed;
  r.finished_at = LocalIsoTime(env_->NowMicros());
  r.error = error;
  r.stats = Value();
  r.failed_rows = failed_rows;
  return WriteRecord(r, ".FAILED");
}

}  // namespace mmirage

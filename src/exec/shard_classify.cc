#include "exec/shard_classify.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "state/heartbeat.h"
#include "state/shard_state.h"
#include "stats/shard_stats.h"
#include "util/process/process_info.h"

namespace mmirage::exec {
namespace {

Value OptD(const std::optional<double>& d) { return d ? Value(*d) : Value(); }
Value OptI(const std::optional<int64_t>& i) { return i ? Value(*i) : Value(); }
Value OptS(const std::optional<std::string>& s) { return s ? Value(*s) : Value(); }

std::optional<double> Span(const std::optional<std::string>& from, const std::optional<std::string>& to) {
  if (!from || !to) return std::nullopt;
  auto a = ParseLocalIsoTime(*from);
  auto b = ParseLocalIsoTime(*to);
  if (!a || !b) return std::nullopt;
  return std::max(0.0, *b - *a);
}

// Why a `running` record is known to be dead; empty when it may be alive.
std::string StaleReason(const ClassifyOptions& o, const ShardRecord& r, double now_s) {
  if (r.hostname && *r.hostname == o.hostname && r.pid && !o.process_alive(*r.pid)) {
    return "process " + std::to_string(*r.pid) + " on " + *r.hostname + " is gone";
  }
  if (o.heartbeat_timeout_seconds > 0) {
    std::optional<double> age = HeartbeatAgeSeconds(o.env, o.state_dir, r.shard_id);
    const char* what = "heartbeat";
    if (!age && r.started_at) {
      // No heartbeat yet: the attempt's start is the last sign of life.
      if (auto started = ParseLocalIsoTime(*r.started_at)) age = now_s - *started;
      what = "heartbeat (none since the start)";
    }
    if (age && *age > o.heartbeat_timeout_seconds) {
      return std::string("no ") + what + " for " + CompactDuration(*age) + " (timeout " +
             CompactDuration(o.heartbeat_timeout_seconds) + ")";
    }
  }
  return "";
}

ShardDetail Detail(const ClassifyOptions& o, const ShardRecord& r, double now_s) {
  ShardDetail d;
  d.shard_id = r.shard_id;
  d.status = r.status;
  d.attempts = r.retry_count;
  d.attempts_spent = r.attempts_spent;
  d.hostname = r.hostname;
  d.error = r.error;
  d.rows_failed = r.failed_rows;
  d.batch = r.batch;
  if (r.status == ShardStatus::kRunning) d.stale_reason = StaleReason(o, r, now_s);
  d.shard_class = ClassifyShard(r.status, !d.stale_reason.empty(), d.attempts_spent, o.max_retries);
  if (r.status == ShardStatus::kSuccess) {
    ShardStats st = ShardStats::FromValue(r.stats);
    if (r.stats.is_object()) {
      d.rows_done = st.rows_processed;
      d.rows_total = st.rows_processed + r.failed_rows;
    }
    d.runtime_seconds = st.runtime_seconds ? st.runtime_seconds : Span(r.started_at, r.finished_at);
    return d;
  }
  // Progress of the current (running) or last (failed) attempt: rows committed so far are kept on resume.
  if (auto p = ReadShardProgress(o.env, o.state_dir, r.shard_id)) {
    d.rows_done = p->rows_done;
    d.rows_total = p->rows_total;
    d.rows_failed = std::max(d.rows_failed, p->rows_failed);
    if (d.shard_class == ShardClass::kRunning) {
      d.rows_per_sec = p->rows_per_sec;
      if (p->rows_total && p->rows_per_sec && *p->rows_per_sec > 0) {
        double remaining = static_cast<double>(std::max<int64_t>(0, *p->rows_total - p->rows_done));
        double since_update = p->updated_at ? std::max(0.0, now_s - *p->updated_at) : 0.0;
        d.eta_seconds = std::max(0.0, remaining / *p->rows_per_sec - since_update);
      }
    }
  }
  if (d.shard_class == ShardClass::kRunning) {
    if (r.started_at) {
      if (auto started = ParseLocalIsoTime(*r.started_at)) d.runtime_seconds = std::max(0.0, now_s - *started);
    }
  } else if (r.status != ShardStatus::kRunning) {
    d.runtime_seconds = Span(r.started_at, r.finished_at);
  }
  return d;
}

std::string Cell(const std::optional<std::string>& s) { return s && !s->empty() ? *s : "-"; }

}  // namespace

const char* ShardClassName(ShardClass c) {
  switch (c) {
    case ShardClass::kSuccessful: return "successful";
    case ShardClass::kRunning: return "running";
    case ShardClass::kFailed: return "failed";
    case ShardClass::kExhausted: return "exhausted";
    case ShardClass::kSubmitted: return "submitted";
  }
  return "failed";
}

ShardClass ClassifyShard(ShardStatus status, bool stale, int64_t attempts, int64_t max_retries) {
  if (status == ShardStatus::kSuccess) return ShardClass::kSuccessful;
  if (status == ShardStatus::kRunning && !stale) return ShardClass::kRunning;
  if (status == ShardStatus::kSubmitted) return ShardClass::kSubmitted;
  if (attempts >= max_retries + 1) return ShardClass::kExhausted;
  return ShardClass::kFailed;
}

std::string ShardDetail::DisplayStatus() const { return stale_reason.empty() ? ShardStatusName(status) : "stale"; }

ClassifyOptions ClassifyOptionsFromConfig(Env* env, const config::Config& config) {
  ClassifyOptions o;
  o.env = env;
  o.state_dir = config.loading.state_dir;
  o.num_shards = config.loading.num_shards;
  o.max_retries = config.execution.max_retries;
  o.heartbeat_timeout_seconds = config.execution.heartbeat_timeout_seconds;
  return o;
}

Classification ClassifyShards(const ClassifyOptions& options) {
  ClassifyOptions o = options;
  if (o.env == nullptr) o.env = Env::Default();
  if (o.hostname.empty()) o.hostname = o.env->Hostname();
  if (!o.process_alive) o.process_alive = [](int64_t pid) { return ProcessAlive(pid); };
  const double now_s = static_cast<double>(o.env->NowMicros()) / 1e6;
  Classification c;
  c.max_retries = o.max_retries;
  for (int64_t id = 0; id < o.num_shards; ++id) {
    ShardRecord r = ShardState(o.env, o.state_dir, id).Read();
    r.shard_id = id;
    ShardDetail d = Detail(o, r, now_s);
    switch (d.shard_class) {
      case ShardClass::kSuccessful: c.successful.push_back(id); break;
      case ShardClass::kRunning: c.running.push_back(id); break;
      case ShardClass::kFailed: c.failed.push_back(id); break;
      case ShardClass::kExhausted: c.exhausted.push_back(id); break;
      case ShardClass::kSubmitted: c.submitted.push_back(id); break;
    }
    c.shards.push_back(std::move(d));
  }
  return c;
}

Value Classification::SummaryValue() const {
  Value v = Value::EmptyObject();
  v.Set("total", static_cast<int64_t>(shards.size()));
  v.Set("successful", static_cast<int64_t>(successful.size()));
  v.Set("running", static_cast<int64_t>(running.size()));
  v.Set("failed", static_cast<int64_t>(failed.size()));
  v.Set("max_retries_exceeded", static_cast<int64_t>(exhausted.size()));
  if (!submitted.empty()) v.Set("submitted", static_cast<int64_t>(submitted.size()));
  return v;
}

Value Classification::ToValue() const {
  Value v = Value::EmptyObject();
  v.Set("summary", SummaryValue());
  Value list = Value::EmptyArray();
  for (const auto& d : shards) list.Push(ShardDetailValue(d));
  v.Set("shards", std::move(list));
  return v;
}

Value ShardDetailValue(const ShardDetail& d) {
  Value v = Value::EmptyObject();
  v.Set("shard_id", d.shard_id);
  v.Set("status", d.DisplayStatus());
  v.Set("class", ShardClassName(d.shard_class));
  v.Set("stale_reason", d.stale_reason.empty() ? Value() : Value(d.stale_reason));
  v.Set("attempts", d.attempts);
  v.Set("attempts_spent", d.attempts_spent);
  v.Set("rows_done", OptI(d.rows_done));
  v.Set("rows_total", OptI(d.rows_total));
  v.Set("rows_failed", d.rows_failed);
  v.Set("hostname", OptS(d.hostname));
  v.Set("runtime_seconds",
        OptD(d.runtime_seconds ? std::optional<double>(RoundTo(*d.runtime_seconds, 3)) : std::nullopt));
  v.Set("rows_per_sec", OptD(d.rows_per_sec));
  v.Set("eta_seconds", OptD(d.eta_seconds ? std::optional<double>(RoundTo(*d.eta_seconds, 1)) : std::nullopt));
  v.Set("error", OptS(d.error));
  if (!d.batch.is_null()) v.Set("batch", d.batch);
  return v;
}

std::string CompactDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  long long s = std::llround(seconds);
  char buf[64];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, (s % 86400) / 3600);
  }
  return buf;
}

std::string FormatShardTable(const Classification& c) {
  std::vector<std::vector<std::string>> rows = {
      {"SHARD", "STATUS", "ATTEMPTS", "ROWS", "FAILED", "HOST", "RUNTIME", "ETA"}};
  const std::string budget = std::to_string(c.max_retries + 1);
  for (const auto& d : c.shards) {
    std::string status = d.DisplayStatus();
    if (d.shard_class == ShardClass::kExhausted) status += " (exhausted)";
    std::string rows_cell = "-";
    if (d.rows_done)
      rows_cell =
          std::to_string(*d.rows_done) + "/" + (d.rows_total ? std::to_string(*d.rows_total) : std::string("?"));
    rows.push_back({std::to_string(d.shard_id), status, std::to_string(d.attempts_spent) + "/" + budget, rows_cell,
                    std::to_string(d.rows_failed), Cell(d.hostname),
                    d.runtime_seconds ? CompactDuration(*d.runtime_seconds) : "-",
                    d.eta_seconds ? CompactDuration(*d.eta_seconds) : "-"});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace mmirage::exec

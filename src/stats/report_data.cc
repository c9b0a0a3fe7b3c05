#include "stats/report_data.h"

#include <algorithm>
#include <cctype>

#include "data/json.h"
#include "data/line_reader.h"

namespace mmirage {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool Contains(const std::string& hay, const char* needle) { return hay.find(needle) != std::string::npos; }

// Reads `path` line by line, calling fn(Value) for every JSON object line; false when the file cannot be opened.
template <typename Fn>
bool ForEachJsonLine(Env* env, const std::string& path, Fn fn) {
  auto reader = LineReader::Open(env, path);
  if (!reader.ok()) return false;
  std::string_view line;
  while (true) {
    auto more = (*reader)->Next(&line);
    if (!more.ok() || !*more) break;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto v = ParseJson(line);
    if (v.ok() && v->is_object()) fn(*v);
  }
  return true;
}

}  // namespace

void CountError(const std::string& message, ErrorCounts* counts) {
  std::string m = Lower(message);
  bool oom = Contains(m, "out of memory") || Contains(m, "outofmemory") || Contains(m, " oom") ||
             m.rfind("oom", 0) == 0 || Contains(m, "cudamalloc") || Contains(m, "failed to allocate");
  bool kv = Contains(m, "kv cache") || Contains(m, "kv-cache") || Contains(m, "memory slot") || Contains(m, "kv_cache");
  if (oom) {
    ++counts->out_of_memory;
  } else if (kv) {
    ++counts->kv_cache_full;
  } else {
    ++counts->other;
    return;
  }
  if (counts->example.empty()) counts->example = message.size() > 200 ? message.substr(0, 200) + "..." : message;
}

std::vector<AttemptSpan> AttemptsFromTimeline(const std::vector<TimelineEntry>& timeline, const ShardRecord& record,
                                              double now) {
  std::vector<AttemptSpan> out;
  auto find = [&](int64_t attempt) -> AttemptSpan* {
    for (auto& a : out) {
      if (a.attempt == attempt) return &a;
    }
    return nullptr;
  };
  for (const TimelineEntry& e : timeline) {
    AttemptSpan* a = find(e.attempt);
    if (a == nullptr) {
      AttemptSpan n;
      n.attempt = e.attempt;
      n.start = n.end = e.t;
      n.outcome = "killed";
      out.push_back(n);
      a = &out.back();
    }
    a->start = std::min(a->start, e.t);
    if (a->outcome == "killed" || a->outcome == "running") a->end = std::max(a->end, e.t);
    if (e.event == "start") {
      a->host = e.host;
      a->pid = e.pid;
      a->slurm_job_id = e.slurm_job_id;
      a->slurm_array_task_id = e.slurm_array_task_id;
    } else if (e.event == "loaded") {
      a->loaded = e.t;
      a->load_seconds = e.load_seconds;
      a->capacity = e.capacity;
    } else if (e.event == "end") {
      a->end = e.t;
      a->outcome = e.outcome.value_or("failed");
      a->error = e.error;
    }
  }
  std::sort(out.begin(), out.end(), [](const AttemptSpan& x, const AttemptSpan& y) { return x.attempt < y.attempt; });
  // The current attempt of a running shard has no end yet.
  if (!out.empty() && record.status == ShardStatus::kRunning && out.back().outcome == "killed" &&
      out.back().attempt == record.retry_count) {
    out.back().outcome = "running";
    out.back().end = std::max(out.back().end, now);
  }
  // No timeline (a state directory written before timelines existed): the last attempt from status.json.
  if (out.empty() && record.started_at) {
    auto start = ParseLocalIsoTime(*record.started_at);
    if (start) {
      AttemptSpan a;
      a.attempt = record.retry_count;
      a.start = *start;
      auto fin = record.finished_at ? ParseLocalIsoTime(*record.finished_at) : std::nullopt;
      a.end = fin.value_or(record.status == ShardStatus::kRunning ? now : *start);
      a.outcome = record.status == ShardStatus::kSuccess || record.status == ShardStatus::kRunning
                      ? ShardStatusName(record.status)
                      : "failed";
      if (record.last_attempt_interrupted) a.outcome = "interrupted";
      a.error = record.error;
      a.host = record.hostname;
      a.pid = record.pid;
      a.slurm_job_id = record.slurm_job_id;
      a.slurm_array_task_id = record.slurm_array_task_id;
      out.push_back(a);
    }
  }
  return out;
}

void LoadShardDetails(Env* env, const std::string& state_dir, ShardReport* shard) {
  shard->timeline = ReadTimeline(env, state_dir, shard->shard_id, &shard->timeline_bad_lines);
  shard->attempts = AttemptsFromTimeline(shard->timeline, shard->record, static_cast<double>(env->NowMicros()) / 1e6);
  // Attempt errors: every ended attempt's, and status.json's (covers a missing timeline).
  bool record_error_seen = false;
  for (const AttemptSpan& a : shard->attempts) {
    if (!a.error) continue;
    CountError(*a.error, &shard->errors);
    if (shard->record.error && *shard->record.error == *a.error) record_error_seen = true;
  }
  if (shard->record.error && !record_error_seen) CountError(*shard->record.error, &shard->errors);
  // Row usage and row errors of the published shard directories.
  if (!shard->record.datasets.is_array()) return;
  for (const Value& d : shard->record.datasets.as_array()) {
    const Value* od = d.is_object() ? d.Find("output_dir") : nullptr;
    if (od == nullptr || !od->is_string()) continue;
    std::string dir = JoinPath(od->as_string(), "shard_" + std::to_string(shard->shard_id));
    UsageSummary u;
    bool found = ForEachJsonLine(env, JoinPath(dir, "usage.jsonl"), [&](const Value& v) {
      ++u.rows;
      if (const Value* p = v.Find("prompt_tokens"); p && p->is_int()) u.prompt_tokens += p->as_int();
      if (const Value* c = v.Find("completion_tokens"); c && c->is_int()) u.completion_tokens += c->as_int();
    });
    if (found) {
      if (!shard->usage) shard->usage = UsageSummary{};
      shard->usage->rows += u.rows;
      shard->usage->prompt_tokens += u.prompt_tokens;
      shard->usage->completion_tokens += u.completion_tokens;
    }
    ForEachJsonLine(env, JoinPath(dir, "errors.jsonl"), [&](const Value& v) {
      if (const Value* m = v.Find("message"); m && m->is_string()) CountError(m->as_string(), &shard->errors);
    });
  }
}

}  // namespace mmirage

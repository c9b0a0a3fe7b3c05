// The heartbeat's content (not its mtime) is the time: mtimes on network file systems follow the file server's
// clock and some of them cache attributes, whereas the content is what the writer's clock said. The files are
// never fsynced so that a running shard causes no fsync storm on a shared file system.

#include "state/heartbeat.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "data/json.h"
#include "state/shard_state.h"

namespace mmirage {
namespace {

double NowSeconds(Env* env) { return static_cast<double>(env->NowMicros()) / 1e6; }

std::string EpochText(double secs) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", secs);
  return buf;
}

std::optional<double> ParseNumber(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  double d = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(d)) return std::nullopt;
  while (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t') ++end;
  if (*end != '\0') return std::nullopt;
  return d;
}

std::optional<double> GetTime(const Value& obj, const char* key) {
  const Value* v = obj.Find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number()) return v->as_number();
  if (v->is_string()) return ParseLocalIsoTime(v->as_string());
  return std::nullopt;
}

Value OptNumber(const std::optional<double>& d) { return d ? Value(*d) : Value(); }

}  // namespace

std::string ShardStateDir(const std::string& state_dir, int64_t shard_id) {
  return JoinPath(state_dir, "shard_" + std::to_string(shard_id));
}

Status TouchHeartbeat(Env* env, const std::string& state_dir, int64_t shard_id) {
  return WriteFileAtomically(env, JoinPath(ShardStateDir(state_dir, shard_id), "heartbeat"),
                             EpochText(NowSeconds(env)) + "\n", /*durable=*/false);
}

std::optional<double> HeartbeatAgeSeconds(Env* env, const std::string& state_dir, int64_t shard_id) {
  auto text = env->ReadFileToString(JoinPath(ShardStateDir(state_dir, shard_id), "heartbeat"));
  if (!text.ok()) return std::nullopt;
  auto at = ParseNumber(*text);
  if (!at) return std::nullopt;
  return NowSeconds(env) - *at;
}

Status WriteShardProgress(Env* env, const std::string& state_dir, int64_t shard_id, const ShardProgress& p) {
  Value v = Value::EmptyObject();
  v.Set("rows_done", p.rows_done);
  v.Set("rows_total", p.rows_total ? Value(*p.rows_total) : Value());
  v.Set("rows_failed", p.rows_failed);
  v.Set("rows_per_sec", p.rows_per_sec ? Value(std::round(*p.rows_per_sec * 100.0) / 100.0) : Value());
  v.Set("started_at", OptNumber(p.started_at));
  v.Set("updated_at", Value(std::round(p.updated_at.value_or(NowSeconds(env)) * 1000.0) / 1000.0));
  if (p.pid) v.Set("pid", *p.pid);
  return WriteFileAtomically(env, JoinPath(ShardStateDir(state_dir, shard_id), "progress.json"), ToJson(v) + "\n",
                             /*durable=*/false);
}

std::optional<ShardProgress> ReadShardProgress(Env* env, const std::string& state_dir, int64_t shard_id) {
  auto text = env->ReadFileToString(JoinPath(ShardStateDir(state_dir, shard_id), "progress.json"));
  if (!text.ok()) return std::nullopt;
  auto v = ParseJson(*text);
  if (!v.ok() || !v->is_object()) return std::nullopt;
  ShardProgress p;
  if (const Value* x = v->Find("rows_done"); x && x->is_int()) p.rows_done = x->as_int();
  if (const Value* x = v->Find("rows_total"); x && x->is_int()) p.rows_total = x->as_int();
  if (const Value* x = v->Find("rows_failed"); x && x->is_int()) p.rows_failed = x->as_int();
  if (const Value* x = v->Find("rows_per_sec"); x && x->is_number()) p.rows_per_sec = x->as_number();
  p.started_at = GetTime(*v, "started_at");
  p.updated_at = GetTime(*v, "updated_at");
  if (const Value* x = v->Find("pid"); x && x->is_int()) p.pid = x->as_int();
  return p;
}

}  // namespace mmirage

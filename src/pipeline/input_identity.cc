#include "pipeline/input_identity.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/json.h"
#include "util/fnv.h"
#include "util/hex.h"

namespace mmirage::pipeline {
namespace {

constexpr size_t kEdgeBytes = 64 * 1024;

// Reads up to n bytes at the file's current position.
Result<std::string> ReadUpTo(SequentialFile* f, size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    MMIRAGE_ASSIGN_OR_RETURN(size_t k, f->Read(n - got, out.data() + got));
    if (k == 0) break;
    got += k;
  }
  out.resize(got);
  return out;
}

Status DescribeFile(Env* env, const std::string& path, Value* entry) {
  MMIRAGE_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(path));
  entry->Set("size", static_cast<int64_t>(size));
  auto mtime = env->GetFileModificationMicros(path);
  entry->Set("mtime", mtime.ok() ? static_cast<int64_t>(*mtime) : int64_t{0});
  MMIRAGE_ASSIGN_OR_RETURN(auto file, env->NewSequentialFile(path));
  MMIRAGE_ASSIGN_OR_RETURN(std::string head, ReadUpTo(file.get(), kEdgeBytes));
  entry->Set("head", Hex64(Fnv1a64(head)));
  std::string tail;
  if (size > kEdgeBytes) {
    uint64_t from = std::max<uint64_t>(kEdgeBytes, size - kEdgeBytes);
    MMIRAGE_TRY(file->Skip(from - kEdgeBytes));
    MMIRAGE_ASSIGN_OR_RETURN(tail, ReadUpTo(file.get(), kEdgeBytes));
  }
  entry->Set("tail", Hex64(Fnv1a64(tail)));
  return Status::OK();
}

const Value* Member(const Value& v, const char* key) { return v.is_object() ? v.Find(key) : nullptr; }

std::string Text(const Value* v) {
  if (v == nullptr) return "none";
  if (v->is_string()) return v->as_string();
  return ToJson(*v);
}

bool Same(const Value* a, const Value* b) { return Text(a) == Text(b); }

}  // namespace

Value DatasetIdentity(Env* env, const config::Config& config, size_t dataset_index, int64_t shard_id) {
  const config::DatasetConfig& dc = config.loading.datasets[dataset_index];
  Value id = Value::EmptyObject();
  id.Set("format_version", kShardFormatVersion);
  id.Set("config", Hex64(config.fingerprint));
  Value vars = Value::EmptyObject();
  for (const auto& [name, value] : config.expanded_vars) {
    // SLURM_* and the Ray addresses say where a task runs (e.g. shard_id: ${SLURM_ARRAY_TASK_ID}), not what it
    // computes: the layout is recorded below, and a shard started in an array job or a Ray task may be finished
    // by a local run.
    if (name.rfind("SLURM_", 0) == 0 || name == "RAY_ADDRESS" || name == "RAY_API_SERVER_ADDRESS") continue;
    vars.Set(name, value ? Value(Hex64(Fnv1a64(*value))) : Value());
  }
  id.Set("vars", vars);
  id.Set("dataset", static_cast<int64_t>(dataset_index));
  id.Set("shard", shard_id);
  id.Set("num_shards", config.loading.num_shards);
  Value inputs = Value::EmptyArray();
  auto parts = ResolveDatasetParts(env, dc.type, dc.path, dc.splits);
  if (parts.ok()) {
    for (const auto& part : *parts) {
      for (const auto& f : part.files) {
        Value e = Value::EmptyObject();
        e.Set("split", part.split);
        e.Set("path", f);
        Status s = DescribeFile(env, f, &e);
        if (!s.ok()) e.Set("error", s.message());
        inputs.Push(e);
      }
    }
  } else {
    id.Set("inputs_error", parts.status().message());
  }
  id.Set("inputs", inputs);
  return id;
}

uint64_t IdentityFingerprint(const Value& identity) { return Fnv1a64(ToJson(identity)); }

std::string DescribeIdentityChange(const Value& before, const Value& now) {
  std::vector<std::string> why;
  if (!before.is_object() || Member(before, "format_version") == nullptr) {
    return "it was written by an older mmirage (format version 1 → " + std::to_string(kShardFormatVersion) + ")";
  }
  if (!Same(Member(before, "format_version"), Member(now, "format_version"))) {
    why.push_back("format version changed (" + Text(Member(before, "format_version")) + " → " +
                  Text(Member(now, "format_version")) + ")");
  }
  if (!Same(Member(before, "config"), Member(now, "config"))) why.push_back("config changed");
  {
    std::map<std::string, std::pair<std::string, std::string>> vars;  // name → (before, now)
    for (const Value* v : {Member(before, "vars"), Member(now, "vars")}) {
      if (v == nullptr || !v->is_object()) continue;
      for (const auto& [name, value] : v->as_object()) {
        auto& slot = vars.try_emplace(name, "absent", "absent").first->second;
        (v == Member(before, "vars") ? slot.first : slot.second) = Text(&value);
      }
    }
    for (const auto& [name, values] : vars) {
      if (values.first == values.second) continue;
      std::string note = values.first == "null" ? " (was unset)" : values.second == "null" ? " (now unset)" : "";
      why.push_back("${" + name + "} expanded differently" + note);
    }
  }
  for (const char* k : {"dataset", "shard", "num_shards"}) {
    if (!Same(Member(before, k), Member(now, k))) {
      why.push_back(std::string("shard layout changed (") + k + " " + Text(Member(before, k)) + " → " +
                    Text(Member(now, k)) + ")");
    }
  }
  // Inputs, by (split, path).
  auto index = [](const Value& id) {
    std::map<std::pair<std::string, std::string>, const Value*> m;
    const Value* inputs = Member(id, "inputs");
    if (inputs == nullptr || !inputs->is_array()) return m;
    for (const Value& e : inputs->as_array()) m[{Text(Member(e, "split")), Text(Member(e, "path"))}] = &e;
    return m;
  };
  auto old_inputs = index(before), new_inputs = index(now);
  auto name = [](const std::pair<std::string, std::string>& key) {
    return key.second + (key.first.empty() ? "" : " (split " + key.first + ")");
  };
  for (const auto& [key, e] : old_inputs) {
    auto it = new_inputs.find(key);
    if (it == new_inputs.end()) {
      why.push_back("input " + name(key) + " is no longer read");
      continue;
    }
    const Value* n = it->second;
    std::vector<std::string> what;
    if (!Same(Member(*e, "size"), Member(*n, "size"))) {
      what.push_back("size " + Text(Member(*e, "size")) + " → " + Text(Member(*n, "size")));
    }
    if (!Same(Member(*e, "head"), Member(*n, "head")) || !Same(Member(*e, "tail"), Member(*n, "tail"))) {
      what.push_back("content");
    }
    if (!Same(Member(*e, "mtime"), Member(*n, "mtime"))) what.push_back("modification time");
    if (!Same(Member(*e, "error"), Member(*n, "error"))) what.push_back("readability");
    if (!what.empty()) {
      std::string list;
      for (const auto& w : what) list += (list.empty() ? "" : ", ") + w;
      why.push_back("input " + name(key) + " changed (" + list + ")");
    }
  }
  for (const auto& [key, e] : new_inputs) {
    if (!old_inputs.count(key)) why.push_back("input " + name(key) + " is new");
  }
  // Inputs read in another order.
  if (why.empty() && !Same(Member(before, "inputs"), Member(now, "inputs"))) why.push_back("inputs reordered");
  if (why.empty() && !Same(Member(before, "inputs_error"), Member(now, "inputs_error"))) {
    why.push_back("inputs could not be resolved");
  }
  if (why.empty()) return "its identity changed";
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

}  // namespace mmirage::pipeline

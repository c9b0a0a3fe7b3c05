#include "batch/rows.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>

#include "data/json.h"
#include "batch/request.h"
#include "util/base64.h"
#include "util/signals.h"

namespace mmirage::batch {

std::string Pad6(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(n));
  return buf;
}

std::string RandomRunId() {
  std::random_device rd;
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06x", static_cast<unsigned>(rd()) & 0xffffffu);
  return buf;
}

std::string UtcIsoNow(Env* env) {
  uint64_t us = env->NowMicros();
  time_t t = static_cast<time_t>(us / 1000000);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(us % 1000000));
  return buf;
}

std::string StripSpace(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Result<ShardPlan> PlanShardDataset(Env* env, const config::DatasetConfig& dc, int64_t num_shards, int64_t shard_id) {
  ShardPlan plan;
  auto parts = ResolveDatasetParts(env, dc.path, dc.splits);
  if (!parts.ok()) return parts.status().WithContext(dc.loc.ToString() + ": dataset");
  plan.parts = std::move(*parts);
  for (const auto& part : plan.parts) {
    if (num_shards == 1) {
      plan.ranges.push_back(RowRange{0, UINT64_MAX});
      continue;
    }
    MMIRAGE_ASSIGN_OR_RETURN(uint64_t n, CountRows(env, part));
    plan.ranges.push_back(ShardRange(n, static_cast<uint64_t>(num_shards), static_cast<uint64_t>(shard_id)));
  }
  return plan;
}

Status ForEachShardRow(Env* env, const config::Config& config, int64_t shard_id, const RowFn& fn,
                       const std::function<Status(size_t, const ShardPlan&)>& begin_dataset,
                       const std::function<Status(size_t)>& end_dataset) {
  for (size_t d = 0; d < config.loading.datasets.size(); ++d) {
    const auto& dc = config.loading.datasets[d];
    MMIRAGE_ASSIGN_OR_RETURN(ShardPlan plan, PlanShardDataset(env, dc, config.loading.num_shards, shard_id));
    if (begin_dataset) MMIRAGE_TRY(begin_dataset(d, plan));
    pipeline::RowTransform transform(&config, env, dc.image_base_path.value_or(""));
    transform.set_tag_bytes(dc.output_format != "jsonl");
    for (size_t p = 0; p < plan.parts.size(); ++p) {
      RowStream stream(env, plan.parts[p], plan.ranges[p]);
      RawRow raw;
      while (true) {
        if (StopRequested()) return Status::Unavailable("interrupted");
        MMIRAGE_ASSIGN_OR_RETURN(bool more, stream.Next(&raw));
        if (!more) break;
        RowCtx c;
        c.dataset = d;
        c.part = p;
        c.index = raw.index;
        c.source = *raw.file + ":" + std::to_string(raw.line);
        auto parsed = ParseJson(raw.text);
        if (!parsed.ok() || !parsed->is_object()) {
          c.ok = false;
          c.error = pipeline::RowError{pipeline::Stage::kRead,
                                       parsed.ok()
                                           ? std::string("row is a JSON ") + parsed->TypeName() + ", expected an object"
                                           : parsed.status().message()};
        } else {
          c.row = std::move(*parsed);
          auto vars = transform.Extract(c.row);
          if (!vars.ok) {
            c.ok = false;
            c.error = vars.error;
          } else {
            c.vars = std::move(vars.value);
          }
        }
        MMIRAGE_TRY(fn(c, transform));
      }
    }
    if (end_dataset) MMIRAGE_TRY(end_dataset(d));
  }
  return Status::OK();
}

std::vector<int64_t> OutputStages(const config::Config& config) {
  const auto& outs = config.processing.outputs;
  std::vector<int64_t> stage(outs.size(), 0);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].prompt_tmpl) continue;
    for (const auto& name : outs[i].prompt_tmpl->UndeclaredVariables())
      for (size_t j = 0; j < i; ++j)
        if (outs[j].name == name) stage[i] = std::max(stage[i], stage[j] + 1);
  }
  return stage;
}

int64_t NumStages(const std::vector<int64_t>& stages) {
  int64_t n = 0;
  for (int64_t s : stages) n = std::max(n, s + 1);
  return n;
}

std::string CustomId(const config::OutputVar& o, const std::string& modality, int64_t shard, const RowCtx& c) {
  return o.name + "-" + modality + "-s" + std::to_string(shard) + "-d" + std::to_string(c.dataset) + "p" +
         std::to_string(c.part) + "-r" + std::to_string(c.index);
}

std::string SentCustomId(const std::string& provider, const std::string& raw) {
  if (provider != "anthropic") return raw;
  auto n = batch::NormalizeAnthropicCustomId(raw);
  return n.ok() ? *n : raw;
}

bool HasImages(const config::Config& config, const RowCtx& c) {
  for (const auto& in : config.processing.inputs) {
    const Value* v = in.image ? c.vars.Find(in.name) : nullptr;
    if (v != nullptr && !v->is_null()) return true;
  }
  return false;
}

std::vector<std::string> RowImages(const config::Config& config, const RowCtx& c) {
  std::vector<const config::InputVar*> image_inputs;
  for (const auto& in : config.processing.inputs)
    if (in.image && c.vars.Find(in.name) != nullptr && !c.vars.Find(in.name)->is_null()) image_inputs.push_back(&in);
  std::sort(image_inputs.begin(), image_inputs.end(),
            [](const config::InputVar* a, const config::InputVar* b) { return a->name < b->name; });
  std::vector<std::string> images;
  for (const auto* in : image_inputs) {
    const Value* v = c.vars.Find(in->name);
    if (v->is_string()) {
      images.push_back(v->as_string());
    } else if (v->is_bytes()) {  // image bytes from a binary column: inlined as a data: URI
      const std::string& b = v->as_bytes();
      const char* mime = b.rfind("\xff\xd8", 0) == 0                     ? "image/jpeg"
                         : b.rfind("GIF8", 0) == 0                       ? "image/gif"
                         : b.size() > 12 && b.compare(8, 4, "WEBP") == 0 ? "image/webp"
                                                                         : "image/png";
      std::string uri = std::string("data:") + mime + ";base64,";
      AppendBase64(v->as_bytes(), &uri);
      images.push_back(std::move(uri));
    } else {
      images.push_back(batch::PyJson(*v, true));
    }
  }
  return images;
}

}  // namespace mmirage::batch

// `mmirage merge --config C --output-path P [--metadata-path R ...]` for batch_api configs: the original's
// collector output (spec processors.md §2.9), built from the receipts — one row per answered request with
// `source_index`, `custom_id`, `caption` | `conversations` | `status`+`error_message`, and token counts.
// The shard datasets published by `collect` are the better output; this is for users who depend on that format.
#include <algorithm>
#include <map>
#include <set>

#include "cli/common.h"
#include "data/json.h"
#include "data/dataset.h"
#include "data/line_reader.h"
#include "process/batch_provider.h"
#include "process/batch_request.h"
#include "template/template.h"
#include "util/env.h"
#include "util/log.h"

namespace mmirage::cli {
namespace {

std::string Base(const std::string& path) {
  return path.size() >= 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0 ? path.substr(0, path.size() - 6) : path;
}

struct Pending {
  std::string provider, batch_id, custom_id;
  int64_t source_index = 0;
  int64_t order = 0;  // later receipts win
};

Value Payload(const process::BatchAnswer& a) {
  Value p = Value::EmptyObject();
  if (!a.ok) {
    p.Set("status", "error");
    p.Set("error_message", a.error);
    return p;
  }
  if (a.text.empty()) {
    p.Set("caption", "");
    return p;
  }
  auto parsed = ParseJson(a.text);
  if (parsed.ok() && parsed->is_object() && (parsed->Find("question") || parsed->Find("answer"))) {
    auto field = [&](const char* k) {
      const Value* v = parsed->Find(k);
      return v == nullptr ? std::string() : tmpl::PyStr(*v);
    };
    Value conv = Value::EmptyArray();
    Value u = Value::EmptyObject(), as = Value::EmptyObject();
    u.Set("role", "user");
    u.Set("content", field("question"));
    as.Set("role", "assistant");
    as.Set("content", field("answer"));
    conv.Push(u);
    conv.Push(as);
    p.Set("conversations", conv);
    return p;
  }
  size_t b = a.text.find_first_not_of(" \t\r\n");
  if (!parsed.ok() && b != std::string::npos && (a.text[b] == '{' || a.text[b] == '['))
    LOG_WARN("Failed to parse JSON for result row. Treating as raw text. Content: " << a.text.substr(0, 100));
  p.Set("caption", a.text);
  return p;
}

}  // namespace

int MergeBatchResults(const config::Config& config, const std::string& output_path,
                      const std::vector<std::string>& metadata_paths) {
  Env* env = Env::Default();
  if (output_path.empty()) {
    LOG_ERROR("--output-path is required to merge batch_api results");
    return kExitFailure;
  }
  const config::Processor* proc = config.FindProcessor("batch_api");
  std::vector<std::string> paths = metadata_paths;
  if (paths.empty()) {
    if (proc == nullptr || proc->batch_api.metadata_output_path.empty()) {
      LOG_ERROR("No metadata paths provided and none found in config batch_api processor blocks.");
      return kExitFailure;
    }
    std::string base = Base(proc->batch_api.metadata_output_path);
    std::vector<std::string> patterns = {base + ".text.*.jsonl", base + ".multimodal.*.jsonl"};
    std::set<std::string> seen;
    for (const auto& pat : patterns) {
      auto m = env->Glob(pat);
      if (!m.ok()) continue;
      std::vector<std::string> files = *m;
      std::sort(files.begin(), files.end());
      for (const auto& f : files)
        if (seen.insert(f).second) paths.push_back(f);
    }
    if (paths.empty()) {
      LOG_ERROR("No metadata receipts matched config metadata_output_path patterns. Tried: ['" + patterns[0] + "', '" +
                patterns[1] + "']. Expected suffixed files like '" + base + ".text.<run>.jsonl' or '" + base +
                ".multimodal.<run>.jsonl'.");
      return kExitFailure;
    }
  }
  // Receipts → latest (provider, batch) per custom id.
  std::map<std::string, Pending> by_id;
  std::vector<std::pair<std::string, std::string>> pairs;  // first-seen order
  int64_t order = 0;
  for (const auto& path : paths) {
    auto reader = LineReader::Open(env, path);
    if (!reader.ok()) {
      LOG_ERROR(reader.status().message());
      return kExitFailure;
    }
    std::string_view line;
    int64_t n = 0;
    while (true) {
      auto more = (*reader)->Next(&line);
      if (!more.ok() || !*more) break;
      ++n;
      if (IsBlankLine(line)) continue;
      auto v = ParseJson(line);
      if (!v.ok()) {
        LOG_WARN(path << ":" << n << ": malformed receipt line skipped");
        continue;
      }
      if (!v->is_object()) continue;
      const Value* pv = v->Find("provider");
      const Value* bv = v->Find("provider_batch_id");
      std::string provider = pv && pv->is_string() ? pv->as_string() : "";
      provider.erase(0, provider.find_first_not_of(" \t"));
      provider.erase(provider.find_last_not_of(" \t") + 1);
      std::transform(provider.begin(), provider.end(), provider.begin(), ::tolower);
      std::string batch = bv && bv->is_string() ? bv->as_string() : "";
      if (provider.empty() || batch.empty()) continue;
      if (proc == nullptr || proc->batch_api.provider != provider) {
        LOG_ERROR("Metadata references provider(s) missing from YAML batch config: ['" << provider
                                                                                       << "']. Check the batch_api processor block(s).");
        return kExitFailure;
      }
      if (std::find(pairs.begin(), pairs.end(), std::make_pair(provider, batch)) == pairs.end())
        pairs.emplace_back(provider, batch);
      if (const Value* m = v->Find("custom_id_to_source_index"); m && m->is_object()) {
        for (const auto& [id, idx] : m->as_object()) {
          if (!idx.is_number()) continue;
          by_id[id] = Pending{provider, batch, id, idx.is_int() ? idx.as_int() : static_cast<int64_t>(idx.as_double()),
                              order++};
        }
      }
    }
  }
  auto provider = process::BatchProvider::Create(proc->batch_api, config::ProcessEnvLookup(), env);
  if (!provider.ok()) {
    LOG_ERROR(provider.status().message());
    return kExitFailure;
  }
  // Every batch must be complete: nothing is written otherwise (as the original).
  std::string tmp_dir = output_path + ".batches.tmp";
  (void)env->RemoveAll(tmp_dir);
  if (!env->CreateDirs(tmp_dir).ok()) {
    LOG_ERROR("cannot create " << tmp_dir);
    return kExitFailure;
  }
  std::vector<Value> rows;
  int64_t in_tokens = 0, out_tokens = 0;
  for (const auto& [prov, batch] : pairs) {
    auto st = (*provider)->GetStatus(batch);
    if (!st.ok() || st->status != "completed") {
      LOG_ERROR("Batch '" << batch << "' is not completed yet (status=" << (st.ok() ? st->raw_status : st.status().message())
                          << "). Please retry after the provider marks it completed and produces an output file.");
      (void)env->RemoveAll(tmp_dir);
      return kExitFailure;
    }
    std::string file = JoinPath(tmp_dir, batch + ".jsonl");
    Status s = (*provider)->DownloadResults(batch, *st, file);
    if (!s.ok()) {
      LOG_ERROR(s.message());
      (void)env->RemoveAll(tmp_dir);
      return kExitFailure;
    }
    auto reader = LineReader::Open(env, file);
    if (!reader.ok()) return kExitFailure;
    std::string_view line;
    while (true) {
      auto more = (*reader)->Next(&line);
      if (!more.ok() || !*more) break;
      if (IsBlankLine(line)) continue;
      auto a = process::ParseBatchAnswer(prov, line);
      if (!a.ok()) continue;
      auto it = by_id.find(a->custom_id);
      if (it == by_id.end() || it->second.batch_id != batch) continue;  // only its latest submission counts
      Value row = Value::EmptyObject();
      row.Set("source_index", it->second.source_index);
      row.Set("custom_id", a->custom_id);
      Value payload = Payload(*a);
      for (const auto& [k, v] : payload.as_object()) row.Set(k, v);
      if (a->input_tokens && a->output_tokens) {
        row.Set("input_tokens", *a->input_tokens);
        row.Set("output_tokens", *a->output_tokens);
        in_tokens += *a->input_tokens;
        out_tokens += *a->output_tokens;
      }
      rows.push_back(std::move(row));
      by_id.erase(it);  // de-duplicated
    }
  }
  (void)env->RemoveAll(tmp_dir);
  std::sort(rows.begin(), rows.end(), [](const Value& a, const Value& b) {
    int64_t x = a.Find("source_index")->as_int(), y = b.Find("source_index")->as_int();
    if (x != y) return x < y;
    return a.Find("custom_id")->as_string() < b.Find("custom_id")->as_string();
  });
  std::string text;
  for (const auto& r : rows) text += process::PyJson(r, /*compact=*/false) + "\n";
  size_t slash = output_path.rfind('/');
  if (slash != std::string::npos) (void)env->CreateDirs(output_path.substr(0, slash));
  Status w = WriteFileAtomically(env, output_path, text);
  if (!w.ok()) {
    LOG_ERROR(w.message());
    return kExitFailure;
  }
  LOG_INFO("Merged " << rows.size() << " rows and saved to " << output_path);
  if (in_tokens || out_tokens)
    LOG_INFO("Provider usage: " << in_tokens << " input tokens, " << out_tokens << " output tokens");
  return kExitOk;
}

}  // namespace mmirage::cli

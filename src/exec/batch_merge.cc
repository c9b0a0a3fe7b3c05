#include "exec/batch_merge.h"

#include <algorithm>
#include <map>
#include <set>

#include "batch/provider.h"
#include "batch/request.h"
#include "data/dataset.h"
#include "data/json.h"
#include "data/line_reader.h"
#include "template/template.h"
#include "util/log.h"

namespace mmirage::exec {
namespace {

std::string Base(const std::string& path) {
  return path.size() >= 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0 ? path.substr(0, path.size() - 6) : path;
}

struct Pending {
  std::string provider, batch_id, custom_id;
  int64_t source_index = 0;
  int64_t order = 0;  // later receipts win
};

Value Payload(const batch::BatchAnswer& a) {
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

// What the receipts say: the latest (provider, batch) of every custom id, and the batches in first-seen order.
struct Receipts {
  std::map<std::string, Pending> by_id;
  std::vector<std::pair<std::string, std::string>> batches;
};

// The receipt files: `metadata_paths` as given, else the processor's `<base>.text.*.jsonl` and
// `<base>.multimodal.*.jsonl`, each pattern's matches sorted.
Result<std::vector<std::string>> ReceiptFiles(Env* env, const config::Processor* proc,
                                              const std::vector<std::string>& metadata_paths) {
  if (!metadata_paths.empty()) return metadata_paths;
  if (proc == nullptr || proc->batch_api.metadata_output_path.empty())
    return Status::InvalidArgument("No metadata paths provided and none found in config batch_api processor blocks.");
  std::string base = Base(proc->batch_api.metadata_output_path);
  std::vector<std::string> patterns = {base + ".text.*.jsonl", base + ".multimodal.*.jsonl"};
  std::vector<std::string> paths;
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
    return Status::InvalidArgument("No metadata receipts matched config metadata_output_path patterns. Tried: ['" +
                                   patterns[0] + "', '" + patterns[1] + "']. Expected suffixed files like '" + base +
                                   ".text.<run>.jsonl' or '" + base + ".multimodal.<run>.jsonl'.");
  }
  return paths;
}

// One receipt line into `out`. A malformed line is skipped with a warning; a provider the config lacks is an error.
Status ReadReceiptLine(const config::Processor* proc, const std::string& path, int64_t line_no, std::string_view line,
                       int64_t* order, Receipts* out) {
  auto v = ParseJson(line);
  if (!v.ok()) {
    LOG_WARN(path << ":" << line_no << ": malformed receipt line skipped");
    return Status::OK();
  }
  if (!v->is_object()) return Status::OK();
  const Value* pv = v->Find("provider");
  const Value* bv = v->Find("provider_batch_id");
  std::string provider = pv && pv->is_string() ? pv->as_string() : "";
  provider.erase(0, provider.find_first_not_of(" \t"));
  provider.erase(provider.find_last_not_of(" \t") + 1);
  std::transform(provider.begin(), provider.end(), provider.begin(), ::tolower);
  std::string batch = bv && bv->is_string() ? bv->as_string() : "";
  if (provider.empty() || batch.empty()) return Status::OK();
  if (proc == nullptr || proc->batch_api.provider != provider) {
    return Status::InvalidArgument("Metadata references provider(s) missing from YAML batch config: ['" + provider +
                                   "']. Check the batch_api processor block(s).");
  }
  if (std::find(out->batches.begin(), out->batches.end(), std::make_pair(provider, batch)) == out->batches.end())
    out->batches.emplace_back(provider, batch);
  if (const Value* m = v->Find("custom_id_to_source_index"); m && m->is_object()) {
    for (const auto& [id, idx] : m->as_object()) {
      if (!idx.is_number()) continue;
      out->by_id[id] =
          Pending{provider, batch, id, idx.is_int() ? idx.as_int() : static_cast<int64_t>(idx.as_double()), (*order)++};
    }
  }
  return Status::OK();
}

Result<Receipts> ReadReceipts(Env* env, const config::Processor* proc, const std::vector<std::string>& paths) {
  Receipts out;
  int64_t order = 0;
  for (const auto& path : paths) {
    auto reader = LineReader::Open(env, path);
    if (!reader.ok()) return reader.status();
    std::string_view line;
    for (int64_t n = 1;; ++n) {
      auto more = (*reader)->Next(&line);
      if (!more.ok() || !*more) break;
      if (IsBlankLine(line)) continue;
      Status s = ReadReceiptLine(proc, path, n, line, &order, &out);
      if (!s.ok()) return s;
    }
  }
  return out;
}

// Downloads one completed batch into `file` and appends a row for every answer that is its custom id's latest
// submission (each id once).
Status CollectBatch(Env* env, batch::BatchProvider* provider, const std::string& prov, const std::string& batch,
                    const std::string& file, Receipts* receipts, std::vector<Value>* rows, BatchMergeReport* report) {
  auto st = provider->GetStatus(batch);
  if (!st.ok() || st->status != "completed") {
    return Status::Unavailable("Batch '" + batch +
                               "' is not completed yet (status=" + (st.ok() ? st->raw_status : st.status().message()) +
                               "). Please retry after the provider marks it completed and produces an output file.");
  }
  Status s = provider->DownloadResults(batch, *st, file);
  if (!s.ok()) return s;
  auto reader = LineReader::Open(env, file);
  if (!reader.ok()) return reader.status();
  std::string_view line;
  while (true) {
    auto more = (*reader)->Next(&line);
    if (!more.ok() || !*more) break;
    if (IsBlankLine(line)) continue;
    auto a = batch::ParseBatchAnswer(prov, line);
    if (!a.ok()) continue;
    auto it = receipts->by_id.find(a->custom_id);
    if (it == receipts->by_id.end() || it->second.batch_id != batch) continue;  // only its latest submission counts
    Value row = Value::EmptyObject();
    row.Set("source_index", it->second.source_index);
    row.Set("custom_id", a->custom_id);
    Value payload = Payload(*a);
    for (const auto& [k, v] : payload.as_object()) row.Set(k, v);
    if (a->input_tokens && a->output_tokens) {
      row.Set("input_tokens", *a->input_tokens);
      row.Set("output_tokens", *a->output_tokens);
      report->input_tokens += *a->input_tokens;
      report->output_tokens += *a->output_tokens;
    }
    rows->push_back(std::move(row));
    receipts->by_id.erase(it);  // de-duplicated
  }
  return Status::OK();
}

}  // namespace

Result<BatchMergeReport> MergeBatchResults(Env* env, const config::Config& config, const std::string& output_path,
                                           const std::vector<std::string>& metadata_paths) {
  if (output_path.empty()) return Status::InvalidArgument("--output-path is required to merge batch_api results");
  const config::Processor* proc = config.FindProcessor("batch_api");
  auto paths = ReceiptFiles(env, proc, metadata_paths);
  if (!paths.ok()) return paths.status();
  auto receipts = ReadReceipts(env, proc, *paths);
  if (!receipts.ok()) return receipts.status();
  auto provider = batch::BatchProvider::Create(proc->batch_api, config::ProcessVarLookup(), env);
  if (!provider.ok()) return provider.status();
  // Every batch must be complete: nothing is written otherwise.
  const std::string tmp_dir = output_path + ".batches.tmp";
  (void)env->RemoveAll(tmp_dir);
  if (!env->CreateDirs(tmp_dir).ok()) return Status::IOError("cannot create " + tmp_dir);
  BatchMergeReport report;
  std::vector<Value> rows;
  for (const auto& [prov, batch] : receipts->batches) {
    Status s = CollectBatch(env, provider->get(), prov, batch, JoinPath(tmp_dir, batch + ".jsonl"), &*receipts, &rows,
                            &report);
    if (!s.ok()) {
      (void)env->RemoveAll(tmp_dir);
      return s;
    }
  }
  (void)env->RemoveAll(tmp_dir);
  std::sort(rows.begin(), rows.end(), [](const Value& a, const Value& b) {
    int64_t x = a.Find("source_index")->as_int(), y = b.Find("source_index")->as_int();
    if (x != y) return x < y;
    return a.Find("custom_id")->as_string() < b.Find("custom_id")->as_string();
  });
  std::string text;
  for (const auto& r : rows) text += batch::PyJson(r, /*compact=*/false) + "\n";
  size_t slash = output_path.rfind('/');
  if (slash != std::string::npos) (void)env->CreateDirs(output_path.substr(0, slash));
  Status w = WriteFileAtomically(env, output_path, text);
  if (!w.ok()) return w;
  report.rows = static_cast<int64_t>(rows.size());
  return report;
}

}  // namespace mmirage::exec

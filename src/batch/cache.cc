//   PlanStage      before the first chunk of a stage is made: walks the stage's requests exactly as the submission
//                  will (ForEachStageRequest), looks each one up by its key (process/cache_key.h BatchRequestKey:
//                  the request as sent minus its custom id, provider, base URL, endpoint), keeps a hit only if it is
//                  a usable answer for its output, writes the hits to `<journal dir>/cache-hits-stage-<k>.jsonl`
//                  (atomically) and journals {"event":"cached"}. Decided once per stage: a re-run reads that file,
//                  so the chunks stay byte-identical to the journaled ones even if the cache changed meanwhile. A
//                  stage that already has a chunk but no such event (cache unavailable then) gets no hits.
//   StoreAnswers   (readwrite) stores the usable answers of every chunk whose results are on disk and that is not
//                  journaled as stored, keyed from each request line as it was sent. Close seals the cache file,
//                  then journals those chunks as stored; a kill before that only means they are stored again.

#include "batch/cache.h"

#include <unordered_map>

#include "data/json.h"
#include "data/line_reader.h"
#include "batch/collect.h"
#include "batch/request.h"
#include "batch/submit.h"
#include "process/cache_key.h"
#include "util/log.h"

namespace mmirage::batch {
namespace {

std::string HitsFile(int64_t stage) { return "cache-hits-stage-" + std::to_string(stage) + ".jsonl"; }

// The output a journaled request belongs to (nullptr for a journal written before outputs were recorded).
const config::OutputVar* OutputOf(const BatchShardContext& ctx, const JournalRequest& r) {
  const auto& outs = ctx.config.processing.outputs;
  if (r.output >= 0 && static_cast<size_t>(r.output) < outs.size()) return &outs[static_cast<size_t>(r.output)];
  return nullptr;
}

}  // namespace

std::unique_ptr<BatchCache> BatchCache::Open(BatchShardContext* ctx) {
  ctx->cache_active = false;
  if (!ctx->export_path.empty() || ctx->config.execution.cache == "off") return nullptr;
  if (!IsBatchDeterministic(ctx->batch_api())) return nullptr;
  auto c = process::OpenGenerationCache(ctx->env, ctx->config);  // warns when it cannot be opened
  if (c == nullptr) return nullptr;
  ctx->cache_active = true;
  return std::unique_ptr<BatchCache>(new BatchCache(ctx, std::move(c)));
}

BatchCache::~BatchCache() {
  Status s = Close();
  if (!s.ok()) LOG_WARN("generation cache: " << s.message());
}

Status BatchCache::PlanStage(int64_t stage) {
  BatchJournal& j = *ctx_->journal;
  if (j.cached_stages().count(stage)) return Status::OK();
  for (const auto& c : j.chunks())
    if (c.stage == stage) return Status::OK();  // submitted without the cache: keep it that way
  const auto& bp = ctx_->batch_api();
  const auto& outs = ctx_->config.processing.outputs;
  std::string file = HitsFile(stage), path = JoinPath(j.dir(), file), tmp = path + ".tmp";
  MMIRAGE_ASSIGN_OR_RETURN(auto out, ctx_->env->NewWritableFile(tmp));
  int64_t requests = 0, hits = 0, duplicates = 0;
  std::unordered_map<std::string, std::string> first_miss;  // key → custom id of the first request sent with it
  StageVisitor v;
  v.request = [&](StageRequest& r) -> Status {
    ++requests;
    std::string key = BatchRequestKey(bp, r.request);
    if (key.empty()) return Status::OK();
    if (auto f = first_miss.find(key); f != first_miss.end()) {  // the same request again: sent once
      Value line = Value::EmptyObject();
      line.Set("custom_id", r.custom_id);
      line.Set("same_as", f->second);
      MMIRAGE_TRY(out->Append(ToJson(line) + "\n"));
      ctx_->cached_ids.insert(r.custom_id);
      ctx_->aliases[r.custom_id] = f->second;
      ++duplicates;
      return Status::OK();
    }
    std::optional<cache::CacheEntry> e = cache_->Lookup(key);
    if (e) {
      batch::BatchAnswer probe;
      probe.ok = true;
      probe.text = e->text;
      if (!AnswerValue(outs[r.output], probe).ok()) e.reset();  // not usable for this output: submitted
    }
    if (!e) {
      first_miss.emplace(std::move(key), r.custom_id);
      return Status::OK();
    }
    batch::BatchAnswer a;
    a.custom_id = r.custom_id;
    a.ok = true;
    a.text = e->text;
    a.input_tokens = e->prompt_tokens;
    a.output_tokens = e->completion_tokens;
    Value line = Value::EmptyObject();
    line.Set("custom_id", a.custom_id);
    line.Set("text", a.text);
    line.Set("input_tokens", *a.input_tokens);
    line.Set("output_tokens", *a.output_tokens);
    MMIRAGE_TRY(out->Append(ToJson(line) + "\n"));
    ctx_->cached_ids.insert(a.custom_id);
    ctx_->answers[a.custom_id] = std::move(a);
    ++hits;
    return Status::OK();
  };
  MMIRAGE_TRY(ForEachStageRequest(ctx_, stage, v));
  MMIRAGE_TRY(out->Sync());
  MMIRAGE_TRY(out->Close());
  MMIRAGE_TRY(ctx_->env->RenameFile(tmp, path));
  MMIRAGE_TRY(ctx_->env->SyncDir(j.dir()));
  Value e = Value::EmptyObject();
  e.Set("event", "cached");
  e.Set("stage", stage);
  e.Set("file", file);
  e.Set("hits", hits);
  e.Set("duplicates", duplicates);
  e.Set("requests", requests);
  MMIRAGE_TRY(j.Append(e));
  LOG_INFO("shard " << ctx_->shard_id() << ": " << hits << " of " << requests << " request(s)"
                    << (stage > 0 ? " of stage " + std::to_string(stage) : std::string())
                    << " answered by the generation cache (" << ctx_->config.execution.cache_dir << ")"
                    << (duplicates > 0 ? ", " + std::to_string(duplicates) + " identical to another one" : "")
                    << "; they are not submitted");
  return Status::OK();
}

Status BatchCache::StoreAnswers() {
  if (ctx_->config.execution.cache != "readwrite") return Status::OK();
  const auto& bp = ctx_->batch_api();
  for (const auto& c : ctx_->journal->chunks()) {
    if (!c.batch_id || c.stored || !ctx_->env->FileExists(ctx_->ResultsPath(c))) continue;
    if (std::find(stored_.begin(), stored_.end(), c.name) != stored_.end()) continue;
    MMIRAGE_ASSIGN_OR_RETURN(std::string lines, ctx_->env->ReadFileToString(JoinPath(ctx_->journal->dir(), c.file)));
    size_t pos = 0;
    for (const auto& r : c.requests) {
      size_t end = lines.find('\n', pos);
      std::string_view line(lines.data() + pos, (end == std::string::npos ? lines.size() : end) - pos);
      pos = end == std::string::npos ? lines.size() : end + 1;
      auto a = ctx_->answers.find(r.custom_id);
      const config::OutputVar* o = OutputOf(*ctx_, r);
      if (a == ctx_->answers.end() || !a->second.ok || o == nullptr || ctx_->cached_ids.count(r.custom_id)) continue;
      if (!AnswerValue(*o, a->second).ok()) continue;  // only answers that are usable are kept
      auto req = ParseJson(line);
      if (!req.ok()) {
        return Status::Corruption(JoinPath(ctx_->journal->dir(), c.file) + ": a request line does not parse");
      }
      const Value* id = req->Find("custom_id");
      if (id == nullptr || !id->is_string() || id->as_string() != r.custom_id) {
        return Status::Corruption(JoinPath(ctx_->journal->dir(), c.file) + ": request lines do not match the journal");
      }
      std::string key = BatchRequestKey(bp, *req);
      if (key.empty()) continue;
      cache::CacheEntry e;
      e.text = a->second.text;
      e.prompt_tokens = a->second.input_tokens.value_or(0);
      e.completion_tokens = a->second.output_tokens.value_or(0);
      cache_->Insert(key, e);
    }
    stored_.push_back(c.name);
  }
  return Status::OK();
}

Status BatchCache::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  Status s = cache_->Close();
  if (!s.ok()) return s;  // not journaled as stored: the next run stores them again
  for (const auto& name : stored_) {
    Value e = Value::EmptyObject();
    e.Set("event", "stored");
    e.Set("name", name);
    MMIRAGE_TRY(ctx_->journal->Append(e));
  }
  const cache::CacheCounters& cc = cache_->counters();
  if (cc.inserts > 0 || cc.hits > 0) {
    LOG_INFO("shard " << ctx_->shard_id() << ": generation cache: " << cc.hits.load() << " hit(s), "
                      << cc.inserts.load() << " answer(s) stored in " << ctx_->config.execution.cache_dir);
  }
  return Status::OK();
}

Status LoadCacheHits(BatchShardContext* ctx) {
  for (const auto& [stage, file] : ctx->journal->cached_stages()) {
    std::string path = JoinPath(ctx->journal->dir(), file);
    MMIRAGE_ASSIGN_OR_RETURN(auto reader, LineReader::Open(ctx->env, path));
    std::string_view line;
    int64_t line_no = 0;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
      if (!more) break;
      ++line_no;
      auto v = ParseJson(line);
      const Value* id = v.ok() ? v->Find("custom_id") : nullptr;
      if (const Value* same = v.ok() ? v->Find("same_as") : nullptr) {
        if (!id || !id->is_string() || !same->is_string())
          return Status::Corruption(path + ":" + std::to_string(line_no) + ": not a generation-cache hit");
        ctx->cached_ids.insert(id->as_string());
        ctx->aliases[id->as_string()] = same->as_string();
        continue;
      }
      const Value* text = v.ok() ? v->Find("text") : nullptr;
      const Value* in = v.ok() ? v->Find("input_tokens") : nullptr;
      const Value* out = v.ok() ? v->Find("output_tokens") : nullptr;
      if (!id || !id->is_string() || !text || !text->is_string() || !in || !in->is_int() || !out || !out->is_int())
        return Status::Corruption(path + ":" + std::to_string(line_no) + ": not a generation-cache hit");
      batch::BatchAnswer a;
      a.custom_id = id->as_string();
      a.ok = true;
      a.text = text->as_string();
      a.input_tokens = in->as_int();
      a.output_tokens = out->as_int();
      ctx->cached_ids.insert(a.custom_id);
      ctx->answers[a.custom_id] = std::move(a);
    }
  }
  return Status::OK();
}

}  // namespace mmirage::batch

// SubmitStage in detail: rows are walked in batches of `batch_size`, each output of the stage over the batch, text
// rows then multimodal rows (MMIRAGE's flush cadence, so chunks match its boundaries). Each chunk's requests are
// written to the journal's directory and the chunk journaled *before* it is sent; then it is submitted, journaled
// as submitted, and its receipt appended (MMIRAGE's format) to `metadata_output_path`. At the end the stage is
// sealed. A chunk the journal already holds is not sent again: it must be byte-identical (else an error: the data
// or config changed), and a chunk journaled but not known as submitted is looked up at the provider first (OpenAI
// metadata key) and only then submitted.

#include "batch/submit.h"

#include <algorithm>

#include "data/json.h"
#include "batch/collect.h"
#include "batch/request.h"
#include "util/log.h"
#include "util/sha.h"

namespace mmirage::batch {
namespace {

constexpr double kRecoveryGraceSeconds = 5;

}  // namespace

Status BatchSubmitter::Export() {
  const std::string& p = ctx_->options.export_prompts;
  if (StripSpace(p).empty())
    return Status::InvalidArgument("export_prompts_dir is set but empty; give it a path or leave it unset");
  ctx_->export_path = p.size() >= 6 && p.compare(p.size() - 6, 6, ".jsonl") == 0
                          ? p.substr(0, p.size() - 6) + "." + ctx_->run_id + ".jsonl"
                          : JoinPath(p, "exported_prompts." + ctx_->run_id + ".jsonl");
  size_t slash = ctx_->export_path.rfind('/');
  Status s = slash == std::string::npos ? Status::OK() : ctx_->env->CreateDirs(ctx_->export_path.substr(0, slash));
  if (s.ok()) {
    auto f = ctx_->env->NewWritableFile(ctx_->export_path, /*append=*/true);
    s = f.ok() ? (*f)->Close() : f.status();
  }
  if (!s.ok()) return Status::IOError("Cannot write exported prompts to " + ctx_->export_path + ": " + s.message());
  return SubmitStage(0);
}

Status BatchSubmitter::Emit(batch::RequestChunk chunk, const std::string& modality, int64_t stage,
                            const std::string& reason, Value snapshot) {
  int64_t n = ++chunk_counter_[modality];
  JournalChunk c;
  c.chunk_id = "chunk-" + Pad6(n);
  c.name = modality + "-" + c.chunk_id;
  c.modality = modality;
  c.stage = stage;
  c.bytes = chunk.total_bytes;
  c.oversized = chunk.has_oversized_request;
  c.flush_reason = reason;
  c.snapshot = std::move(snapshot);
  // request_hash: the requests serialised with sorted keys.
  Value list = Value::EmptyArray();
  std::string lines;
  std::vector<int64_t> sources;
  for (const auto& r : chunk.requests) {
    auto v = ParseJson(r.line);
    if (!v.ok()) return Status::Internal("request line does not parse back");
    list.Push(std::move(*v));
    if (!lines.empty()) lines.push_back('\n');
    lines += r.line;
    sources.push_back(static_cast<int64_t>(pending_[r.custom_id].row));
  }
  c.hash = Sha256Hex(batch::PyJson(list, /*compact=*/true, /*sort_keys=*/true));
  if (!ctx_->export_path.empty()) {
    std::string out;
    for (const Value& req : list.as_array()) {
      Value row = Value::EmptyObject();
      row.Set("batch_id", c.name);
      row.Set("request", req);
      out += batch::PyJson(row, /*compact=*/false) + "\n";
    }
    MMIRAGE_ASSIGN_OR_RETURN(auto f, ctx_->env->NewWritableFile(ctx_->export_path, /*append=*/true));
    MMIRAGE_TRY(f->Append(out));
    MMIRAGE_TRY(f->Close());
    c.batch_id = "dry-run-" + c.name;
    c.submit_status = "dry_run";
    c.submitted_at = UtcIsoNow(ctx_->env);
    for (const auto& r : chunk.requests) {
      c.requests.push_back(JournalRequest{r.custom_id, 0, 0, 0, 0});
      pending_.erase(r.custom_id);
    }
    return WriteReceipt(&c, sources);
  }
  for (const auto& r : chunk.requests) {
    c.requests.push_back(pending_[r.custom_id]);
    pending_.erase(r.custom_id);
  }
  if (JournalChunk* prev = ctx_->journal->Find(c.name)) {
    if (prev->hash != c.hash) {
      return Status::InvalidArgument("chunk " + c.name + " differs from the one journaled in " + ctx_->journal->dir() +
                                     ": the data or the config changed since the shard's batches were submitted");
    }
    if (!prev->batch_id) MMIRAGE_TRY(SubmitJournaled(prev, /*recovering=*/true));
    if (!prev->receipt) MMIRAGE_TRY(WriteReceipt(prev, sources));
    return Status::OK();
  }
  c.file = c.name + ".requests.jsonl";
  c.key = ctx_->journal->journal_id() + "-s" + std::to_string(ctx_->shard_id()) + "-" + c.name;
  MMIRAGE_TRY(WriteFileAtomically(ctx_->env, JoinPath(ctx_->journal->dir(), c.file), lines));
  MMIRAGE_TRY(ctx_->journal->Append(c.ToEvent()));
  JournalChunk* jc = ctx_->journal->Find(c.name);
  MMIRAGE_TRY(SubmitJournaled(jc, /*recovering=*/false));
  return WriteReceipt(jc, sources);
}

Status BatchSubmitter::SubmitJournaled(JournalChunk* c, bool recovering) {
  std::string path = JoinPath(ctx_->journal->dir(), c->file);
  std::optional<std::string> found;
  if (recovering) {
    MMIRAGE_ASSIGN_OR_RETURN(found, ctx_->provider->FindSubmitted(c->key));
    if (!found && ctx_->provider->provider() == "openai") {
      // The earlier run may have died with its create request still in flight at the provider: give that
      // request time to land before looking again (a create takes well under a second).
      LOG_INFO("shard " << ctx_->shard_id() << ": " << c->name
                        << " was journaled but not recorded as submitted; "
                           "looking it up again in "
                        << kRecoveryGraceSeconds << " s");
      ctx_->env->SleepMicros(static_cast<uint64_t>(kRecoveryGraceSeconds * 1e6));
      MMIRAGE_ASSIGN_OR_RETURN(found, ctx_->provider->FindSubmitted(c->key));
    }
    if (!found && ctx_->provider->provider() == "anthropic") {
      LOG_WARN(
          "shard " << ctx_->shard_id() << ": " << c->name
                   << " was journaled but its submission is not recorded; "
                      "Anthropic keeps no metadata to look it up, so it is submitted again (it may be billed twice)");
    }
  }
  batch::SubmitResult r;
  if (found) {
    LOG_INFO("shard " << ctx_->shard_id() << ": " << c->name << " was already submitted as " << *found);
    r.batch_id = *found;
    r.status = "in_progress";
  } else {
    auto s = ctx_->provider->Submit(path, c->chunk_id, c->key);
    if (!s.ok()) return s.status().WithContext("shard " + std::to_string(ctx_->shard_id()) + ", " + c->name);
    r = *s;
  }
  Value e = Value::EmptyObject();
  e.Set("event", "submitted");
  e.Set("name", c->name);
  e.Set("batch_id", r.batch_id);
  e.Set("status", r.status);
  e.Set("at", UtcIsoNow(ctx_->env));
  MMIRAGE_TRY(ctx_->journal->Append(e));
  LOG_INFO("shard " << ctx_->shard_id() << ": submitted " << c->name << " (" << c->requests.size() << " requests, "
                    << c->bytes << " bytes) as " << r.batch_id);
  return Status::OK();
}

Status BatchSubmitter::WriteReceipt(JournalChunk* c, const std::vector<int64_t>& sources) {
  const auto& bp = ctx_->batch_api();
  if (bp.metadata_output_path.empty()) return Status::OK();
  std::string base = bp.metadata_output_path;
  if (base.size() >= 6 && base.compare(base.size() - 6, 6, ".jsonl") == 0) base.resize(base.size() - 6);
  std::string path =
      base + (ctx_->export_path.empty() ? "" : ".dry-run") + "." + c->modality + "." + ctx_->run_id + ".jsonl";
  Value map = Value::EmptyObject();
  for (size_t i = 0; i < c->requests.size(); ++i) {
    int64_t src = i < sources.size() ? sources[i] : static_cast<int64_t>(c->requests[i].row);
    map.Set(c->requests[i].custom_id, src);
  }
  Value r = Value::EmptyObject();
  r.Set("provider", bp.provider);
  r.Set("chunk_id", c->chunk_id);
  r.Set("provider_batch_id", c->batch_id.value_or(""));
  r.Set("status", c->submit_status);
  r.Set("custom_id_to_source_index", map);
  r.Set("request_hash", c->hash);
  r.Set("model_params_snapshot", c->snapshot);
  r.Set("submitted_request_count", static_cast<int64_t>(c->requests.size()));
  r.Set("total_bytes", c->bytes);
  r.Set("has_oversized_request", c->oversized);
  r.Set("flush_reason", c->flush_reason);
  r.Set("submitted_at_utc", c->submitted_at);
  if (ctx_->export_path.empty()) r.Set("shard_id", ctx_->shard_id());  // extension: which shard's journal holds it
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) MMIRAGE_TRY(ctx_->env->CreateDirs(path.substr(0, slash)));
  MMIRAGE_ASSIGN_OR_RETURN(auto f, ctx_->env->NewWritableFile(path, /*append=*/true));
  MMIRAGE_TRY(f->Append(batch::PyJson(r, /*compact=*/false) + "\n"));
  MMIRAGE_TRY(f->Sync());
  MMIRAGE_TRY(f->Close());
  if (!ctx_->export_path.empty()) return Status::OK();
  Value e = Value::EmptyObject();
  e.Set("event", "receipt");
  e.Set("name", c->name);
  return ctx_->journal->Append(e);
}

Status ForEachStageRequest(BatchShardContext* ctx, int64_t stage, const StageVisitor& v) {
  const auto& bp = ctx->batch_api();
  const auto& outs = ctx->config.processing.outputs;
  const int64_t batch_size = std::max<int64_t>(1, ctx->config.loading.batch_size);
  // Rows are handled in batches of batch_size, each output over the batch, text rows then multimodal rows: the
  // original's flush cadence, so that chunk boundaries and the export's order are the same.
  std::vector<RowCtx> batch;
  auto run_batch = [&]() -> Status {
    // Answers of earlier stages first.
    for (auto& c : batch) {
      if (!c.ok) continue;
      pipeline::RowError err;
      if (!ApplyAnswers(*ctx, c, stage, &err)) c.ok = false;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (ctx->stages[i] != stage) continue;
      const auto& o = outs[i];
      for (const char* modality : {"text", "multimodal"}) {
        bool added = false;
        for (auto& c : batch) {
          if (!c.ok) continue;
          bool has_images = HasImages(ctx->config, c);
          if ((std::string(modality) == "multimodal") != has_images) continue;
          std::vector<std::string> images = RowImages(ctx->config, c);
          auto prompt = o.prompt_tmpl->Render(c.vars);
          if (!prompt.ok()) continue;  // a row error at publication
          batch::BatchPrompt bp_in;
          bp_in.custom_id = CustomId(o, modality, ctx->shard_id(), c);
          bp_in.prompt = std::move(*prompt);
          bp_in.images = std::move(images);
          if (o.json)
            for (const auto& f : o.schema) bp_in.expected_schema.push_back(f.name);
          auto req = batch::BuildBatchRequest(bp, ctx->env, bp_in);
          if (!req.ok()) return req.status().WithContext(c.source + ": output '" + o.name + "'");
          StageRequest sr{&c, i, modality, std::move(*req), "", ""};
          sr.line = batch::PyJson(sr.request, /*compact=*/true);
          sr.custom_id = sr.request.Find("custom_id")->as_string();
          Status s = v.request(sr);
          if (!s.ok()) return s.WithContext(c.source + ": output '" + o.name + "'");
          added = true;
        }
        if (added && v.group_end) MMIRAGE_TRY(v.group_end(i, modality));
      }
    }
    batch.clear();
    return Status::OK();
  };
  // Each dataset is mapped on its own and finalized (both accumulators flushed) after it, as MMIRAGE does, so
  // chunk boundaries match its.
  auto finalize = [&](size_t) -> Status {
    if (!batch.empty()) MMIRAGE_TRY(run_batch());
    return v.dataset_end ? v.dataset_end() : Status::OK();
  };
  return ForEachShardRow(
      ctx->env, ctx->config, ctx->shard_id(),
      [&](RowCtx& c, const pipeline::RowTransform&) -> Status {
        if (!batch.empty() && batch.back().part != c.part) MMIRAGE_TRY(run_batch());
        batch.push_back(std::move(c));
        if (static_cast<int64_t>(batch.size()) >= batch_size) return run_batch();
        return Status::OK();
      },
      nullptr, finalize);
}

Status BatchSubmitter::SubmitStage(int64_t stage) {
  const auto& bp = ctx_->batch_api();
  batch::ChunkLimits limits{bp.max_chunk_bytes, bp.max_requests_per_chunk, bp.oversized_request_policy == "reject"};
  std::map<std::string, batch::BatchAccumulator> acc;
  acc.emplace("text", batch::BatchAccumulator(limits));
  acc.emplace("multimodal", batch::BatchAccumulator(limits));
  chunk_counter_.clear();
  if (ctx_->journal) {
    for (const auto& c : ctx_->journal->chunks())
      if (c.stage < stage) ++chunk_counter_[c.modality];
  }
  const auto& outs = ctx_->config.processing.outputs;
  StageVisitor v;
  v.request = [&](StageRequest& r) -> Status {
    if (ctx_->cached_ids.count(r.custom_id)) return Status::OK();  // answered by the generation cache
    batch::PendingRequest pr;
    pr.line = std::move(r.line);
    pr.custom_id = r.custom_id;
    pending_[r.custom_id] =
        JournalRequest{r.custom_id, static_cast<int64_t>(r.row->dataset), static_cast<int64_t>(r.row->part),
                       static_cast<int64_t>(r.output), r.row->index};
    return acc.at(r.modality).Add(std::move(pr));
  };
  v.group_end = [&](size_t output, const std::string& modality) -> Status {
    Value snap = Value::EmptyObject();
    snap.Set("output_name", outs[output].name);
    snap.Set("output_type", outs[output].output_type);
    snap.Set("modality", modality);
    for (auto& ch : acc.at(modality).TakeReady()) MMIRAGE_TRY(Emit(std::move(ch), modality, stage, "full_chunk", snap));
    return Status::OK();
  };
  v.dataset_end = [&]() -> Status {
    for (const char* modality : {"text", "multimodal"}) {
      Value snap = Value::EmptyObject();
      snap.Set("modality", modality);
      snap.Set("phase", "finalize");
      for (auto& ch : acc.at(modality).TakeAll()) MMIRAGE_TRY(Emit(std::move(ch), modality, stage, "finalize", snap));
    }
    return Status::OK();
  };
  MMIRAGE_TRY(ForEachStageRequest(ctx_, stage, v));
  if (!ctx_->export_path.empty()) return Status::OK();
  Value e = Value::EmptyObject();
  e.Set("event", "sealed");
  e.Set("stage", stage);
  return ctx_->journal->Append(e);
}

Result<bool> BatchSubmitter::ResubmitFailed() {
  // Requests whose latest answer is a provider failure (or that have none in an ended batch).
  std::vector<std::pair<const JournalChunk*, JournalRequest>> failed;
  std::unordered_map<std::string, bool> seen;
  for (auto it = ctx_->journal->chunks().rbegin(); it != ctx_->journal->chunks().rend(); ++it) {
    for (const auto& r : it->requests) {
      if (seen.count(r.custom_id)) continue;
      seen[r.custom_id] = true;
      auto a = ctx_->answers.find(r.custom_id);
      bool bad = a == ctx_->answers.end() ? ctx_->ended.count(r.custom_id) > 0 : !a->second.ok;
      if (bad) failed.push_back({&*it, r});
    }
  }
  if (failed.empty()) return false;
  const auto& bp = ctx_->batch_api();
  batch::ChunkLimits limits{bp.max_chunk_bytes, bp.max_requests_per_chunk, false};
  std::map<std::string, batch::BatchAccumulator> acc;
  acc.emplace("text", batch::BatchAccumulator(limits));
  acc.emplace("multimodal", batch::BatchAccumulator(limits));
  std::map<std::string, std::string> lines;  // file → content cache
  for (const auto& [c, r] : failed) {
    std::string& content = lines[c->file];
    if (content.empty()) {
      MMIRAGE_ASSIGN_OR_RETURN(content, ctx_->env->ReadFileToString(JoinPath(ctx_->journal->dir(), c->file)));
    }
    size_t i = 0;
    for (; i < c->requests.size(); ++i)
      if (c->requests[i].custom_id == r.custom_id) break;
    size_t pos = 0;
    for (size_t k = 0; k < i; ++k) pos = content.find('\n', pos) + 1;
    size_t end = content.find('\n', pos);
    batch::PendingRequest pr;
    pr.line = content.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pr.custom_id = r.custom_id;
    pending_[r.custom_id] = r;
    MMIRAGE_TRY(acc.at(c->modality).Add(std::move(pr)));
  }
  chunk_counter_.clear();
  for (const auto& c : ctx_->journal->chunks()) ++chunk_counter_[c.modality];
  int64_t stage = ctx_->num_stages();  // after every stage: the chunk names continue
  for (const char* modality : {"text", "multimodal"}) {
    Value snap = Value::EmptyObject();
    snap.Set("modality", modality);
    snap.Set("phase", "resubmit_failed");
    for (auto& ch : acc.at(modality).TakeAll())
      MMIRAGE_TRY(Emit(std::move(ch), modality, stage, "resubmit_failed", snap));
  }
  LOG_INFO("shard " << ctx_->shard_id() << ": resubmitted " << failed.size() << " failed request(s)");
  return true;
}

}  // namespace mmirage::batch

#include "batch/collect.h"

#include <algorithm>

#include "data/dataset.h"
#include "data/json.h"
#include "data/line_reader.h"
#include "batch/cache.h"
#include "batch/request.h"
#include "process/llm/json_output.h"
#include "util/log.h"

namespace mmirage::batch {

Result<Value> AnswerValue(const config::OutputVar& o, const batch::BatchAnswer& a) {
  if (!a.ok) return Status::Unavailable("provider error: " + a.error);
  std::string text = StripSpace(a.text);
  if (!o.json || o.schema.empty()) {
    if (o.json) {  // JSON without a schema: any JSON object
      auto v = ParseJson(text);
      if (!v.ok() || !v->is_object())
        return Status::InvalidArgument("output is not a JSON object: " + text.substr(0, 200));
      return *v;
    }
    return Value(text);
  }
  return process::llm::CheckJsonOutput(text, o.schema);
}

bool ApplyAnswers(const BatchShardContext& ctx, RowCtx& c, int64_t stage, pipeline::RowError* err, AnswerTally* tally,
                  int64_t* missing) {
  const auto& outs = ctx.config.processing.outputs;
  const char* modality = HasImages(ctx.config, c) ? "multimodal" : "text";
  bool ok = true;  // every output's tokens are counted, also after a failed one (they were billed)
  for (size_t i = 0; i < outs.size(); ++i) {
    if (ctx.stages[i] >= stage) continue;
    std::string id = SentCustomId(ctx.batch_api().provider, CustomId(outs[i], modality, ctx.shard_id(), c));
    auto it = ctx.answers.find(id);
    if (it == ctx.answers.end()) {
      auto e = ctx.ended.find(id);
      if (ok) {
        *err = pipeline::RowError{
            pipeline::Stage::kGenerate,
            "output '" + outs[i].name + "': " + (e != ctx.ended.end() ? e->second : "no result from the provider")};
        if (missing && e == ctx.ended.end()) *missing = static_cast<int64_t>(i);
      }
      ok = false;
      continue;
    }
    if (tally != nullptr) {
      int64_t in = it->second.input_tokens.value_or(0), out = it->second.output_tokens.value_or(0);
      tally->prompt_tokens += in;
      tally->completion_tokens += out;
      ++tally->generations;
      if (ctx.cached_ids.count(id)) {
        ++tally->cached_generations;
        tally->cached_prompt_tokens += in;
        tally->cached_completion_tokens += out;
      }
    }
    if (!ok) continue;
    auto v = AnswerValue(outs[i], it->second);
    if (!v.ok()) {
      *err = pipeline::RowError{pipeline::Stage::kGenerate, "output '" + outs[i].name + "': " + v.status().message()};
      ok = false;
      continue;
    }
    c.vars.Set(outs[i].name, std::move(*v));
  }
  return ok;
}

Result<bool> PollBatches(BatchShardContext* ctx, BatchShardReport* report) {
  report->batches_total = report->batches_done = report->batches_failed = 0;
  report->requests_total = report->requests_done = 0;
  bool all_done = true;
  MMIRAGE_TRY(ctx->env->CreateDirs(JoinPath(ctx->journal->dir(), "results")));
  for (auto& c : ctx->journal->chunks()) {
    if (!c.batch_id) continue;
    ++report->batches_total;
    int64_t n = static_cast<int64_t>(c.requests.size());
    report->requests_total += n;
    if (ctx->env->FileExists(ctx->ResultsPath(c))) {
      ++report->batches_done;
      if (c.ended) ++report->batches_failed;
      report->requests_done += n;
      continue;
    }
    MMIRAGE_ASSIGN_OR_RETURN(batch::BatchStatus st, ctx->provider->GetStatus(*c.batch_id));
    if (st.status == "completed" || st.status == "failed") {
      if (st.status == "failed") {
        LOG_WARN("shard " << ctx->shard_id() << ": batch " << *c.batch_id << " (" << c.name << ") ended with status '"
                          << st.raw_status << "'; its requests without a result become row errors");
        Value e = Value::EmptyObject();
        e.Set("event", "ended");
        e.Set("name", c.name);
        e.Set("status", st.raw_status);
        MMIRAGE_TRY(ctx->journal->Append(e));
        ++report->batches_failed;
      }
      if (st.status == "failed" && st.output_file_id.empty() && st.error_file_id.empty()) {
        MMIRAGE_TRY(WriteFileAtomically(ctx->env, ctx->ResultsPath(c), ""));
      } else {
        MMIRAGE_TRY(ctx->provider->DownloadResults(*c.batch_id, st, ctx->ResultsPath(c)));
      }
      ++report->batches_done;
      report->requests_done += n;
      continue;
    }
    all_done = false;
    report->requests_done += std::min(n, st.requests_done);
  }
  return all_done;
}

Status LoadAnswers(BatchShardContext* ctx) {
  ctx->answers.clear();
  ctx->ended.clear();
  ctx->cached_ids.clear();
  ctx->aliases.clear();
  MMIRAGE_TRY(LoadCacheHits(ctx));
  for (const auto& c : ctx->journal->chunks()) {  // journal order: a resubmitted request's later answer wins
    if (!c.batch_id || !ctx->env->FileExists(ctx->ResultsPath(c))) continue;
    std::unordered_map<std::string, bool> in_chunk;
    for (const auto& r : c.requests) in_chunk[r.custom_id] = true;
    MMIRAGE_ASSIGN_OR_RETURN(auto reader, LineReader::Open(ctx->env, ctx->ResultsPath(c)));
    std::string_view line;
    int64_t line_no = 0;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
      if (!more) break;
      ++line_no;
      if (IsBlankLine(line)) continue;
      auto a = batch::ParseBatchAnswer(ctx->batch_api().provider, line);
      if (!a.ok()) {
        LOG_WARN(ctx->ResultsPath(c) << ":" << line_no << ": " << a.status().message() << "; skipped");
        continue;
      }
      if (!in_chunk.count(a->custom_id)) continue;
      ctx->answers[a->custom_id] = std::move(*a);
    }
    if (c.ended) {
      for (const auto& r : c.requests)
        if (!ctx->answers.count(r.custom_id))
          ctx->ended[r.custom_id] = "batch " + *c.batch_id + " ended with status '" + *c.ended + "' without a result";
    }
  }
  for (const auto& [id, first] : ctx->aliases) {  // identical requests share the answer of the one submitted
    if (auto a = ctx->answers.find(first); a != ctx->answers.end()) {
      batch::BatchAnswer copy = a->second;
      copy.custom_id = id;
      ctx->answers[id] = std::move(copy);
    } else if (auto e = ctx->ended.find(first); e != ctx->ended.end()) {
      ctx->ended[id] = e->second;
    }
  }
  return Status::OK();
}

Value BatchInfo(const BatchShardContext& ctx, const BatchShardReport& r) {
  Value v = Value::EmptyObject();
  v.Set("provider", ctx.batch_api().provider);
  v.Set("batches_total", r.batches_total);
  v.Set("batches_completed", r.batches_done - r.batches_failed);
  v.Set("batches_failed", r.batches_failed);
  v.Set("batches_in_progress", r.batches_total - r.batches_done);
  v.Set("requests_total", r.requests_total);
  v.Set("requests_done", r.requests_done);
  v.Set("journal", ctx.journal ? JoinPath(ctx.journal->dir(), "journal.jsonl") : "");
  return v;
}

}  // namespace mmirage::batch

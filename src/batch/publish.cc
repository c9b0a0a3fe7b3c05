#include "batch/publish.h"

#include "batch/collect.h"
#include "pipeline/input_identity.h"
#include "pipeline/row_batches.h"
#include "pipeline/shard_writer.h"
#include "stats/shard_stats.h"

namespace mmirage::batch {

Status PublishShard(BatchShardContext* ctx, BatchShardReport* report) {
  const auto& ex = ctx->config.execution;
  std::unique_ptr<pipeline::ShardWriter> writer;
  AnswerTally total;
  int64_t final_stage = ctx->num_stages();
  std::string usage;
  std::vector<std::string> error_files;
  auto begin = [&](size_t d, const ShardPlan& plan) -> Status {
    std::vector<std::string> splits;
    for (const auto& part : plan.parts) splits.push_back(part.split);
    const Value& identity = ctx->identity.as_array()[d];  // as the local runner publishes it (input_identity.h)
    pipeline::ShardWriterOptions wo{ctx->config.loading.datasets[d].output_dir, ctx->shard_id(), splits,
                                    pipeline::IdentityFingerprint(identity)};
    wo.identity = identity;
    wo.output_format = *ParseOutputFormat(ctx->config.loading.datasets[d].output_format);  // validated at load
    MMIRAGE_ASSIGN_OR_RETURN(writer, pipeline::ShardWriter::Open(ctx->env, wo));
    if (writer->resumed()) {  // publishing is cheap to redo from the answers: start over
      writer->Discard();
      MMIRAGE_ASSIGN_OR_RETURN(writer, pipeline::ShardWriter::Open(ctx->env, wo));
    }
    return Status::OK();
  };
  auto end = [&](size_t) -> Status {
    MMIRAGE_TRY(writer->AddUsage(usage));
    usage.clear();
    report->rows_written += writer->rows_written();
    report->rows_failed += writer->rows_failed();
    if (writer->rows_failed() > 0) error_files.push_back(JoinPath(writer->final_dir(), "errors.jsonl"));
    Status s = writer->Finish();
    writer.reset();
    return s;
  };
  std::string line;
  MMIRAGE_TRY(ForEachShardRow(
      ctx->env, ctx->config, ctx->shard_id(),
      [&](RowCtx& c, const pipeline::RowTransform& t) -> Status {
        writer->Advance(c.part, 1);
        if (!c.ok) return writer->AddError(c.part, c.index, c.source, c.error);
        pipeline::RowError err;
        AnswerTally t1;
        int64_t missing = -1;
        bool ok = ApplyAnswers(*ctx, c, final_stage, &err, &t1, &missing);
        if (t1.generations > 0) {
          total.prompt_tokens += t1.prompt_tokens;
          total.completion_tokens += t1.completion_tokens;
          total.generations += t1.generations;
          total.cached_generations += t1.cached_generations;
          total.cached_prompt_tokens += t1.cached_prompt_tokens;
          total.cached_completion_tokens += t1.cached_completion_tokens;
          usage += pipeline::UsageLine(c.index,
                                       {t1.prompt_tokens, t1.completion_tokens, t1.generations, t1.cached_generations});
        }
        if (!ok) {
          // A prompt that fails to render was never submitted: say so, not "no result".
          if (missing >= 0) {
            auto p = t.RenderPrompt(static_cast<size_t>(missing), c.vars);
            if (!p.ok) err = p.error;
          }
          return writer->AddError(c.part, c.index, c.source, err);
        }
        line.clear();
        auto r = t.RenderOutputJson(c.row, c.vars, &line);
        if (!r.ok) return writer->AddError(c.part, c.index, c.source, r.error);
        line.push_back('\n');
        return writer->AddSerialized(c.part, line, 1);
      },
      begin, end));
  // Submitted (billed) tokens only: what the generation cache answered cost nothing (counted apart).
  int64_t in_total = total.prompt_tokens - total.cached_prompt_tokens;
  int64_t out_total = total.completion_tokens - total.cached_completion_tokens;
  ShardStats stats;
  stats.rows_processed = report->rows_written;
  if (in_total > 0) stats.input_tokens = in_total;
  if (out_total > 0) stats.output_tokens = out_total;
  if (total.cached_generations > 0 || ctx->cache_active) {
    stats.cached_generations = total.cached_generations;
    stats.cached_output_tokens = total.cached_completion_tokens;
  }
  report->requests_cached = total.cached_generations;
  stats.num_gpus = 0;
  stats.runtime_seconds = RoundTo(static_cast<double>(ctx->env->MonotonicMicros() - ctx->start_us) / 1e6, 3);
  const auto& bp = ctx->batch_api();
  if (bp.price_per_million_input_tokens || bp.price_per_million_output_tokens) {
    stats.cost = RoundTo(static_cast<double>(in_total) / 1e6 * bp.price_per_million_input_tokens.value_or(0) +
                             static_cast<double>(out_total) / 1e6 * bp.price_per_million_output_tokens.value_or(0),
                         6);
  }
  Value sv = stats.ToValue();
  if (report->rows_failed > ex.max_failed_rows) {
    std::string where;
    for (const auto& f : error_files) where += (where.empty() ? "" : ", ") + f;
    return Status::InvalidArgument(std::to_string(report->rows_failed) + " row(s) failed (max_failed_rows=" +
                                   std::to_string(ex.max_failed_rows) + "); see " + where);
  }
  return ctx->state.MarkSuccess(sv, report->rows_failed);
}

}  // namespace mmirage::batch

// The lifecycle of a batch_api shard (see batch/shard.h): which step runs next, from the journal and the shard's
// state. The steps themselves: batch/submit.h, batch/collect.h, batch/publish.h.
//   submit   every row of the shard is rendered into provider requests (batch/request.h), chunked by
//            bytes and count, each chunk written to the state directory and journaled (batch/journal.h)
//            *before* it is sent, then submitted, journaled again and a receipt appended in MMIRAGE's receipt
//            format. The shard then stands as `submitted` in status.json.
//   collect  finished batches are downloaded (OpenAI output and error files, Anthropic results); while some is
//            in progress the shard stays submitted. When all are done each answer goes into its row (JSON outputs
//            parsed and checked like `llm`), outputs that read a batch output are submitted as the next stage,
//            and at the end output_schema is rendered with the real values and the shard published as a normal
//            dataset; provider failures and unparsable answers are row errors (errors.jsonl).
//   export   (--export-prompts) the requests are written in MMIRAGE's export format; nothing is sent and
//            no state is changed.
//   cache    with a deterministic processor (temperature 0, or an OpenAI seed) and `cache` not off, the requests
//            the generation cache answers are decided before each stage's first chunk and never submitted; the
//            answers collected are stored in it (batch/cache.h). When every request hits, `run`
//            publishes the shard at once.
// A crash anywhere loses nothing: a re-run re-renders the rows deterministically, skips the chunks the journal
// holds, resolves a chunk journaled but not known to be submitted (OpenAI: looked up by its metadata key) and
// never submits a chunk twice.
#include "batch/shard.h"

#include <algorithm>

#include "batch/cache.h"
#include "batch/collect.h"
#include "batch/context.h"
#include "batch/journal.h"
#include "batch/publish.h"
#include "batch/submit.h"
#include "pipeline/input_identity.h"
#include "state/shard_state.h"
#include "util/log.h"
#include "util/signals.h"

namespace mmirage::batch {
namespace {

Status Validate(const BatchShardContext& ctx) {
  if (ctx.proc == nullptr) return Status::InvalidArgument("batch_api processor requires a provider configuration");
  for (const auto& out : ctx.config.processing.outputs) {
    if (out.type != "batch_api") {
      return Status::InvalidArgument(out.loc.ToString() + ": output '" + out.name + "' is of type '" + out.type +
                                     "': a config with batch_api outputs can only have batch_api outputs in this "
                                     "build");
    }
  }
  return Status::OK();
}

// What differs between the identity the journal's requests were made from and this run's, for an error message.
std::string DescribeChange(const BatchJournal& journal, const BatchShardContext& ctx) {
  const Value& before = journal.identity();
  if (!before.is_array() || before.as_array().size() != ctx.identity.as_array().size()) return "config changed";
  std::string out;
  for (size_t d = 0; d < before.as_array().size(); ++d) {
    const Value& b = before.as_array()[d];
    const Value& n = ctx.identity.as_array()[d];
    if (pipeline::IdentityFingerprint(b) == pipeline::IdentityFingerprint(n)) continue;
    out += (out.empty() ? "" : "; ") + pipeline::DescribeIdentityChange(b, n);
  }
  return out.empty() ? "config changed" : out;
}

// A journal written before identities were recorded holds the YAML text's hash: still resumed when that matches.
bool SameIdentity(const BatchJournal& journal, const BatchShardContext& ctx) {
  if (journal.identity().is_null()) return *journal.fingerprint() == ctx.config.fingerprint;
  return *journal.fingerprint() == ctx.fingerprint;
}

}  // namespace

Result<BatchShardReport> RunShard(BatchShardContext* ctx) {
  BatchShardReport report;
  BatchSubmitter submitter(ctx);
  ctx->start_us = ctx->env->MonotonicMicros();
  MMIRAGE_TRY(Validate(*ctx));
  ctx->identity = Value::EmptyArray();
  for (size_t d = 0; d < ctx->config.loading.datasets.size(); ++d) {
    ctx->identity.Push(pipeline::DatasetIdentity(ctx->env, ctx->config, d, ctx->shard_id()));
  }
  ctx->fingerprint = pipeline::IdentityFingerprint(ctx->identity);
  if (!ctx->options.export_prompts.empty()) {
    if (ctx->num_stages() > 1) {
      LOG_WARN("--export-prompts: outputs whose prompt reads another batch output are not exported (their "
               "requests need that output's answers)");
    }
    MMIRAGE_TRY(submitter.Export());
    report.outcome = BatchOutcome::kExported;
    report.export_path = ctx->export_path;
    return report;
  }
  config::VarLookup lookup = ctx->options.vars ? ctx->options.vars : config::ProcessVarLookup();
  MMIRAGE_ASSIGN_OR_RETURN(ctx->provider, batch::BatchProvider::Create(ctx->batch_api(), lookup, ctx->env,
                                                                     ctx->options.retry_base_seconds));
  MMIRAGE_ASSIGN_OR_RETURN(ctx->journal, BatchJournal::Open(ctx->env, JoinPath(ctx->state.dir(), "batch")));
  bool fresh = !ctx->journal->fingerprint().has_value();
  // Submitted requests are paid for: a change of config or input data is refused (never silently mixed, never
  // silently thrown away), saying what changed and how to go on.
  if (!fresh && !SameIdentity(*ctx->journal, *ctx)) {
    const std::string what = DescribeChange(*ctx->journal, *ctx);
    if (ctx->state.Read().status == ShardStatus::kSuccess) {
      return Status::InvalidArgument(
          "shard " + std::to_string(ctx->shard_id()) + " was published from another version of the config or its "
          "input data (" + what + "; journal " + ctx->journal->dir() + "/journal.jsonl); run the edited config with "
          "another state_dir (with temperature 0 or a seed, the generation cache answers every request that did not "
          "change), or remove that directory");
    }
    return Status::InvalidArgument("the config or its input data changed since shard " +
                                   std::to_string(ctx->shard_id()) + "'s batches were submitted (" + what +
                                   "; journal " + ctx->journal->dir() + "/journal.jsonl); restore them (and "
                                   "collect), or remove that directory to start over");
  }
  auto fail = [&](const Status& s) -> Status {
    Status m = ctx->state.MarkFailed(s.message(), report.rows_failed);
    if (!m.ok()) LOG_ERROR("cannot record the failure in the state directory: " << m.message());
    return s;
  };
  bool wait = ctx->options.wait.value_or(ctx->batch_api().wait);
  if (!fresh && !ctx->options.resubmit_failed && ctx->state.Read().status == ShardStatus::kSuccess &&
      ctx->journal->sealed(ctx->num_stages() - 1)) {
    LOG_INFO("shard " << ctx->shard_id() << ": already complete; kept");
    report.outcome = BatchOutcome::kComplete;
    return report;
  }
  const int64_t stages = ctx->num_stages();
  std::unique_ptr<BatchCache> cache = BatchCache::Open(ctx);  // closed (sealed) on every way out
  auto store = [&]() {
    if (!cache) return;
    Status s = cache->StoreAnswers();
    if (!s.ok()) {
      LOG_WARN("shard " << ctx->shard_id() << ": answers not stored in the generation cache: " << s.message());
    }
  };
  if (fresh) {
    if (ctx->options.collect_only) {
      return Status::InvalidArgument("shard " + std::to_string(ctx->shard_id()) +
                                     " has no submitted batches; run `mmirage run` first");
    }
    ShardState::RunInfo info;
    Value ds = Value::EmptyArray();
    for (const auto& d : ctx->config.loading.datasets) {
      Value x = Value::EmptyObject();
      x.Set("image_base_path", d.image_base_path ? Value(*d.image_base_path) : Value());
      x.Set("output_dir", d.output_dir);
      ds.Push(x);
    }
    info.datasets = ds;
    info.slurm_job_id = ctx->options.slurm_job_id;
    info.slurm_array_task_id = ctx->options.slurm_array_task_id;
    MMIRAGE_TRY(ctx->state.MarkRunning(info).status());
    Value e = Value::EmptyObject();
    e.Set("event", "start");
    e.Set("fingerprint", std::to_string(ctx->fingerprint));
    e.Set("identity", ctx->identity);
    e.Set("id", RandomRunId() + RandomRunId());  // batch keys of this journal only, not of a removed one
    Status s = ctx->journal->Append(e);
    if (!s.ok()) return fail(s);
  }
  bool submitted_now = false;
  while (true) {
    int64_t stage = 0;
    while (stage < stages && ctx->journal->sealed(stage)) ++stage;
    if (stage < stages) {
      if (stage > 0) {  // the earlier stages' answers must all be in
        auto done = PollBatches(ctx, &report);
        if (!done.ok()) return fail(done.status());
        if (!*done) goto in_progress;
        Status s = LoadAnswers(ctx);
        if (!s.ok()) return fail(s);
        store();
      } else if (ctx->options.collect_only && !fresh && ctx->journal->chunks().empty()) {
        return Status::InvalidArgument("shard " + std::to_string(ctx->shard_id()) + " has no submitted batches");
      }
      if (!fresh && stage == 0) LOG_INFO("shard " << ctx->shard_id() << ": resuming the submission");
      if (stage > 0 || !fresh) MMIRAGE_TRY(ctx->state.MarkRunning({}).status());
      // Requests the generation cache answers are decided once per stage, before its first chunk.
      Status s = cache ? cache->PlanStage(stage) : Status::OK();
      if (s.ok()) s = LoadCacheHits(ctx);
      if (s.ok()) s = submitter.SubmitStage(stage);
      if (!s.ok()) return fail(s);
      submitted_now = stage == 0;
      fresh = false;
      continue;
    }
    {
      auto done = PollBatches(ctx, &report);
      if (!done.ok()) return fail(done.status());
      if (!*done) goto in_progress;
      Status s = LoadAnswers(ctx);
      if (!s.ok()) return fail(s);
      store();
      if (ctx->options.resubmit_failed) {
        auto again = submitter.ResubmitFailed();
        if (!again.ok()) return fail(again.status());
        if (*again) {
          auto d2 = PollBatches(ctx, &report);
          if (!d2.ok()) return fail(d2.status());
          goto in_progress;
        }
      }
      s = PublishShard(ctx, &report);
      if (!s.ok()) return fail(s);
      report.outcome = BatchOutcome::kComplete;
      LOG_INFO("Shard " << ctx->shard_id() << " done: " << report.rows_written << " rows written, "
                        << report.rows_failed << " failed (" << report.batches_total << " batches, " << report.requests_total
                        << " requests submitted, " << report.requests_cached << " answered by the generation cache)");
      return report;
    }
  in_progress:
    {
      Status m = ctx->state.MarkSubmitted(BatchInfo(*ctx, report));
      if (!m.ok()) return m;
    }
    LOG_INFO("shard " << ctx->shard_id() << ": " << report.requests_done << "/" << report.requests_total
                      << " requests done, " << report.batches_done << "/" << report.batches_total << " batches");
    if (!wait) {
      report.outcome = submitted_now ? BatchOutcome::kSubmitted : BatchOutcome::kInProgress;
      return report;
    }
    int64_t secs = std::max<int64_t>(0, ctx->batch_api().poll_interval_seconds);
    for (int64_t i = 0; i < secs * 10 && !StopRequested(); ++i) ctx->env->SleepMicros(100000);
    if (StopRequested()) {
      report.outcome = BatchOutcome::kInProgress;
      return report;
    }
  }
}



bool IsBatchConfig(const config::Config& config) {
  for (const auto& o : config.processing.outputs)
    if (o.type == "batch_api") return true;
  return false;
}

Result<std::vector<SubmittedBatch>> ListSubmittedBatches(Env* env, const config::Config& config) {
  std::vector<SubmittedBatch> out;
  for (int64_t id = 0; id < config.loading.num_shards; ++id) {
    ShardState st(env, config.loading.state_dir, id);
    std::string dir = JoinPath(st.dir(), "batch");
    if (!env->FileExists(JoinPath(dir, "journal.jsonl"))) continue;
    MMIRAGE_ASSIGN_OR_RETURN(auto j, BatchJournal::Open(env, dir));
    for (const auto& c : j->chunks())
      if (c.batch_id) out.push_back(SubmittedBatch{id, c.name, *c.batch_id, static_cast<int64_t>(c.requests.size())});
  }
  return out;
}

Result<BatchShardReport> RunBatchShard(const BatchShardOptions& options) {
  batch::BatchShardContext ctx(options);
  return batch::RunShard(&ctx);
}

}  // namespace mmirage::batch

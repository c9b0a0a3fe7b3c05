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
#include <memory>

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

// Sets ctx->identity (one resume identity per dataset) and its fingerprint.
void SetIdentity(BatchShardContext* ctx) {
  ctx->identity = Value::EmptyArray();
  for (size_t d = 0; d < ctx->config.loading.datasets.size(); ++d) {
    ctx->identity.Push(pipeline::DatasetIdentity(ctx->env, ctx->config, d, ctx->shard_id()));
  }
  ctx->fingerprint = pipeline::IdentityFingerprint(ctx->identity);
}

// --export-prompts: writes the requests of stage 0; nothing is sent and no state changes. Errors: the export file.
Result<BatchShardReport> ExportPrompts(BatchShardContext* ctx) {
  if (ctx->num_stages() > 1) {
    LOG_WARN(
        "--export-prompts: outputs whose prompt reads another batch output are not exported (their "
        "requests need that output's answers)");
  }
  BatchSubmitter submitter(ctx);
  MMIRAGE_TRY(submitter.Export());
  BatchShardReport report;
  report.outcome = BatchOutcome::kExported;
  report.export_path = ctx->export_path;
  return report;
}

// Sets ctx->provider and ctx->journal. Errors: a missing API key, an unreadable journal.
Status OpenProviderAndJournal(BatchShardContext* ctx) {
  config::VarLookup lookup = ctx->options.vars ? ctx->options.vars : config::ProcessVarLookup();
  MMIRAGE_ASSIGN_OR_RETURN(
      ctx->provider, batch::BatchProvider::Create(ctx->batch_api(), lookup, ctx->env, ctx->options.retry_base_seconds));
  MMIRAGE_ASSIGN_OR_RETURN(ctx->journal, BatchJournal::Open(ctx->env, JoinPath(ctx->state.dir(), "batch")));
  return Status::OK();
}

// Submitted requests are paid for: a change of config or input data since the journal's requests were made is
// refused (never silently mixed, never silently thrown away), saying what changed and how to go on.
Status RefuseChangedIdentity(const BatchShardContext& ctx) {
  if (SameIdentity(*ctx.journal, ctx)) return Status::OK();
  const std::string what = DescribeChange(*ctx.journal, ctx);
  if (ctx.state.Read().status == ShardStatus::kSuccess) {
    return Status::InvalidArgument(
        "shard " + std::to_string(ctx.shard_id()) +
        " was published from another version of the config or its "
        "input data (" +
        what + "; journal " + ctx.journal->dir() +
        "/journal.jsonl); run the edited config with "
        "another state_dir (with temperature 0 or a seed, the generation cache answers every request that did not "
        "change), or remove that directory");
  }
  return Status::InvalidArgument("the config or its input data changed since shard " + std::to_string(ctx.shard_id()) +
                                 "'s batches were submitted (" + what + "; journal " + ctx.journal->dir() +
                                 "/journal.jsonl); restore them (and "
                                 "collect), or remove that directory to start over");
}

// The lifecycle of a shard whose journal is open: a step loop over submit (the first stage not sealed), collect
// and publish (every stage sealed), and waiting while batches are in progress. A step's error is recorded as the
// shard's failure in the state directory (except usage errors and errors of the state file itself).
class Lifecycle {
 public:
  Lifecycle(BatchShardContext* ctx, bool fresh)
      : ctx_(ctx), submitter_(ctx), fresh_(fresh), wait_(ctx->options.wait.value_or(ctx->batch_api().wait)) {}

  Result<BatchShardReport> Run() {
    cache_ = BatchCache::Open(ctx_);  // closed (sealed) on every way out
    if (fresh_) MMIRAGE_TRY(Start());
    while (true) {
      int64_t stage = 0;
      while (stage < ctx_->num_stages() && ctx_->journal->sealed(stage)) ++stage;
      MMIRAGE_ASSIGN_OR_RETURN(Step step, stage < ctx_->num_stages() ? SubmitStage(stage) : CollectAndPublish());
      if (step == Step::kComplete) return report_;
      if (step == Step::kSubmitted) continue;
      MMIRAGE_ASSIGN_OR_RETURN(bool poll_again, RecordInProgress());
      if (!poll_again) return report_;
    }
  }

 private:
  enum class Step {
    kSubmitted,   // a stage was submitted: look at the journal again
    kInProgress,  // some batch is still at the provider
    kComplete,    // published
  };

  // Records `s` as the shard's failure (logged when that fails too) and returns it.
  Status Fail(const Status& s) {
    Status m = ctx_->state.MarkFailed(s.message(), report_.rows_failed);
    if (!m.ok()) LOG_ERROR("cannot record the failure in the state directory: " << m.message());
    return s;
  }

  // A fresh journal: the shard is marked running and the journal's start event written. Errors: `collect` on a
  // shard never submitted, the state file, the journal.
  Status Start() {
    if (ctx_->options.collect_only) {
      return Status::InvalidArgument("shard " + std::to_string(ctx_->shard_id()) +
                                     " has no submitted batches; run `mmirage run` first");
    }
    ShardState::RunInfo info;
    Value ds = Value::EmptyArray();
    for (const auto& d : ctx_->config.loading.datasets) {
      Value x = Value::EmptyObject();
      x.Set("image_base_path", d.image_base_path ? Value(*d.image_base_path) : Value());
      x.Set("output_dir", d.output_dir);
      ds.Push(x);
    }
    info.datasets = ds;
    info.slurm_job_id = ctx_->options.slurm_job_id;
    info.slurm_array_task_id = ctx_->options.slurm_array_task_id;
    MMIRAGE_TRY(ctx_->state.MarkRunning(info).status());
    Value e = Value::EmptyObject();
    e.Set("event", "start");
    e.Set("fingerprint", std::to_string(ctx_->fingerprint));
    e.Set("identity", ctx_->identity);
    e.Set("id", RandomRunId() + RandomRunId());  // batch keys of this journal only, not of a removed one
    Status s = ctx_->journal->Append(e);
    if (!s.ok()) return Fail(s);
    return Status::OK();
  }

  // Polls the batches; when all are done, loads their answers and stores them in the generation cache. False
  // while some batch is in progress.
  Result<bool> CollectAnswers() {
    auto done = PollBatches(ctx_, &report_);
    if (!done.ok()) return Fail(done.status());
    if (!*done) return false;
    Status s = LoadAnswers(ctx_);
    if (!s.ok()) return Fail(s);
    if (cache_) {
      Status st = cache_->StoreAnswers();
      if (!st.ok()) {
        LOG_WARN("shard " << ctx_->shard_id() << ": answers not stored in the generation cache: " << st.message());
      }
    }
    return true;
  }

  // Submits `stage` (the first one not sealed) once the earlier stages' answers are all in: kSubmitted, or
  // kInProgress while they are not.
  Result<Step> SubmitStage(int64_t stage) {
    if (stage > 0) {  // the earlier stages' answers must all be in
      MMIRAGE_ASSIGN_OR_RETURN(bool all_in, CollectAnswers());
      if (!all_in) return Step::kInProgress;
    } else if (ctx_->options.collect_only && !fresh_ && ctx_->journal->chunks().empty()) {
      return Status::InvalidArgument("shard " + std::to_string(ctx_->shard_id()) + " has no submitted batches");
    }
    if (!fresh_ && stage == 0) LOG_INFO("shard " << ctx_->shard_id() << ": resuming the submission");
    if (stage > 0 || !fresh_) MMIRAGE_TRY(ctx_->state.MarkRunning({}).status());
    // Requests the generation cache answers are decided once per stage, before its first chunk.
    Status s = cache_ ? cache_->PlanStage(stage) : Status::OK();
    if (s.ok()) s = LoadCacheHits(ctx_);
    if (s.ok()) s = submitter_.SubmitStage(stage);
    if (!s.ok()) return Fail(s);
    submitted_now_ = stage == 0;
    fresh_ = false;
    return Step::kSubmitted;
  }

  // Every stage is sealed: collects the answers (and with --resubmit-failed submits the failed requests again)
  // and publishes the shard: kComplete, or kInProgress while some batch is not done.
  Result<Step> CollectAndPublish() {
    MMIRAGE_ASSIGN_OR_RETURN(bool all_in, CollectAnswers());
    if (!all_in) return Step::kInProgress;
    if (ctx_->options.resubmit_failed) {
      auto again = submitter_.ResubmitFailed();
      if (!again.ok()) return Fail(again.status());
      if (*again) {
        auto polled = PollBatches(ctx_, &report_);  // counts the resubmitted batches in the report
        if (!polled.ok()) return Fail(polled.status());
        return Step::kInProgress;
      }
    }
    Status s = PublishShard(ctx_, &report_);
    if (!s.ok()) return Fail(s);
    report_.outcome = BatchOutcome::kComplete;
    LOG_INFO("Shard " << ctx_->shard_id() << " done: " << report_.rows_written << " rows written, "
                      << report_.rows_failed << " failed (" << report_.batches_total << " batches, "
                      << report_.requests_total << " requests submitted, " << report_.requests_cached
                      << " answered by the generation cache)");
    return Step::kComplete;
  }

  // Records the shard as submitted with its progress. True to poll again after poll_interval_seconds (wait);
  // false to return, with the outcome set (no wait, or a stop request). Errors: the state file.
  Result<bool> RecordInProgress() {
    MMIRAGE_TRY(ctx_->state.MarkSubmitted(BatchInfo(*ctx_, report_)));
    LOG_INFO("shard " << ctx_->shard_id() << ": " << report_.requests_done << "/" << report_.requests_total
                      << " requests done, " << report_.batches_done << "/" << report_.batches_total << " batches");
    if (!wait_) {
      report_.outcome = submitted_now_ ? BatchOutcome::kSubmitted : BatchOutcome::kInProgress;
      return false;
    }
    int64_t secs = std::max<int64_t>(0, ctx_->batch_api().poll_interval_seconds);
    for (int64_t i = 0; i < secs * 10 && !StopRequested(); ++i) ctx_->env->SleepMicros(100000);
    if (StopRequested()) {
      report_.outcome = BatchOutcome::kInProgress;
      return false;
    }
    return true;
  }

  BatchShardContext* ctx_;
  BatchSubmitter submitter_;
  std::unique_ptr<BatchCache> cache_;
  BatchShardReport report_;
  bool fresh_;                  // the journal has no start event yet
  bool submitted_now_ = false;  // this call submitted stage 0
  const bool wait_;             // poll until done instead of returning while in progress
};

}  // namespace

Result<BatchShardReport> RunShard(BatchShardContext* ctx) {
  ctx->start_us = ctx->env->MonotonicMicros();
  MMIRAGE_TRY(Validate(*ctx));
  SetIdentity(ctx);
  if (!ctx->options.export_prompts.empty()) return ExportPrompts(ctx);
  MMIRAGE_TRY(OpenProviderAndJournal(ctx));
  bool fresh = !ctx->journal->fingerprint().has_value();
  if (!fresh) MMIRAGE_TRY(RefuseChangedIdentity(*ctx));
  if (!fresh && !ctx->options.resubmit_failed && ctx->state.Read().status == ShardStatus::kSuccess &&
      ctx->journal->sealed(ctx->num_stages() - 1)) {
    LOG_INFO("shard " << ctx->shard_id() << ": already complete; kept");
    BatchShardReport report;
    report.outcome = BatchOutcome::kComplete;
    return report;
  }
  Lifecycle lifecycle(ctx, fresh);
  return lifecycle.Run();
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

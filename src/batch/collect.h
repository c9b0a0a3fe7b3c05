// Collection of a batch_api shard's answers (one step of batch/shard.h):
//   PollBatches  asks the provider about every submitted chunk whose results are not on disk yet and downloads
//                the finished ones (OpenAI output and error files, Anthropic results) to
//                `<journal dir>/results/<chunk>.jsonl`, atomically; a batch that ended without results is
//                journaled as ended. Counts batches and requests into the report.
//   LoadAnswers  reads the generation-cache hits of every stage (batch/cache.h), then every downloaded
//                results file, in journal order (a resubmitted request's later answer wins), into ctx->answers /
//                ctx->ended / ctx->cached_ids; an unparsable results line is skipped with a warning.
//   ApplyAnswers puts the answers of a row's outputs below `stage` into its variables (JSON outputs parsed and
//                checked like `llm`).
// Errors: provider and I/O errors (nothing journaled is lost). Not thread-safe.
#pragma once

#include <cstdint>

#include "batch/context.h"
#include "util/status.h"

namespace mmirage::batch {

// Whether every submitted batch has its results on disk.
Result<bool> PollBatches(BatchShardContext* ctx, BatchShardReport* report);
Status LoadAnswers(BatchShardContext* ctx);

// The value an answer gives output `o`, or why it gives none (a provider error, unparsable JSON, a field missing).
Result<Value> AnswerValue(const config::OutputVar& o, const batch::BatchAnswer& a);

// What the answers applied to a row count (usage.jsonl, stats): every answered output, and of those the ones
// the generation cache answered (not submitted, not billed).
struct AnswerTally {
  int64_t prompt_tokens = 0, completion_tokens = 0, generations = 0;
  int64_t cached_generations = 0, cached_prompt_tokens = 0, cached_completion_tokens = 0;
};

// Fills c.vars with the outputs of stages below `stage`; false (with *err: the first failure) when one has no
// usable answer. Every answered output is counted into *tally (optional), also after a failure (it was billed).
// *missing (optional): index of the first failed output when it has no answer at all (never submitted: its
// prompt failed to render).
bool ApplyAnswers(const BatchShardContext& ctx, RowCtx& c, int64_t stage, pipeline::RowError* err,
                  AnswerTally* tally = nullptr, int64_t* missing = nullptr);

// The `batch` object of status.json for a shard left submitted.
Value BatchInfo(const BatchShardContext& ctx, const BatchShardReport& r);

}  // namespace mmirage::batch

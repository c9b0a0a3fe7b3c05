// Publication of a batch_api shard (the last step of batch/shard.h): once every answer is in, the
// shard's rows are walked again, each row gets its outputs from the answers (batch/collect.h), the
// output_schema is rendered with the real values and the rows are written as a normal dataset shard
// (pipeline/shard_writer.h: data, errors.jsonl, usage.jsonl; published atomically). A row without a usable
// answer is a row error (a provider failure, unparsable JSON, a prompt that failed to render). Then the shard's
// stats (tokens, cost from the prices) go into status.json and the shard is marked success.
// Publishing is cheap to redo from the answers: a half-written shard is discarded and written again.
// Errors: more failed rows than max_failed_rows (naming the errors files), I/O. Not thread-safe.
#pragma once

#include "batch/context.h"
#include "util/status.h"

namespace mmirage::batch {

// REQUIRES: every stage's answers loaded (LoadAnswers).
Status PublishShard(BatchShardContext* ctx, BatchShardReport* report);

}  // namespace mmirage::batch

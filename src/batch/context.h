// The state one call of RunBatchShard (batch/shard.h) shares between its steps: submission
// (batch/submit.h), collection (batch/collect.h) and publication (batch/publish.h). The lifecycle in
// batch/shard.cc owns it, opens the journal and the provider, and hands it to each step in turn.
// Not thread-safe: one shard, one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config/config.h"
#include "batch/journal.h"
#include "batch/rows.h"
#include "batch/shard.h"
#include "batch/provider.h"
#include "state/shard_state.h"
#include "util/env.h"

namespace mmirage::batch {

struct BatchShardContext {
  explicit BatchShardContext(const BatchShardOptions& o)
      : options(o),
        env(o.env),
        config(*o.config),
        state(o.env, o.config->loading.state_dir, o.shard_id),
        proc(o.config->FindProcessor("batch_api")),
        stages(OutputStages(*o.config)),
        run_id(RandomRunId()) {}

  const BatchShardOptions& options;
  Env* env;
  const config::Config& config;
  ShardState state;
  const config::Processor* proc;                   // the batch_api processor (nullptr: a config error, see Validate)
  std::vector<int64_t> stages;                     // per output
  std::string run_id;                              // receipts' and exports' file names
  std::unique_ptr<BatchJournal> journal;           // null in export mode
  std::unique_ptr<batch::BatchProvider> provider;  // null in export mode
  std::string export_path;                         // non-empty: export mode (dry run)
  // Loaded by LoadAnswers: custom_id (as sent) → its latest answer, or why it has none (its batch ended).
  std::unordered_map<std::string, batch::BatchAnswer> answers;
  std::unordered_map<std::string, std::string> ended;
  std::unordered_set<std::string> cached_ids;  // of `answers`: answered by the generation cache, never submitted
  // A request identical to an earlier one of the same stage (same cache key): never submitted, it shares that
  // one's answer (custom_id → the earlier custom_id). Resolved by LoadAnswers once the answers are in.
  std::unordered_map<std::string, std::string> aliases;
  // What the shard's requests and output are made from: the resume identity of each dataset (input_identity.h),
  // set by the lifecycle before any step; `fingerprint` is IdentityFingerprint(identity).
  Value identity;
  uint64_t fingerprint = 0;
  bool cache_active = false;  // the generation cache is consulted for this shard (batch/cache.h)
  uint64_t start_us = 0;      // this call's start (runtime of the publication)

  int64_t shard_id() const { return options.shard_id; }
  int64_t num_stages() const { return NumStages(stages); }
  const config::BatchApiProcessor& batch_api() const { return proc->batch_api; }
  std::string ResultsPath(const JournalChunk& c) const {
    return JoinPath(JoinPath(journal->dir(), "results"), c.name + ".jsonl");
  }
};

}  // namespace mmirage::batch

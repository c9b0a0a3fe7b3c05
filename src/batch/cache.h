// The generation cache (cache/generation_cache.h) for a batch_api shard, so that a request answered in an earlier run
// — of this config or another with the same requests — is never submitted (nor paid) again
// (docs/generation_cache.md, "Batch APIs"). PlanStage decides each stage's hits once, before its first chunk, and
// journals them, so a re-run's chunks stay byte-identical to the journaled ones; StoreAnswers stores the usable answers
// of downloaded chunks. Only deterministic requests are cached (IsBatchDeterministic: temperature 0, or an OpenAI
// seed). Errors: I/O and journal errors (a cache that cannot be opened is warned about and not used). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/generation_cache.h"
#include "batch/context.h"
#include "util/status.h"

namespace mmirage::batch {

class BatchCache {
 public:
  // nullptr when the cache does not apply: export mode, `cache: off`, a processor that is not deterministic, or
  // a cache that cannot be opened (warned; the shard runs without it). Sets ctx->cache_active.
  static std::unique_ptr<BatchCache> Open(BatchShardContext* ctx);
  ~BatchCache();  // Close(), its error logged

  // REQUIRES: earlier stages' answers loaded. Adds the hits to ctx->answers / ctx->cached_ids.
  Status PlanStage(int64_t stage);
  Status StoreAnswers();
  Status Close();

 private:
  BatchCache(BatchShardContext* ctx, std::unique_ptr<cache::GenerationCache> cache)
      : ctx_(ctx), cache_(std::move(cache)) {}
  BatchShardContext* ctx_;
  std::unique_ptr<cache::GenerationCache> cache_;
  std::vector<std::string> stored_;  // chunks stored by this call, journaled at Close
  bool closed_ = false;
};

// Reads every journaled hits file into ctx->answers / ctx->cached_ids (also when the config's cache is off: the
// decision was journaled). Errors: an unreadable or corrupt hits file.
Status LoadCacheHits(BatchShardContext* ctx);

}  // namespace mmirage::batch

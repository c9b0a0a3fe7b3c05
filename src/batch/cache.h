// The generation cache (cache/generation_cache.h) for a batch_api shard, so that a request answered in an
// earlier run — of this config or another with the same requests — is never submitted (nor paid) again
// (docs/generation_cache.md, "Batch APIs"):
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
// Only deterministic requests are cached (IsBatchDeterministic: temperature 0, or an OpenAI seed).
// Not thread-safe.
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

// Reads every journaled hits file into ctx->answers / ctx->cached_ids (also when the cache is off now: the
// decision was journaled). Errors: an unreadable or corrupt hits file.
Status LoadCacheHits(BatchShardContext* ctx);

}  // namespace mmirage::batch

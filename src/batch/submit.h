// Submission of a batch_api shard's requests (one step of batch/shard.h):
//   SubmitStage  walks the shard's rows (batch/rows.h) in batches of `batch_size`, renders every request of the
//                stage (batch/request.h), chunks them (batch/chunker.h), journals each chunk *before* sending it,
//                then sends it, journals it as submitted and appends its receipt to `metadata_output_path`.
//                A chunk the journal already holds is never sent twice (details in submit.cc).
//   Export       the same walk into MMIRAGE's export file (`--export-prompts`); nothing is sent or journaled.
//   ResubmitFailed  the requests whose latest answer is a provider failure go out again as new chunks.
// Errors: a request that cannot be built (file:line and output named), an oversized request under `reject`, a
// journaled chunk that is no longer byte-identical (the data or config changed), provider and I/O errors.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "batch/context.h"
#include "batch/chunker.h"
#include "util/status.h"

namespace mmirage::batch {

// One request of a stage as the walk hands it out.
struct StageRequest {
  const RowCtx* row;
  size_t output;          // index in processing.outputs
  const char* modality;   // "text" | "multimodal"
  Value request;          // the provider request (batch/request.h)
  std::string line;       // its compact JSON: what is sent
  std::string custom_id;  // as sent
};
struct StageVisitor {
  std::function<Status(StageRequest&)> request;  // every request, in walk order (errors get file:line, output)
  std::function<Status(size_t output, const std::string& modality)> group_end;  // after a group that had requests
  std::function<Status()> dataset_end;                                          // after each dataset
};
// The walk of SubmitStage: rows in batches of `batch_size`, each output of `stage` over the batch, text rows then
// multimodal rows; earlier stages' answers applied first (rows without them and prompts that fail to render are
// skipped: they are row errors at publication). Deterministic for an unchanged shard and answers.
Status ForEachStageRequest(BatchShardContext* ctx, int64_t stage, const StageVisitor& v);

class BatchSubmitter {
 public:
  explicit BatchSubmitter(BatchShardContext* ctx) : ctx_(ctx) {}

  // Submits (or, in export mode, exports) every request of `stage` except those in ctx->cached_ids (answered by
  // the generation cache). REQUIRES: earlier stages' answers loaded.
  Status SubmitStage(int64_t stage);
  // Export mode: creates the export file (named after options.export_prompts and the run id), then exports
  // stage 0. Errors: an empty path, an unwritable file.
  Status Export();
  // Returns whether any request was resubmitted. REQUIRES: answers loaded.
  Result<bool> ResubmitFailed();

 private:
  Status Emit(batch::RequestChunk chunk, const std::string& modality, int64_t stage, const std::string& reason,
              Value snapshot);
  // recovering: the chunk was journaled by an earlier run that may have sent it; ask the provider first.
  Status SubmitJournaled(JournalChunk* c, bool recovering);
  Status WriteReceipt(JournalChunk* c, const std::vector<int64_t>& source_indices);

  BatchShardContext* ctx_;
  std::map<std::string, int64_t> chunk_counter_;             // per modality: the next chunk's number - 1
  std::unordered_map<std::string, JournalRequest> pending_;  // requests not yet in a chunk, by custom_id
};

}  // namespace mmirage::batch

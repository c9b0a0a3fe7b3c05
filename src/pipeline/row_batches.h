// Parallel model-free row processing: a reader thread cuts the shard's rows into batches, worker threads run
// parse → extract → render → serialise on whole batches, and the caller's thread receives the batches back in
// input order (a reorder buffer) and writes them. The number of batches in flight is bounded, so memory stays
// flat whatever the dataset size.
//
// Thread-safety: RunRowBatches is called from one thread; `transform` must be safe to share (RowTransform is).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "pipeline/row_transform.h"
#include "util/status.h"

namespace mmirage::pipeline {

// What the workers produced for one batch, in row order.
struct ProcessedBatch {
  std::string lines;  // serialised output rows, one JSON object per line
  int64_t rows = 0;   // rows in `lines`
  struct Failure {
    uint64_t row_index;
    std::string source;  // FILE:LINE
    RowError error;
  };
  std::vector<Failure> failures;
  // Rows written (in `lines`) with a caveat to record in errors.jsonl as a warning (e.g. fallback_value used).
  std::vector<Failure> warnings;
  // Token usage of rows that called a model, one UsageLine per row in row order (failed rows included: they cost
  // tokens too).
  std::string usage;
};

// What one row's generations cost.
struct RowUsage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t generations = 0;         // requests answered, retries included
  int64_t cached_generations = 0;  // of `generations`, answered by the generation cache
};

// The row's usage.jsonl line, '\n' included: {"row_index", "prompt_tokens", "completion_tokens", "generations",
// "cached_generations"}, in that order (the one writer of these lines: the streaming and batch-API paths alike).
std::string UsageLine(uint64_t row_index, const RowUsage& usage);

struct RowBatchOptions {
  int threads = 0;           // workers; 0 = hardware concurrency (at most 8)
  size_t batch_rows = 2048;  // rows per batch
  size_t max_in_flight = 0;  // batches queued or being processed; 0 = 4 × threads
};

// Streams `stream` through `transform`, calling `sink` with every batch in input order (from the calling
// thread). Stops at the first error of the stream or of the sink and returns it; an exception thrown while
// processing a row (a fault of the program or the machine, not of the data) stops it too, as kInternal naming
// the row's FILE:LINE.
Status RunRowBatches(RowStream* stream, const RowTransform& transform, const RowBatchOptions& options,
                     const std::function<Status(ProcessedBatch&)>& sink);

// The per-row work on one raw line (exposed for tests and for the single-row paths).
// `file` and `line` name the row's origin in errors (FILE:LINE), built only when the row fails.
void ProcessRow(const RowTransform& transform, uint64_t row_index, const std::string& file, uint64_t line,
                std::string_view text, ProcessedBatch* out);
// The same for a row that arrives decoded (Arrow/Parquet inputs).
void ProcessRowValue(const RowTransform& transform, uint64_t row_index, const std::string& file, uint64_t line,
                     const Value& row, ProcessedBatch* out);

}  // namespace mmirage::pipeline

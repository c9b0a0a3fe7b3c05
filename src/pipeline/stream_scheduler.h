// The streaming scheduler for rows with model outputs: no batch barrier. Many rows are in flight together,
// bounded by a window; each row's outputs run in declaration order (output k sees outputs < k); a finished
// generation immediately lets the next row in; a reorder buffer hands rows to the sink in input order.
//
// The caller's thread coordinates (reads, extracts, renders prompts and output rows — all cheap next to
// generation); engine threads only post completions back. Thread-safety: one call at a time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "data/dataset.h"
#include "pipeline/row_batches.h"
#include "pipeline/row_transform.h"
#include "process/output_generator.h"

namespace mmirage::pipeline {

// May the next row start? kWait: not now (asked again when a generation finishes); kStop: read no more rows.
enum class RowGate { kStart, kWait, kStop };

struct StreamOptions {
  size_t window = 64;              // rows in flight (read but not yet handed to the sink)
  size_t flush_rows = 32;          // hand rows to the sink in groups of at most this many (sooner when the stream ends)
  double stop_grace_seconds = 20;  // after a stop request: wait this long for rows in flight, then abandon them
  int64_t sample_offset = 0;       // RowInfo::sample_index = row_index + sample_offset (position in the shard's part)
  // prefix_order false: each generation is sent as soon as its prompt is rendered. true: generations wait within the
  // window and are sent grouped by their prompt's leading bytes (pipeline/dispatch_queue.h), at most
  // `dispatch_limit` in flight, so that the engine's prefix cache hits; the sink still gets rows in input order.
  bool prefix_order = false;
  size_t dispatch_limit = 8;  // prefix order: generations in flight at once (>= 1; the engines' parallel slots)
  // Asked before each row is read. kStop: read no more rows, let the rows in flight finish, set
  // StreamTotals::budget_reached and return kUnavailable "cost budget reached". nullptr: always kStart.
  std::function<RowGate()> may_start_row;
};

// Counters of a streaming run; atomics so that a progress reporter may read them while the run updates them.
struct StreamTotals {
  std::atomic<int64_t> prompt_tokens{0};
  std::atomic<int64_t> completion_tokens{0};
  std::atomic<int64_t> generations{0};  // requests sent, retries included
  // Of the above, answered by the generation cache instead of the engine.
  std::atomic<int64_t> cached_generations{0};
  std::atomic<int64_t> cached_prompt_tokens{0};
  std::atomic<int64_t> cached_completion_tokens{0};
  std::atomic<int64_t> engine_cached_prompt_tokens{0};  // generated prompts the engine served from its prompt cache
  std::atomic<int64_t> in_flight{0};                    // generations submitted and not yet answered
  std::atomic<bool> budget_reached{false};              // StreamOptions::may_start_row said no
};

// Streams `stream` through extract → (render prompt → generate)* → render output. Row failures go to the
// sink's batches as failures; returns only a fatal error (stream I/O, sink). *totals is accumulated.
// On a stop request (util/signals.h) no new row is read; rows in flight get `stop_grace_seconds` to finish, the
// finished prefix goes to the sink, the rest is abandoned (never recorded as failed), and the result is
// kUnavailable "interrupted". `generator` is borrowed: on an error the rows in flight are abandoned (their
// completions may still arrive, unread) and the generator left running; its owner ends them (Shutdown).
Status RunStreaming(RowStream* stream, const RowTransform& transform, process::OutputGenerator* generator,
                    const StreamOptions& options, const std::function<Status(ProcessedBatch&)>& sink,
                    StreamTotals* totals);

}  // namespace mmirage::pipeline

// Chunking of provider batch requests by bytes and count (MMIRAGE's rules): requests are walked in order;
// one larger than max_chunk_bytes is rejected (policy `reject`) or put alone in a chunk flagged oversized
// (`isolate`); otherwise a request that would push the current chunk past max_chunk_bytes, or past
// max_requests_per_chunk requests, starts a new chunk. A total exactly equal to max_chunk_bytes is allowed.
//
// BatchAccumulator keeps the requests not yet in a closed chunk and hands out the chunks that are ready, with the
// same boundaries whether requests arrive one by one or all at once. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/status.h"

namespace mmirage::batch {

struct ChunkLimits {
  int64_t max_chunk_bytes = 52428800;
  std::optional<int64_t> max_requests_per_chunk;
  bool reject_oversized = false;
};

// A request waiting for its chunk: its serialised line and whatever the caller needs to map it back.
struct PendingRequest {
  std::string line;       // compact JSON, no newline; its size is the request's size
  std::string custom_id;  // as sent
  int64_t tag = 0;        // caller's index (e.g. into its row table)
};

struct RequestChunk {
  std::vector<PendingRequest> requests;
  int64_t total_bytes = 0;
  bool has_oversized_request = false;
};

class BatchAccumulator {
 public:
  explicit BatchAccumulator(ChunkLimits limits) : limits_(limits) {}

  // Adds one request. Errors: an oversized request under policy `reject` ("Encountered oversized request: <n>
  // bytes exceeds max_chunk_bytes=<max>"); nothing is added then.
  Status Add(PendingRequest r);
  // Chunks that are closed (mid-stream: the current chunk stays open unless it is complete).
  std::vector<RequestChunk> TakeReady();
  // Every chunk, the open one included (end of the stream).
  std::vector<RequestChunk> TakeAll();
  bool empty() const { return ready_.empty() && current_.requests.empty(); }

 private:
  bool Complete(const RequestChunk& c) const;
  void Close();
  ChunkLimits limits_;
  std::vector<RequestChunk> ready_;
  RequestChunk current_;
};

}  // namespace mmirage::batch

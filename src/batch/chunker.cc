#include "batch/chunker.h"

#include "util/log.h"

namespace mmirage::batch {

bool BatchAccumulator::Complete(const RequestChunk& c) const {
  if (c.has_oversized_request || c.total_bytes >= limits_.max_chunk_bytes) return true;
  return limits_.max_requests_per_chunk && static_cast<int64_t>(c.requests.size()) >= *limits_.max_requests_per_chunk;
}

void BatchAccumulator::Close() {
  if (current_.requests.empty()) return;
  ready_.push_back(std::move(current_));
  current_ = RequestChunk{};
}

Status BatchAccumulator::Add(PendingRequest r) {
  int64_t size = static_cast<int64_t>(r.line.size());
  if (size > limits_.max_chunk_bytes) {
    if (limits_.reject_oversized) {
      return Status::InvalidArgument("Encountered oversized request: " + std::to_string(size) +
                                     " bytes exceeds max_chunk_bytes=" + std::to_string(limits_.max_chunk_bytes));
    }
    LOG_WARN("Encountered oversized request (" << size << " bytes > " << limits_.max_chunk_bytes
                                               << "); isolating into its own chunk.");
    Close();
    RequestChunk alone;
    alone.total_bytes = size;
    alone.has_oversized_request = true;
    alone.requests.push_back(std::move(r));
    ready_.push_back(std::move(alone));
    return Status::OK();
  }
  bool over_bytes = current_.total_bytes + size > limits_.max_chunk_bytes;
  bool over_count = limits_.max_requests_per_chunk &&
                    static_cast<int64_t>(current_.requests.size()) >= *limits_.max_requests_per_chunk;
  if (!current_.requests.empty() && (over_bytes || over_count)) Close();
  current_.total_bytes += size;
  current_.requests.push_back(std::move(r));
  return Status::OK();
}

std::vector<RequestChunk> BatchAccumulator::TakeReady() {
  // A complete open chunk is ready too: the next request would close it anyway.
  if (!current_.requests.empty() && Complete(current_)) Close();
  std::vector<RequestChunk> out = std::move(ready_);
  ready_.clear();
  return out;
}

std::vector<RequestChunk> BatchAccumulator::TakeAll() {
  Close();
  return TakeReady();
}

}  // namespace mmirage::batch

// The journal of a batch_api shard: `<state_dir>/shard_<id>/batch/journal.jsonl`, one JSON event per line,
// appended and fsynced before the shard moves on (format in docs/state_format.md):
//   {"event":"start","fingerprint":…,"identity":[…],"id":…} what the requests were made from (one resume identity
//                                                           per dataset, pipeline/input_identity.h; optional:
//                                                           older journals lack it); a random id
//   {"event":"chunk","name":"text-chunk-000001",…}          a chunk's requests are on disk (intent to submit)
//   {"event":"submitted","name":…,"batch_id":…,"status":…}  the provider accepted it
//   {"event":"receipt","name":…}                            its receipt line is written
//   {"event":"ended","name":…,"status":…}                   it ended without results for every request
//   {"event":"sealed","stage":k}                            every request of stage k is submitted
//   {"event":"cached","stage":k,"file":…,"hits":n}          stage k's generation-cache hits are in `file`: those
//                                                           requests are never submitted (decided once, before
//                                                           any chunk of the stage)
//   {"event":"stored","name":…}                             the chunk's answers are in the generation cache
// A crash can leave a torn last line; Open drops it (the event it held had not been acted upon).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "data/value.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::batch {

struct JournalRequest {
  std::string custom_id;  // as sent (provider-normalised)
  int64_t dataset = 0, part = 0, output = 0;
  uint64_t row = 0;  // index in the dataset (split)
};

struct JournalChunk {
  std::string name;      // "<text|multimodal>-chunk-NNNNNN" (the export's batch_id)
  std::string chunk_id;  // "chunk-NNNNNN"
  std::string modality;  // text | multimodal
  std::string file;      // request lines, relative to the journal's directory
  std::string key;       // unique: finds a batch whose creation answer was lost
  std::string hash;      // the receipt's request_hash (SHA-256 of the requests)
  std::string flush_reason;
  Value snapshot;  // model_params_snapshot of the receipt
  int64_t stage = 0;
  int64_t bytes = 0;
  bool oversized = false;
  std::vector<JournalRequest> requests;
  std::optional<std::string> batch_id;  // once submitted
  std::string submit_status;
  std::string submitted_at;  // UTC ISO-8601, +00:00
  bool receipt = false;
  std::optional<std::string> ended;  // provider status when it ended without every result
  bool stored = false;               // its answers were written to the generation cache

  Value ToEvent() const;  // the "chunk" event
};

class BatchJournal {
 public:
  // Reads (or creates) the journal in `dir`. Errors: I/O; kCorruption for a bad line before the last.
  static Result<std::unique_ptr<BatchJournal>> Open(Env* env, const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::optional<uint64_t> fingerprint() const { return fingerprint_; }
  const Value& identity() const { return identity_; }            // null when the start event has none
  const std::string& journal_id() const { return journal_id_; }  // random, from the start event
  std::vector<JournalChunk>& chunks() { return chunks_; }
  JournalChunk* Find(const std::string& name);
  bool sealed(int64_t stage) const { return sealed_.count(stage) > 0; }
  // Stage → the file (relative to dir()) holding its generation-cache hits.
  const std::map<int64_t, std::string>& cached_stages() const { return cached_; }

  // Appends one event durably and applies it.
  Status Append(const Value& event);

 private:
  BatchJournal(Env* env, std::string dir) : env_(env), dir_(std::move(dir)) {}
  Status Apply(const Value& event);
  Env* env_;
  std::string dir_;
  std::optional<uint64_t> fingerprint_;
  Value identity_;
  std::string journal_id_;
  std::vector<JournalChunk> chunks_;
  std::set<int64_t> sealed_;
  std::map<int64_t, std::string> cached_;
  std::unique_ptr<WritableFile> file_;
};

}  // namespace mmirage::batch

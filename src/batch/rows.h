// The rows of a batch_api shard, as every step of its lifecycle (batch/shard.h) walks them: where each
// row is, its raw object and variables, the stage of each output, the custom id of each request, plus the small
// formatting helpers the steps share. Deterministic: two walks of an unchanged shard see the same rows in the
// same order, which is what lets a re-run find its journaled chunks again. Not thread-safe (one walk at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/value.h"
#include "data/dataset.h"
#include "pipeline/row_transform.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::batch {

// The parts (splits) of one dataset and the row range of this shard in each.
struct ShardPlan {
  std::vector<DatasetPart> parts;
  std::vector<RowRange> ranges;
};
Result<ShardPlan> PlanShardDataset(Env* env, const config::DatasetConfig& dc, int64_t num_shards, int64_t shard_id);

// One row as the shard sees it: where it is, its raw object and its variables (or why it has none).
struct RowCtx {
  size_t dataset = 0, part = 0;
  uint64_t index = 0;
  std::string source;  // FILE:LINE
  Value row;
  Value vars;
  bool ok = true;
  pipeline::RowError error;
};

using RowFn = std::function<Status(RowCtx&, const pipeline::RowTransform&)>;
// Calls fn for every row of the shard, dataset by dataset, part by part, in order; rows that do not parse or
// extract come with ok=false. begin_dataset / end_dataset (optional) frame each dataset. Errors: the first one
// of a hook or fn, a read error, kUnavailable "interrupted" on a stop request.
Status ForEachShardRow(Env* env, const config::Config& config, int64_t shard_id, const RowFn& fn,
                       const std::function<Status(size_t, const ShardPlan&)>& begin_dataset = nullptr,
                       const std::function<Status(size_t)>& end_dataset = nullptr);

// The stage of every output: 0 unless its prompt reads an earlier batch output, then one more than that one's.
std::vector<int64_t> OutputStages(const config::Config& config);
int64_t NumStages(const std::vector<int64_t>& stages);

// The request id of output `o` of row `c`: unique across outputs, shards, datasets and splits; the same on every
// retry; only [A-Za-z0-9_-] besides the output name (before the provider's normalisation).
std::string CustomId(const config::OutputVar& o, const std::string& modality, int64_t shard, const RowCtx& c);
// The custom id as sent (Anthropic's normalisation applied; unchanged when it cannot be normalised).
std::string SentCustomId(const std::string& provider, const std::string& raw);

// The row's images for a request, in variable-name order (paths or URLs as given, binary columns as data: URIs);
// empty: a text row.
std::vector<std::string> RowImages(const config::Config& config, const RowCtx& c);
// Whether the row has an image (its requests are "multimodal", else "text").
bool HasImages(const config::Config& config, const RowCtx& c);

std::string Pad6(int64_t n);
std::string RandomRunId();        // 6 random hex digits
std::string UtcIsoNow(Env* env);  // ISO-8601 with microseconds and +00:00, as Python's isoformat()
std::string StripSpace(const std::string& s);

}  // namespace mmirage::batch

// Resume identity: what a dataset's shard output is made from, so that a partial output (journal) or a published
// shard is only ever continued or kept for the same thing. It is a JSON object, stored in the
// shard's journal.json and _mmirage.json (docs/state_format.md):
//   {"format_version": 2,                        this layout of the identity and of the shard's files
//    "config": "<16 hex>",                       hash of the YAML text
//    "vars": {"VAR": "<16 hex>" | null, …},      every environment variable the config expanded but SLURM_* (where
//                                                a task runs, not what it computes), hash of its value (null:
//                                                unset) — never the value itself
//    "dataset": d, "shard": s, "num_shards": n,  the shard layout
//    "inputs": [{"split", "path", "size", "mtime" (µs), "head", "tail"}, …]}  each input file in reading order, with
//                                                hashes of its first and last 64 KiB
// Its fingerprint is a 64-bit hash of that JSON text. Thread-safety: pure functions of their arguments and files.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "data/value.h"
#include "util/env.h"

namespace mmirage::pipeline {

inline constexpr int64_t kShardFormatVersion = 2;

// The identity of shard `shard_id` of dataset `dataset_index` of `config`. Never fails: input files that cannot be
// resolved or read are recorded with an "error" (the run fails on them anyway, with a clearer message).
Value DatasetIdentity(Env* env, const config::Config& config, size_t dataset_index, int64_t shard_id);

uint64_t IdentityFingerprint(const Value& identity);

// What differs from `before` to `now`, for a warning: e.g. "input data/a.jsonl changed (size 123 → 456)",
// "config changed", "${VAR} expanded differently", "format version changed (1 → 2)"; several joined by "; ".
// `before` may be null (an output written before identities were recorded).
std::string DescribeIdentityChange(const Value& before, const Value& now);

}  // namespace mmirage::pipeline

// InputIdentity: a 64-bit digest of what a dataset's input files are — for each file in reading order its path,
// size and a hash of its first 64 KiB — folded into the resume fingerprint, so that changed input data is never
// mixed with rows written from the old data (issue #13, item 6). Thread-safety: a pure function of the files.
#pragma once

#include <cstdint>

#include "config/config.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::pipeline {

// Errors: those of resolving the dataset's files (kNotFound for a pattern matching nothing) and of reading them.
Result<uint64_t> InputIdentity(Env* env, const config::DatasetConfig& dataset);

}  // namespace mmirage::pipeline

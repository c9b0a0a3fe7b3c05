// ShardStatus: the state of a shard as recorded in its status.json ("status" key, docs/state_format.md).
// Code decides on the enum; the text appears only where status.json is written or read and where a status is
// shown to users. Thread-safety: pure functions.
#pragma once

#include <string_view>

namespace mmirage {

enum class ShardStatus {
  kMissing,    // no status.json
  kUnknown,    // status.json unreadable, or its "status" is not one of the others
  kRunning,    // an attempt is (or was, when its worker died) under way
  kSubmitted,  // batch_api: the requests are with the provider
  kSuccess,
  kFailed,
};

// "missing", "unknown", "running", "submitted", "success", "failed".
const char* ShardStatusName(ShardStatus s);
// The status named `text` (ShardStatusName's spelling); kUnknown for any other text.
ShardStatus ParseShardStatus(std::string_view text);

}  // namespace mmirage

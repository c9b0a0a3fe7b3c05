#include "state/shard_status.h"

namespace mmirage {

const char* ShardStatusName(ShardStatus s) {
  switch (s) {
    case ShardStatus::kMissing: return "missing";
    case ShardStatus::kUnknown: return "unknown";
    case ShardStatus::kRunning: return "running";
    case ShardStatus::kSubmitted: return "submitted";
    case ShardStatus::kSuccess: return "success";
    case ShardStatus::kFailed: return "failed";
  }
  return "unknown";
}

ShardStatus ParseShardStatus(std::string_view text) {
  for (ShardStatus s : {ShardStatus::kMissing, ShardStatus::kRunning, ShardStatus::kSubmitted, ShardStatus::kSuccess,
                        ShardStatus::kFailed}) {
    if (text == ShardStatusName(s)) return s;
  }
  return ShardStatus::kUnknown;
}

}  // namespace mmirage

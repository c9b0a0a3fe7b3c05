#include "engine/engine.h"

namespace mmirage::engine {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kError: return "error";
  }
  return "error";
}

}  // namespace mmirage::engine

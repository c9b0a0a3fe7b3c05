// Local network helpers (implementation in net_posix.cc). Thread-safe; no state.
#pragma once

#include "util/status.h"

namespace mmirage {

// A TCP port on 127.0.0.1 that was free a moment ago: bind port 0, read the port back, close. Another process may
// take it before the caller binds it; callers that start a server on it detect that by the server failing.
// Errors: kIOError.
Result<int> FindFreeLoopbackPort();

}  // namespace mmirage

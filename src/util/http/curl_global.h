// The one owner of libcurl's process-wide initialisation: every file of util/http/ calls EnsureCurlGlobalInit()
// before it creates a curl handle. curl_global_init is not thread-safe in older libcurl versions, so exactly one
// call, guarded by one once-flag, may ever run. Thread-safe.
#pragma once

namespace mmirage::internal {

void EnsureCurlGlobalInit();

}  // namespace mmirage::internal

#include "util/http/curl_global.h"

#include <curl/curl.h>

#include <mutex>

namespace mmirage::internal {

void EnsureCurlGlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace mmirage::internal

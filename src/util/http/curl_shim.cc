// libcurl on first use. mmirage does not link libcurl (with its ~25 libraries, about a third of the start-up time
// of a command that never speaks HTTP): this file defines the curl_* functions that util/http/ calls, and each one
// forwards to libcurl, loaded with the shared module libmmirage_curl.so (util/module.h; the module links libcurl)
// the first time any of them runs. The rest of util/http/ includes <curl/curl.h> and calls curl as usual.
//
// A function used by util/http/ that is missing here is a link error naming it: add it below.
// When the module cannot be loaded, one error line says why, and each function fails as libcurl does when it
// cannot allocate: curl_easy_init/curl_multi_init return NULL (callers report "curl_easy_init failed"), the others
// an error code; nothing crashes. Thread-safe: the module is loaded once, under a once-flag.
#define CURL_DISABLE_TYPECHECK  // the typed curl_easy_setopt/getinfo macros would rename the definitions below
#include <curl/curl.h>

#include <cstdarg>
#include <type_traits>
#include <mutex>

#include "util/log.h"
#include "util/module.h"

namespace mmirage::internal {
namespace {

void* CurlModule() {
  static void* module = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    auto m = LoadModule("libmmirage_curl.so", "HTTP client, libcurl");
    if (m.ok()) {
      module = *m;
    } else {
      LOG_ERROR(m.status().message());
    }
  });
  return module;
}

// libcurl's `name`, as the type of our own definition of it; nullptr when libcurl is not loaded.
template <typename F>
F Real(F, const char* name) {
  static_assert(std::is_pointer_v<F>);
  return reinterpret_cast<F>(ModuleSymbol(CurlModule(), name));
}

}  // namespace
}  // namespace mmirage::internal

// Each function resolves libcurl's once (a function-local static) and calls it.
#define MMIRAGE_CURL_REAL(fn) static const auto real = ::mmirage::internal::Real(&::fn, #fn)

extern "C" {

CURLcode curl_global_init(long flags) {
  MMIRAGE_CURL_REAL(curl_global_init);
  return real != nullptr ? real(flags) : CURLE_FAILED_INIT;
}

CURL* curl_easy_init(void) {
  MMIRAGE_CURL_REAL(curl_easy_init);
  return real != nullptr ? real() : nullptr;
}

void curl_easy_cleanup(CURL* curl) {
  MMIRAGE_CURL_REAL(curl_easy_cleanup);
  if (real != nullptr) real(curl);
}

void curl_easy_reset(CURL* curl) {
  MMIRAGE_CURL_REAL(curl_easy_reset);
  if (real != nullptr) real(curl);
}

CURLcode curl_easy_perform(CURL* curl) {
  MMIRAGE_CURL_REAL(curl_easy_perform);
  return real != nullptr ? real(curl) : CURLE_FAILED_INIT;
}

const char* curl_easy_strerror(CURLcode code) {
  MMIRAGE_CURL_REAL(curl_easy_strerror);
  return real != nullptr ? real(code) : "libcurl is not loaded";
}

// The one argument after `option` is a long, an object pointer, a function pointer or a curl_off_t, by the
// option's number range (curl.h's CURLOPTTYPE_*); each is passed on as that type.
CURLcode curl_easy_setopt(CURL* curl, CURLoption option, ...) {
  MMIRAGE_CURL_REAL(curl_easy_setopt);
  if (real == nullptr) return CURLE_FAILED_INIT;
  va_list ap;
  va_start(ap, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    rc = real(curl, option, va_arg(ap, long));
  } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
    rc = real(curl, option, va_arg(ap, void*));
  } else if (option < CURLOPTTYPE_OFF_T) {
    rc = real(curl, option, va_arg(ap, void (*)(void)));
  } else if (option < CURLOPTTYPE_BLOB) {
    rc = real(curl, option, va_arg(ap, curl_off_t));
  } else {
    rc = real(curl, option, va_arg(ap, void*));
  }
  va_end(ap);
  return rc;
}

// Every CURLINFO takes a pointer to where the answer goes.
CURLcode curl_easy_getinfo(CURL* curl, CURLINFO info, ...) {
  MMIRAGE_CURL_REAL(curl_easy_getinfo);
  if (real == nullptr) return CURLE_FAILED_INIT;
  va_list ap;
  va_start(ap, info);
  CURLcode rc = real(curl, info, va_arg(ap, void*));
  va_end(ap);
  return rc;
}

curl_slist* curl_slist_append(curl_slist* list, const char* data) {
  MMIRAGE_CURL_REAL(curl_slist_append);
  return real != nullptr ? real(list, data) : nullptr;
}

void curl_slist_free_all(curl_slist* list) {
  MMIRAGE_CURL_REAL(curl_slist_free_all);
  if (real != nullptr) real(list);
}

curl_mime* curl_mime_init(CURL* easy) {
  MMIRAGE_CURL_REAL(curl_mime_init);
  return real != nullptr ? real(easy) : nullptr;
}

void curl_mime_free(curl_mime* mime) {
  MMIRAGE_CURL_REAL(curl_mime_free);
  if (real != nullptr) real(mime);
}

curl_mimepart* curl_mime_addpart(curl_mime* mime) {
  MMIRAGE_CURL_REAL(curl_mime_addpart);
  return real != nullptr ? real(mime) : nullptr;
}

CURLcode curl_mime_name(curl_mimepart* part, const char* name) {
  MMIRAGE_CURL_REAL(curl_mime_name);
  return real != nullptr ? real(part, name) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_data(curl_mimepart* part, const char* data, size_t datasize) {
  MMIRAGE_CURL_REAL(curl_mime_data);
  return real != nullptr ? real(part, data, datasize) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_filedata(curl_mimepart* part, const char* filename) {
  MMIRAGE_CURL_REAL(curl_mime_filedata);
  return real != nullptr ? real(part, filename) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_filename(curl_mimepart* part, const char* filename) {
  MMIRAGE_CURL_REAL(curl_mime_filename);
  return real != nullptr ? real(part, filename) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_type(curl_mimepart* part, const char* mimetype) {
  MMIRAGE_CURL_REAL(curl_mime_type);
  return real != nullptr ? real(part, mimetype) : CURLE_FAILED_INIT;
}

CURLM* curl_multi_init(void) {
  MMIRAGE_CURL_REAL(curl_multi_init);
  return real != nullptr ? real() : nullptr;
}

CURLMcode curl_multi_cleanup(CURLM* multi) {
  MMIRAGE_CURL_REAL(curl_multi_cleanup);
  return real != nullptr ? real(multi) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_add_handle(CURLM* multi, CURL* easy) {
  MMIRAGE_CURL_REAL(curl_multi_add_handle);
  return real != nullptr ? real(multi, easy) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_remove_handle(CURLM* multi, CURL* easy) {
  MMIRAGE_CURL_REAL(curl_multi_remove_handle);
  return real != nullptr ? real(multi, easy) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_perform(CURLM* multi, int* running_handles) {
  MMIRAGE_CURL_REAL(curl_multi_perform);
  return real != nullptr ? real(multi, running_handles) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_poll(CURLM* multi, curl_waitfd extra_fds[], unsigned int extra_nfds, int timeout_ms, int* ret) {
  MMIRAGE_CURL_REAL(curl_multi_poll);
  return real != nullptr ? real(multi, extra_fds, extra_nfds, timeout_ms, ret) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_wakeup(CURLM* multi) {
  MMIRAGE_CURL_REAL(curl_multi_wakeup);
  return real != nullptr ? real(multi) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_timeout(CURLM* multi, long* milliseconds) {
  MMIRAGE_CURL_REAL(curl_multi_timeout);
  return real != nullptr ? real(multi, milliseconds) : CURLM_INTERNAL_ERROR;
}

CURLMsg* curl_multi_info_read(CURLM* multi, int* msgs_in_queue) {
  MMIRAGE_CURL_REAL(curl_multi_info_read);
  return real != nullptr ? real(multi, msgs_in_queue) : nullptr;
}

// Every CURLMoption takes a long or a pointer (curl.h's CURLOPTTYPE_* ranges, as for curl_easy_setopt).
CURLMcode curl_multi_setopt(CURLM* multi, CURLMoption option, ...) {
  MMIRAGE_CURL_REAL(curl_multi_setopt);
  if (real == nullptr) return CURLM_INTERNAL_ERROR;
  va_list ap;
  va_start(ap, option);
  CURLMcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    rc = real(multi, option, va_arg(ap, long));
  } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
    rc = real(multi, option, va_arg(ap, void*));
  } else if (option < CURLOPTTYPE_OFF_T) {
    rc = real(multi, option, va_arg(ap, void (*)(void)));
  } else {
    rc = real(multi, option, va_arg(ap, curl_off_t));
  }
  va_end(ap);
  return rc;
}

}  // extern "C"

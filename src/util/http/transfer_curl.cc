// HttpTransfer over curl easy: bodies streamed from and to files.
#include <curl/curl.h>

#include <cstdio>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "util/http/curl_global.h"
#include "util/http/transfer.h"

namespace mmirage {
namespace {

struct State {
  HttpResponse response;
  std::FILE* in = nullptr;
  std::FILE* out = nullptr;
  std::string out_path;
  bool out_failed = false;
  long status_seen = 0;
  CURL* handle = nullptr;
};

bool StartsWithNoCase(const char* s, size_t n, const char* prefix) {
  size_t m = std::strlen(prefix);
  return n >= m && strncasecmp(s, prefix, m) == 0;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<State*>(user);
  size_t len = size * n;
  if (StartsWithNoCase(data, len, "HTTP/")) {
    st->response.retry_after.clear();
  } else if (StartsWithNoCase(data, len, "retry-after:")) {
    std::string v(data + 12, len - 12);
    size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t\r\n");
    st->response.retry_after = b == std::string::npos ? "" : v.substr(b, e - b + 1);
  }
  return len;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<State*>(user);
  size_t len = size * n;
  long code = 0;
  curl_easy_getinfo(st->handle, CURLINFO_RESPONSE_CODE, &code);
  if (code == 200 && !st->out_path.empty()) {
    if (st->out == nullptr && !st->out_failed) {
      st->out = std::fopen(st->out_path.c_str(), "wbe");
      if (st->out == nullptr) st->out_failed = true;
    }
    if (st->out == nullptr || std::fwrite(data, 1, len, st->out) != len) {
      st->out_failed = true;
      return 0;  // aborts the transfer
    }
    return len;
  }
  st->response.body.append(data, len);
  return len;
}

size_t OnRead(char* buf, size_t size, size_t n, void* user) {
  return std::fread(buf, 1, size * n, static_cast<std::FILE*>(user));
}

}  // namespace

HttpResponse HttpTransfer(const HttpRequest& r, const HttpTransferOptions& o) {
  internal::EnsureCurlGlobalInit();
  State st;
  st.out_path = o.response_path;
  CURL* h = curl_easy_init();
  if (h == nullptr) {
    st.response.transport = HttpTransport::kBroken;
    st.response.error = "curl_easy_init failed";
    return st.response;
  }
  st.handle = h;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  curl_mime* mime = nullptr;
  curl_easy_setopt(h, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "mmirage/" MMIRAGE_VERSION);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  if (r.timeout_seconds > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout_seconds * 1000));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
  // A stalled transfer (< 1 byte/s for 120 s) is broken, whatever the overall timeout.
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 120L);
  for (const auto& hd : r.headers) headers = curl_slist_append(headers, hd.c_str());
  headers = curl_slist_append(headers, "Expect:");
  if (o.multipart) {
    mime = curl_mime_init(h);
    for (const auto& [k, v] : o.fields) {
      curl_mimepart* part = curl_mime_addpart(mime);
      curl_mime_name(part, k.c_str());
      curl_mime_data(part, v.c_str(), CURL_ZERO_TERMINATED);
    }
    curl_mimepart* part = curl_mime_addpart(mime);
    curl_mime_name(part, o.file.field.c_str());
    if (curl_mime_filedata(part, o.file.path.c_str()) != CURLE_OK) {
      st.response.transport = HttpTransport::kBroken;
      st.response.error = "cannot read " + o.file.path;
    }
    curl_mime_filename(part, o.file.filename.c_str());
    if (!o.file.content_type.empty()) curl_mime_type(part, o.file.content_type.c_str());
    curl_easy_setopt(h, CURLOPT_MIMEPOST, mime);
  } else if (!o.body_path.empty()) {
    st.in = std::fopen(o.body_path.c_str(), "rbe");
    if (st.in == nullptr) {
      st.response.transport = HttpTransport::kBroken;
      st.response.error = "cannot read " + o.body_path + ": " + std::strerror(errno);
    } else {
      std::fseek(st.in, 0, SEEK_END);
      long size = std::ftell(st.in);
      std::fseek(st.in, 0, SEEK_SET);
      curl_easy_setopt(h, CURLOPT_POST, 1L);
      curl_easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
      curl_easy_setopt(h, CURLOPT_READDATA, st.in);
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(size));
    }
  } else if (r.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  } else if (r.method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &st);
  if (st.response.error.empty()) {
    CURLcode code = curl_easy_perform(h);
    if (code == CURLE_OK) {
      long status = 0;
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
      st.response.transport = HttpTransport::kOk;
      st.response.status_code = static_cast<int>(status);
      // An empty 200 body still makes the (empty) file.
      if (status == 200 && !st.out_path.empty() && st.out == nullptr && !st.out_failed) {
        st.out = std::fopen(st.out_path.c_str(), "wbe");
        if (st.out == nullptr) st.out_failed = true;
      }
    } else {
      st.response.error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(code);
      st.response.transport = code == CURLE_OPERATION_TIMEDOUT ? HttpTransport::kTimeout
                              : (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST)
                                  ? HttpTransport::kConnect
                                  : HttpTransport::kBroken;
    }
  }
  if (st.out != nullptr && std::fclose(st.out) != 0) st.out_failed = true;
  if (st.out_failed && st.response.transport == HttpTransport::kOk) {
    st.response.transport = HttpTransport::kBroken;
    st.response.error = "cannot write " + st.out_path;
  }
  if (st.in != nullptr) std::fclose(st.in);
  curl_slist_free_all(headers);
  if (mime != nullptr) curl_mime_free(mime);
  curl_easy_cleanup(h);
  return std::move(st.response);
}

}  // namespace mmirage

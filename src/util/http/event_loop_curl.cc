// HttpLoop over libcurl's multi interface: one thread runs posted tasks, due timers and every transfer
// (curl_multi_perform + curl_multi_poll, woken by curl_multi_wakeup when a task is posted).
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "util/http/curl_global.h"
#include "util/http/event_loop.h"

namespace mmirage {
namespace {

constexpr long kMaxConnectTimeoutMs = 30000;
constexpr int kMaxPollMs = 1000;

uint64_t MonotonicNowMicros() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

bool StartsWithNoCase(const char* s, size_t n, const char* prefix) {
  size_t m = std::strlen(prefix);
  return n >= m && strncasecmp(s, prefix, m) == 0;
}

// One transfer: the request (its body must outlive the transfer), what came back, and its callback.
struct Transfer {
  HttpRequest request;
  HttpResponse response;
  HttpCallback done;
  curl_slist* headers = nullptr;
  char errbuf[CURL_ERROR_SIZE] = {0};
  ~Transfer() { curl_slist_free_all(headers); }
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  static_cast<Transfer*>(user)->response.body.append(data, size * n);
  return size * n;
}

std::string TrimmedValue(const char* data, size_t len) {
  std::string v(data, len);
  size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : v.substr(b, e - b + 1);
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  if (StartsWithNoCase(data, len, "HTTP/")) {
    t->response.retry_after.clear();  // a new response (after a redirect or an interim 1xx)
    t->response.rate_limit_headers.clear();
  } else if (StartsWithNoCase(data, len, "retry-after:")) {
    t->response.retry_after = TrimmedValue(data + 12, len - 12);
  } else if (StartsWithNoCase(data, len, "x-ratelimit-") || StartsWithNoCase(data, len, "anthropic-ratelimit-")) {
    const char* colon = static_cast<const char*>(memchr(data, ':', len));
    if (colon != nullptr) {
      std::string name(data, static_cast<size_t>(colon - data));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t skip = static_cast<size_t>(colon - data) + 1;
      t->response.rate_limit_headers.emplace_back(std::move(name), TrimmedValue(colon + 1, len - skip));
    }
  }
  return len;
}

// Configures `h` for `t` (a fresh or reset handle).
void SetUp(CURL* h, Transfer* t) {
  const HttpRequest& r = t->request;
  curl_easy_setopt(h, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "mmirage/" MMIRAGE_VERSION);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t->errbuf);
  long timeout_ms = r.timeout_seconds > 0 ? std::max(1L, static_cast<long>(r.timeout_seconds * 1000)) : 0L;
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   timeout_ms > 0 ? std::min(timeout_ms, kMaxConnectTimeoutMs) : kMaxConnectTimeoutMs);
  for (const auto& hd : r.headers) t->headers = curl_slist_append(t->headers, hd.c_str());
  if (r.method == "POST") {
    // No `Expect: 100-continue` round trip for bodies over 1 KiB; JSON unless the caller says otherwise.
    t->headers = curl_slist_append(t->headers, "Expect:");
    bool has_type = std::any_of(r.headers.begin(), r.headers.end(), [](const std::string& hd) {
      return StartsWithNoCase(hd.data(), hd.size(), "content-type:");
    });
    if (!has_type) t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  } else {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(h, CURLOPT_PRIVATE, t);
}

// Fills t->response from the transfer's result code.
void Finish(CURL* h, CURLcode code, Transfer* t) {
  HttpResponse& resp = t->response;
  if (code == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    resp.transport = HttpTransport::kOk;
    resp.status_code = static_cast<int>(status);
    return;
  }
  resp.error = t->errbuf[0] != '\0' ? t->errbuf : curl_easy_strerror(code);
  resp.status_code = 0;
  resp.body.clear();
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT: resp.transport = HttpTransport::kConnect; break;
    case CURLE_OPERATION_TIMEDOUT: {
      // A connect timeout means unreachable; after the request went out (on a new or a reused keep-alive
      // connection, whose connect time reads 0) it is a response timeout.
      long request_bytes = 0;
      curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &request_bytes);
      resp.transport = request_bytes == 0 ? HttpTransport::kConnect : HttpTransport::kTimeout;
      break;
    }
    default: resp.transport = HttpTransport::kBroken;
  }
}

class CurlHttpLoop : public HttpLoop {
 public:
  explicit CurlHttpLoop(CURLM* multi) : multi_(multi) {
    thread_ = std::thread([this] { Run(); });
  }
  ~CurlHttpLoop() override {
    Stop();
    for (CURL* h : idle_) curl_easy_cleanup(h);
    curl_multi_cleanup(multi_);
  }

  bool Post(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return false;
      posted_.push_back(std::move(fn));
    }
    curl_multi_wakeup(multi_);
    return true;
  }

  void Send(HttpRequest request, HttpCallback done) override {
    auto t = std::make_unique<Transfer>();
    t->request = std::move(request);
    t->done = std::move(done);
    if (aborting_) {
      t->response.transport = HttpTransport::kAborted;
      t->response.error = "aborted";
      t->done(std::move(t->response));
      return;
    }
    CURL* h = nullptr;
    if (!idle_.empty()) {
      h = idle_.back();
      idle_.pop_back();
      curl_easy_reset(h);
    } else {
      h = curl_easy_init();
    }
    if (h == nullptr) {
      t->response.transport = HttpTransport::kBroken;
      t->response.error = "curl_easy_init failed";
      t->done(std::move(t->response));
      return;
    }
    SetUp(h, t.get());
    curl_multi_add_handle(multi_, h);
    transfers_[h] = std::move(t);
  }

  void RunAfter(uint64_t delay_micros, std::function<void()> fn) override {
    timers_.emplace(NowMicros() + delay_micros, std::move(fn));
  }

  uint64_t NowMicros() override { return MonotonicNowMicros(); }

  void Stop() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
    }
    curl_multi_wakeup(multi_);
    std::lock_guard<std::mutex> l(join_mu_);
    if (thread_.joinable()) thread_.join();
  }

 private:
  bool RunPosted() {
    std::vector<std::function<void()>> tasks;
    bool stopping;
    {
      std::lock_guard<std::mutex> l(mu_);
      tasks.swap(posted_);
      stopping = stopping_;
    }
    for (auto& fn : tasks) fn();
    return stopping;
  }

  void RunDueTimers() {
    uint64_t now = NowMicros();
    while (!timers_.empty() && timers_.begin()->first <= now) {
      auto fn = std::move(timers_.begin()->second);
      timers_.erase(timers_.begin());
      fn();
    }
  }

  void Complete(CURL* h, CURLcode code) {
    auto it = transfers_.find(h);
    curl_multi_remove_handle(multi_, h);
    if (it == transfers_.end()) {
      curl_easy_cleanup(h);
      return;
    }
    std::unique_ptr<Transfer> t = std::move(it->second);
    transfers_.erase(it);
    Finish(h, code, t.get());
    idle_.push_back(h);
    t->done(std::move(t->response));
  }

  void Run() {
    while (true) {
      bool stopping = RunPosted();
      if (stopping) {
        RunPosted();  // tasks accepted just before stopping_ was set
        break;
      }
      RunDueTimers();
      int running = 0;
      curl_multi_perform(multi_, &running);
      int left = 0;
      while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
        if (m->msg == CURLMSG_DONE) Complete(m->easy_handle, m->data.result);
      }
      long curl_ms = -1;
      curl_multi_timeout(multi_, &curl_ms);
      long wait_ms = curl_ms >= 0 ? std::min<long>(curl_ms, kMaxPollMs) : kMaxPollMs;
      if (!timers_.empty()) {
        uint64_t now = NowMicros(), due = timers_.begin()->first;
        long timer_ms = due <= now ? 0 : static_cast<long>((due - now + 999) / 1000);
        wait_ms = std::min(wait_ms, timer_ms);
      }
      if (wait_ms > 0) curl_multi_poll(multi_, nullptr, 0, static_cast<int>(wait_ms), nullptr);
    }
    // Stop: abort what is in flight; timers are dropped unrun.
    aborting_ = true;
    while (!transfers_.empty()) {
      auto it = transfers_.begin();
      CURL* h = it->first;
      std::unique_ptr<Transfer> t = std::move(it->second);
      transfers_.erase(it);
      curl_multi_remove_handle(multi_, h);
      idle_.push_back(h);
      t->response = HttpResponse{};
      t->response.transport = HttpTransport::kAborted;
      t->response.error = "aborted";
      t->done(std::move(t->response));
    }
    timers_.clear();
  }

  CURLM* multi_;
  std::thread thread_;
  std::mutex join_mu_;
  std::mutex mu_;
  bool stopping_ = false;                      // guarded by mu_
  std::vector<std::function<void()>> posted_;  // guarded by mu_
  // Loop thread only.
  bool aborting_ = false;
  std::unordered_map<CURL*, std::unique_ptr<Transfer>> transfers_;
  std::multimap<uint64_t, std::function<void()>> timers_;  // by due time (monotonic µs)
  std::vector<CURL*> idle_;                                // finished handles, reused
};

}  // namespace

Result<std::unique_ptr<HttpLoop>> NewCurlHttpLoop(int max_connections) {
  internal::EnsureCurlGlobalInit();
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) return Status::Internal("curl_multi_init failed");
  if (max_connections > 0) {
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(max_connections));
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(max_connections));
  }
  return std::unique_ptr<HttpLoop>(new CurlHttpLoop(multi));
}

HttpResponse HttpFetch(const HttpRequest& request) {
  internal::EnsureCurlGlobalInit();
  Transfer t;
  t.request = request;
  CURL* h = curl_easy_init();
  if (h == nullptr) {
    t.response.transport = HttpTransport::kBroken;
    t.response.error = "curl_easy_init failed";
    return t.response;
  }
  SetUp(h, &t);
  CURLcode code = curl_easy_perform(h);
  Finish(h, code, &t);
  curl_easy_cleanup(h);
  return std::move(t.response);
}

}  // namespace mmirage

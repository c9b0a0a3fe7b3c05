// Asynchronous HTTP: an event loop that runs many transfers at once on one thread (libcurl multi, in
// event_loop_curl.cc), plus timers and posted tasks, so a client (the OpenAI engine) keeps all of its state on that
// one thread without locks.
//
// Thread-safety: Post may be called from any thread. Send, RunAfter and NowMicros are for the loop thread only
// (from inside a posted task, a timer or a transfer callback). Stop may be called from any thread except the loop
// thread. Callbacks run on the loop thread and must not block.
// Ownership: the loop owns its thread, its transfers and the callbacks it was given until they have run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "util/status.h"

namespace mmirage {

struct HttpRequest {
  std::string method = "POST";  // GET | POST
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; never logged nor put into error messages
  std::string body;                  // POST body (sent as is)
  double timeout_seconds = 0;        // whole transfer, connection included; 0 = none
};

// How a transfer failed below HTTP.
enum class HttpTransport {
  kOk,       // an HTTP response arrived (any status code)
  kConnect,  // the host could not be resolved or the connection was refused: the endpoint is unreachable
  kTimeout,  // timeout_seconds passed before the response was complete
  kBroken,   // the connection broke (reset, closed before or during the response)
  kAborted,  // the loop stopped before the transfer ended
};

struct HttpResponse {
  HttpTransport transport = HttpTransport::kOk;
  int status_code = 0;  // when transport == kOk
  std::string body;
  std::string retry_after;  // the Retry-After header value, "" when absent
  std::string error;        // curl's message when transport != kOk (no URL, no headers)
  // The rate-limit headers (x-ratelimit-*, anthropic-ratelimit-*), names lower-cased, values trimmed.
  std::vector<std::pair<std::string, std::string>> rate_limit_headers;
};

using HttpCallback = std::function<void(HttpResponse)>;

class HttpLoop {
 public:
  virtual ~HttpLoop() = default;

  // Runs `fn` on the loop thread, in posting order, before the next transfer or timer work. Returns false (and
  // drops `fn` without running it) once Stop has begun; every task accepted before that runs.
  virtual bool Post(std::function<void()> fn) = 0;
  // Starts a transfer; `done` runs exactly once: with the response, a transport failure, or kAborted at Stop.
  virtual void Send(HttpRequest request, HttpCallback done) = 0;
  // Runs `fn` once after `delay_micros` (monotonic clock). Timers still pending at Stop are dropped unrun.
  virtual void RunAfter(uint64_t delay_micros, std::function<void()> fn) = 0;
  virtual uint64_t NowMicros() = 0;  // monotonic
  // Runs the tasks already posted, aborts the transfers in flight (their callbacks run with kAborted), drops
  // the timers and joins the thread. Idempotent; the destructor calls it.
  virtual void Stop() = 0;
};

// A loop over libcurl multi with connection reuse (keep-alive) and no `Expect: 100-continue` round trip.
// `max_connections` bounds the connections curl keeps open (0 = curl's default).
// Errors: kInternal when curl cannot be initialised.
Result<std::unique_ptr<HttpLoop>> NewCurlHttpLoop(int max_connections = 0);

// One blocking request (its own curl handle; any thread). Transport failures are reported in the response.
HttpResponse HttpFetch(const HttpRequest& request);

}  // namespace mmirage

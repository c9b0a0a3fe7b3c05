// Faults, per request (the same scheduler as the embedded engine sees only the final Completion):
//  - HTTP 408/409/429/5xx, a broken connection, no response within timeout_seconds, a connection that cannot be
//    made, a malformed 2xx body: retried up to max_retries times after an exponential backoff with full jitter
//    (backoff_base_seconds × 2^(n−1), at most backoff_max_seconds), and at least the server's Retry-After (capped
//    at max_retry_after_seconds). A request waiting for its retry does not hold a concurrency slot. When the
//    retries are used up: kError with kUnavailable "<last error> (gave up after N attempts)".
//  - other HTTP 4xx (a prompt longer than the context, a bad schema, a wrong model or key): kInvalidArgument
//    "HTTP 400: <server message>", not retried.
//  - endpoint down: once connections have failed (no HTTP response at all) for down_timeout_seconds, the
//    endpoint is declared down for good: every queued, waiting and later request fails at once with kUnavailable
//    "endpoint <base_url> unreachable for N s" (logged once), instead of each request spending its retries.
// The API key is sent as "Authorization: Bearer …" and never logged nor put in an error message.
//
// Images (Request::images) are `image_url` content parts of the user message, where their markers are; local
// files are read in Submit and sent, like image bytes, as base64 data: URLs with their MIME type (sniffed from the
// bytes); http(s) URLs are passed through for the server to fetch. An unreadable file, bytes of no known image
// type, or images with the completion API: kInvalidArgument.
//
// Threading: a request whose body cannot be built also gets its callback (kInvalidArgument) on the loop thread;
// a Submit after Shutdown runs its callback at once on the caller's thread.

#include "engine/openai_engine.h"

#include <atomic>
#include <cmath>
#include <deque>
#include <mutex>
#include <random>
#include <unordered_map>

#include "data/json.h"
#include "engine/anthropic_protocol.h"
#include "util/env.h"
#include "util/http/event_loop.h"
#include "util/log.h"

namespace mmirage::engine {
namespace {

constexpr double kDiscoverTimeoutSeconds = 10;

uint64_t Micros(double seconds) { return static_cast<uint64_t>(std::max(0.0, seconds) * 1e6); }

// The model the endpoint serves: the first id of GET {base}/models, or "" when that fails.
std::string DiscoverModel(const std::string& base) {
  HttpRequest r;
  r.method = "GET";
  r.url = base + "/models";
  r.timeout_seconds = kDiscoverTimeoutSeconds;
  HttpResponse resp = HttpFetch(r);
  if (resp.transport != HttpTransport::kOk || resp.status_code != 200) return "";
  auto v = ParseJson(resp.body);
  if (!v.ok()) return "";
  const Value* data = v->Find("data");
  if (data == nullptr || !data->is_array() || data->size() == 0 || !data->as_array()[0].is_object()) return "";
  const Value* id = data->as_array()[0].Find("id");
  return id != nullptr && id->is_string() ? id->as_string() : "";
}

class OpenAiEngine : public Engine, public AdmissionSource {
 public:
  OpenAiEngine(const OpenAiEngineOptions& o, std::unique_ptr<HttpLoop> owned)
      : opt_(o),
        owned_loop_(std::move(owned)),
        loop_(o.loop != nullptr ? o.loop : owned_loop_.get()),
        env_(o.env != nullptr ? o.env : Env::Default()),
        rng_(o.jitter_seed != 0 ? o.jitter_seed : std::random_device{}()),
        admission_(o.admission) {
    if (admission_ == nullptr) {
      AdmissionOptions ao;
      ao.name = o.base_url;
      ao.requests_per_minute = o.requests_per_minute;
      ao.tokens_per_minute = o.tokens_per_minute;
      ao.budget_shares = o.rate_limit_shares;
      if (!o.shared_budget_path.empty()) ao.shared = NewFileSharedCounters(o.shared_budget_path);
      ao.max_concurrency = o.max_concurrency;
      ao.adaptive = o.adaptive_concurrency;
      ao.now_micros = [loop = loop_] { return loop->NowMicros(); };  // admission runs on the loop thread only
      admission_ = std::make_shared<AdmissionController>(std::move(ao));
    }
    while (!opt_.base_url.empty() && opt_.base_url.back() == '/') opt_.base_url.pop_back();
    if (opt_.api == HttpApi::kAnthropic) {
      if (!opt_.api_key.empty()) headers_.push_back("x-api-key: " + opt_.api_key);
      headers_.push_back("anthropic-version: " + opt_.anthropic_version);
    } else if (!opt_.api_key.empty()) {
      headers_.push_back("Authorization: Bearer " + opt_.api_key);
    }
  }
  ~OpenAiEngine() override { Shutdown(); }

  void Submit(Request request, CompletionCallback done) override;
  int Capacity() const override { return opt_.max_concurrency; }
  std::shared_ptr<const AdmissionController> Admission() const override { return admission_; }
  double LoadSeconds() const override { return opt_.load_seconds; }
  int NumGpus() const override { return opt_.num_gpus; }
  void Shutdown() override;

 private:
  enum class State { kQueued, kInFlight, kWaiting, kDone };
  struct Call {
    uint64_t id = 0;
    std::string url;
    std::string body;
    bool chat = true;
    CompletionCallback done;
    State state = State::kQueued;
    int retries = 0;
    bool transport_failure = false;  // the last attempt's connection was refused or broke
    int64_t estimated_tokens = 0;
    AdmissionPermit permit;
  };
  using CallPtr = std::shared_ptr<Call>;

  // Loop thread only, from here on.
  void Enqueue(CallPtr c);
  void Pump();
  void Start(const CallPtr& c);
  void OnResponse(const CallPtr& c, HttpResponse resp);
  void ReleasePermit(const CallPtr& c, const HttpResponse& resp, const Completion* completion);
  void Retry(const CallPtr& c, std::string error, const std::string& retry_after);
  bool CheckDown();
  void Finish(const CallPtr& c, Completion completion);
  void Fail(const CallPtr& c, Status s);
  void FailAllPending(const Status& s);

  OpenAiEngineOptions opt_;
  std::unique_ptr<HttpLoop> owned_loop_;
  HttpLoop* loop_;
  Env* env_;
  std::vector<std::string> headers_;
  std::atomic<bool> shut_down_{false};
  std::atomic<uint64_t> next_id_{1};
  std::once_flag shutdown_once_;
  // Loop thread state.
  std::deque<CallPtr> queue_;
  std::unordered_map<uint64_t, CallPtr> waiting_;  // backing off before a retry
  int in_flight_ = 0;
  bool stopping_ = false;
  uint64_t unreachable_since_us_ = 0;  // first connection failure since the last HTTP response; 0 = none
  Status down_;                        // non-OK once the endpoint is declared down
  std::mt19937_64 rng_;
  std::shared_ptr<AdmissionController> admission_;
  bool pump_timer_ = false;  // a Pump is scheduled for when the rate limits admit the next request
};

Completion ErrorCompletion(Status s) {
  Completion c;
  c.finish = FinishReason::kError;
  c.error = std::move(s);
  return c;
}

void OpenAiEngine::Submit(Request request, CompletionCallback done) {
  if (shut_down_.load()) {
    done(ErrorCompletion(Status::Unavailable("engine shut down")));
    return;
  }
  auto c = std::make_shared<Call>();
  c->id = next_id_.fetch_add(1);
  c->done = std::move(done);
  c->estimated_tokens = EstimateRequestTokens(request);
  Status build_error;
  // Local image files travel as data: URLs: read them here, on the caller's thread.
  for (ImageInput& im : request.images) {
    if (im.kind != ImageInput::Kind::kFile) continue;
    Result<std::string> bytes = env_->ReadFileToString(im.source);
    if (!bytes.ok()) {
      build_error = Status::InvalidArgument("image '" + im.source + "': " + bytes.status().message());
      break;
    }
    im.kind = ImageInput::Kind::kBytes;
    im.source = "'" + im.source + "'";
    im.bytes = std::move(*bytes);
  }
  Result<OpenAiCall> call = !build_error.ok() ? Result<OpenAiCall>(build_error)
                            : opt_.api == HttpApi::kAnthropic
                                ? BuildAnthropicCall(request, opt_.model, opt_.system_prompt)
                                : BuildOpenAiCall(request, opt_.mode, opt_.model);
  if (call.ok()) {
    c->url = opt_.base_url + call->path;
    c->body = std::move(call->body);
    c->chat = call->chat;
  } else {
    build_error = call.status();
  }
  bool posted = loop_->Post([this, c, build_error] {
    if (!build_error.ok()) {
      Fail(c, build_error);
      return;
    }
    Enqueue(c);
  });
  if (!posted) c->done(ErrorCompletion(Status::Unavailable("engine shut down")));
}

void OpenAiEngine::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    shut_down_.store(true);
    loop_->Post([this] {
      stopping_ = true;
      FailAllPending(Status::Unavailable("engine shut down"));
    });
    loop_->Stop();  // in-flight transfers come back as kAborted → "engine shut down"
  });
}

void OpenAiEngine::Enqueue(CallPtr c) {
  if (stopping_) return Fail(c, Status::Unavailable("engine shut down"));
  if (!down_.ok()) return Fail(c, down_);
  queue_.push_back(std::move(c));
  Pump();
}

void OpenAiEngine::Pump() {
  while (down_.ok() && !stopping_ && !queue_.empty()) {
    AdmissionDecision d = admission_->TryAcquire(queue_.front()->estimated_tokens);
    if (!d.permit) {
      if (d.wait_micros > 0 && !pump_timer_) {
        pump_timer_ = true;
        loop_->RunAfter(d.wait_micros, [this] {
          pump_timer_ = false;
          Pump();
        });
      }
      return;  // else a Release pumps again
    }
    CallPtr c = std::move(queue_.front());
    queue_.pop_front();
    c->permit = *d.permit;
    Start(c);
  }
}

void OpenAiEngine::Start(const CallPtr& c) {
  c->state = State::kInFlight;
  ++in_flight_;
  HttpRequest r;
  r.url = c->url;
  r.headers = headers_;
  r.body = c->body;  // kept in the call for a retry
  r.timeout_seconds = opt_.timeout_seconds;
  loop_->Send(std::move(r), [this, c](HttpResponse resp) { OnResponse(c, std::move(resp)); });
}

void OpenAiEngine::OnResponse(const CallPtr& c, HttpResponse resp) {
  --in_flight_;
  // Refused or broken: the server is gone. A timeout may be the request's own length, so it is not counted.
  c->transport_failure = resp.transport == HttpTransport::kConnect || resp.transport == HttpTransport::kBroken;
  if (stopping_ || resp.transport == HttpTransport::kAborted) {
    ReleasePermit(c, resp, nullptr);
    c->transport_failure = false;
    return Fail(c, Status::Unavailable("engine shut down"));
  }
  switch (resp.transport) {
    case HttpTransport::kOk: {
      unreachable_since_us_ = 0;
      if (resp.status_code >= 200 && resp.status_code < 300) {
        auto completion = opt_.api == HttpApi::kAnthropic ? ParseAnthropicResponse(resp.body)
                                                          : ParseOpenAiResponse(resp.body, c->chat);
        ReleasePermit(c, resp, completion.ok() ? &*completion : nullptr);
        if (completion.ok()) {
          Finish(c, std::move(*completion));
        } else {
          Retry(c, completion.status().message(), "");
        }
      } else if (IsRetryableHttpStatus(resp.status_code)) {
        ReleasePermit(c, resp, nullptr);
        Retry(c, DescribeHttpError(resp.status_code, resp.body), resp.retry_after);
      } else {
        ReleasePermit(c, resp, nullptr);
        Fail(c, Status::InvalidArgument(DescribeHttpError(resp.status_code, resp.body)));
      }
      break;
    }
    case HttpTransport::kConnect:
      ReleasePermit(c, resp, nullptr);
      if (unreachable_since_us_ == 0) unreachable_since_us_ = loop_->NowMicros();
      if (CheckDown()) {
        Fail(c, down_);
      } else {
        Retry(c, "cannot connect to " + opt_.base_url + " (" + resp.error + ")", "");
      }
      break;
    case HttpTransport::kTimeout:
      ReleasePermit(c, resp, nullptr);
      Retry(c, "no response within " + FormatDouble(opt_.timeout_seconds) + " s (timeout_seconds)", "");
      break;
    default: ReleasePermit(c, resp, nullptr); Retry(c, "connection broken (" + resp.error + ")", "");
  }
  Pump();
}

// Tells admission how the attempt went: overload answers slow the run down, usage corrects the token estimate.
void OpenAiEngine::ReleasePermit(const CallPtr& c, const HttpResponse& resp, const Completion* completion) {
  AdmissionOutcome outcome = AdmissionOutcome::kFailed;
  if (completion != nullptr) outcome = AdmissionOutcome::kOk;
  if (resp.transport == HttpTransport::kOk && IsOverloadHttpStatus(resp.status_code))
    outcome = AdmissionOutcome::kOverloaded;
  int64_t used = -1;
  if (completion != nullptr && completion->prompt_tokens + completion->completion_tokens > 0)
    used = completion->prompt_tokens + completion->completion_tokens;
  admission_->Release(c->permit, outcome, used, resp.rate_limit_headers);
}

void OpenAiEngine::Retry(const CallPtr& c, std::string error, const std::string& retry_after) {
  if (c->retries >= opt_.max_retries) {
    int attempts = c->retries + 1;
    return Fail(c, Status::Unavailable(error + " (gave up after " + std::to_string(attempts) + " attempt" +
                                       (attempts > 1 ? "s" : "") + ")"));
  }
  ++c->retries;
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  uint64_t delay =
      BackoffDelayMicros(c->retries, Micros(opt_.backoff_base_seconds), Micros(opt_.backoff_max_seconds), u);
  auto ra = ParseRetryAfterSeconds(retry_after, static_cast<int64_t>(env_->NowMicros() / 1000000));
  if (ra) delay = std::max(delay, Micros(std::min(*ra, opt_.max_retry_after_seconds)));
  LOG_DEBUG("openai: retry " << c->retries << "/" << opt_.max_retries << " in " << delay / 1000 << " ms after "
                             << error);
  c->state = State::kWaiting;
  waiting_[c->id] = c;
  loop_->RunAfter(delay, [this, c] {
    if (c->state != State::kWaiting) return;  // failed meanwhile (endpoint down, shutdown)
    waiting_.erase(c->id);
    if (stopping_) return Fail(c, Status::Unavailable("engine shut down"));
    if (!down_.ok()) return Fail(c, down_);
    c->state = State::kQueued;
    queue_.push_front(c);
    Pump();
  });
}

bool OpenAiEngine::CheckDown() {
  if (!down_.ok()) return true;
  if (unreachable_since_us_ == 0) return false;
  uint64_t now = loop_->NowMicros();
  double s = static_cast<double>(now - unreachable_since_us_) / 1e6;
  if (s < opt_.down_timeout_seconds) return false;
  down_ = Status::Unavailable("endpoint " + opt_.base_url + " unreachable for " +
                              std::to_string(static_cast<int64_t>(std::floor(s))) +
                              " s (down_timeout_seconds=" + FormatDouble(opt_.down_timeout_seconds) + ")");
  LOG_ERROR(down_.message() << "; failing every pending request");
  FailAllPending(down_);
  return true;
}

void OpenAiEngine::Finish(const CallPtr& c, Completion completion) {
  c->state = State::kDone;
  CompletionCallback done = std::move(c->done);
  done(std::move(completion));
}

void OpenAiEngine::Fail(const CallPtr& c, Status s) {
  Completion e = ErrorCompletion(std::move(s));
  e.transport_failure = c->transport_failure;
  Finish(c, std::move(e));
}

void OpenAiEngine::FailAllPending(const Status& s) {
  std::deque<CallPtr> queued;
  queued.swap(queue_);
  std::unordered_map<uint64_t, CallPtr> waiting;
  waiting.swap(waiting_);
  for (auto& c : queued) Fail(c, s);
  for (auto& [_, c] : waiting) Fail(c, s);
}

}  // namespace

Result<std::unique_ptr<Engine>> CreateOpenAiEngine(const OpenAiEngineOptions& options) {
  if (options.base_url.empty()) return Status::InvalidArgument("openai engine: empty base_url");
  if (options.max_concurrency < 1) return Status::InvalidArgument("openai engine: max_concurrency must be >= 1");
  if (options.max_retries < 0) return Status::InvalidArgument("openai engine: max_retries must be >= 0");
  if (options.api == HttpApi::kAnthropic && options.model.empty())
    return Status::InvalidArgument("anthropic engine: the Messages API needs a model (endpoint.model)");
  OpenAiEngineOptions o = options;
  while (!o.base_url.empty() && o.base_url.back() == '/') o.base_url.pop_back();
  if (o.model.empty() && o.loop == nullptr) {
    o.model = DiscoverModel(o.base_url);
    if (o.model.empty()) {
      LOG_WARN("openai engine: cannot get the model id from " << o.base_url << "/models; requests name no model");
    } else {
      LOG_INFO("openai engine: " << o.base_url << " serves model '" << o.model << "'");
    }
  }
  std::unique_ptr<HttpLoop> owned;
  if (o.loop == nullptr) { MMIRAGE_ASSIGN_OR_RETURN(owned, NewCurlHttpLoop(o.max_concurrency)); }
  return std::unique_ptr<Engine>(new OpenAiEngine(o, std::move(owned)));
}

}  // namespace mmirage::engine

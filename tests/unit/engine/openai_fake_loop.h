// A single-threaded HttpLoop for OpenAI engine tests: posted tasks run when the test says so, transfers wait
// until the test answers them, and timers fire when the test advances the fake clock. No threads, no sleeps.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "util/http/event_loop.h"

namespace mmirage::testing {

class FakeHttpLoop : public HttpLoop {
 public:
  struct Sent {
    HttpRequest request;
    HttpCallback done;
  };

  bool Post(std::function<void()> fn) override {
    if (stopped_) return false;
    posted_.push_back(std::move(fn));
    return true;
  }
  void Send(HttpRequest request, HttpCallback done) override {
    ++sends_;
    if (stopped_) {
      HttpResponse r;
      r.transport = HttpTransport::kAborted;
      done(std::move(r));
      return;
    }
    sent_.push_back({std::move(request), std::move(done)});
  }
  void RunAfter(uint64_t delay_micros, std::function<void()> fn) override {
    delays_.push_back(delay_micros);
    timers_.emplace(now_ + delay_micros, std::move(fn));
  }
  uint64_t NowMicros() override { return now_; }
  void Stop() override {
    if (stopped_) return;
    RunPosted();
    stopped_ = true;
    std::vector<Sent> sent;
    sent.swap(sent_);
    for (auto& s : sent) {
      HttpResponse r;
      r.transport = HttpTransport::kAborted;
      s.done(std::move(r));
    }
    timers_.clear();
  }

  // ---- test drivers ----
  void RunPosted() {
    while (!posted_.empty()) {
      auto fn = std::move(posted_.front());
      posted_.pop_front();
      fn();
    }
  }
  // Moves the clock forward, firing due timers in order (and what they post).
  void Advance(uint64_t micros) {
    uint64_t target = now_ + micros;
    while (!timers_.empty() && timers_.begin()->first <= target) {
      now_ = timers_.begin()->first;
      auto fn = std::move(timers_.begin()->second);
      timers_.erase(timers_.begin());
      fn();
      RunPosted();
    }
    now_ = target;
    RunPosted();
  }
  // Answers the oldest transfer in flight with `r`.
  void Respond(HttpResponse r) {
    Sent s = std::move(sent_.front());
    sent_.erase(sent_.begin());
    s.done(std::move(r));
    RunPosted();
  }
  void RespondStatus(int code, std::string body, std::string retry_after = "") {
    HttpResponse r;
    r.status_code = code;
    r.body = std::move(body);
    r.retry_after = std::move(retry_after);
    Respond(std::move(r));
  }
  void RespondTransport(HttpTransport t, std::string error = "simulated") {
    HttpResponse r;
    r.transport = t;
    r.error = std::move(error);
    Respond(std::move(r));
  }

  const std::vector<Sent>& sent() const { return sent_; }
  size_t sends() const { return sends_; }                          // transfers started, ever
  const std::vector<uint64_t>& delays() const { return delays_; }  // every RunAfter delay, in order
  size_t pending_timers() const { return timers_.size(); }

 private:
  uint64_t now_ = 1000000;
  bool stopped_ = false;
  size_t sends_ = 0;
  std::deque<std::function<void()>> posted_;
  std::vector<Sent> sent_;
  std::multimap<uint64_t, std::function<void()>> timers_;
  std::vector<uint64_t> delays_;
};

}  // namespace mmirage::testing

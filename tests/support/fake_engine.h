// FakeEngine: an engine::Engine for tests that answers each request with `reply(request, call number)` on its own
// thread, with no model. What it has queued when its thread wakes is answered as one batch, in submission order or,
// with `reverse_batches`, newest first (completions then arrive out of order, as from a continuous-batching engine);
// with `hold_until_queued`, only once that many requests wait (a probe of how many a scheduler keeps in flight).
// Thread-safe like a real engine: Submit from any thread, callbacks on the engine's thread. Header only.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "engine/engine.h"

namespace mmirage::testing {

struct FakeEngineOptions {
  int capacity = 4;
  double load_seconds = 0;
  bool reverse_batches = false;
  // Hold requests until this many are queued, then answer them as one batch (0: answer what is queued at once).
  // A run that never queues that many would wait forever: after `hold_give_up` what is queued is answered.
  size_t hold_until_queued = 0;
  std::chrono::milliseconds hold_give_up{2000};
  // Also records the most requests queued at once here (it outlives the engine, which a run destroys).
  std::atomic<size_t>* max_queued_out = nullptr;
};

class FakeEngine : public engine::Engine {
 public:
  using Reply = std::function<engine::Completion(const engine::Request&, int call)>;
  explicit FakeEngine(Reply reply, FakeEngineOptions o = {})
      : reply_(std::move(reply)), options_(o), thread_([this] { Loop(); }) {}
  ~FakeEngine() override { Shutdown(); }
  void Submit(engine::Request r, engine::CompletionCallback done) override {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back({std::move(r), std::move(done)});
    max_queued_ = std::max(max_queued_, queue_.size());
    if (options_.max_queued_out != nullptr && max_queued_ > *options_.max_queued_out) {
      *options_.max_queued_out = max_queued_;
    }
    cv_.notify_one();
  }
  int Capacity() const override { return options_.capacity; }
  double LoadSeconds() const override { return options_.load_seconds; }
  int NumGpus() const override { return 0; }
  void Shutdown() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;
      stop_ = true;
      cv_.notify_one();
    }
    thread_.join();
  }
  // The most requests queued at once.
  size_t max_queued() {
    std::lock_guard<std::mutex> l(mu_);
    return max_queued_;
  }
  std::atomic<int> calls{0};

 private:
  using Job = std::pair<engine::Request, engine::CompletionCallback>;
  void Loop() {
    while (true) {
      std::deque<Job> batch;
      {
        std::unique_lock<std::mutex> l(mu_);
        if (options_.hold_until_queued > 0) {
          cv_.wait_for(l, options_.hold_give_up, [&] { return stop_ || queue_.size() >= options_.hold_until_queued; });
        }
        cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopped
        batch.swap(queue_);
      }
      if (options_.reverse_batches) std::reverse(batch.begin(), batch.end());
      for (Job& job : batch) job.second(reply_(job.first, ++calls));
    }
  }
  Reply reply_;
  const FakeEngineOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  size_t max_queued_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace mmirage::testing

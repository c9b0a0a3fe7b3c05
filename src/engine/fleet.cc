#include "engine/fleet.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "util/log.h"

namespace mmirage::engine {
namespace {

Completion ErrorCompletion(Status s) {
  Completion c;
  c.finish = FinishReason::kError;
  c.error = std::move(s);
  return c;
}

constexpr int kNoBlame = -2;

bool Retryable(const Completion& c) {
  return c.finish == FinishReason::kError && c.error.code() != Status::Code::kInvalidArgument;
}

class Fleet : public FleetEngine {
 public:
  Fleet(std::vector<FleetReplica> replicas, FleetOptions options);
  ~Fleet() override { Shutdown(); }

  void Submit(Request request, CompletionCallback done) override;
  int Capacity() const override { return capacity_; }
  double LoadSeconds() const override { return load_seconds_; }
  int NumGpus() const override { return num_gpus_; }
  void Shutdown() override;
  std::vector<ReplicaStats> Stats() const override;

 private:
  struct Replica {
    std::string name;
    std::shared_ptr<Engine> engine;  // null while taken out
    std::function<Result<std::unique_ptr<Engine>>()> restart;
    bool restarting = false;
    int outstanding = 0;
    int consecutive_failures = 0;
    ReplicaStats stats;
  };
  struct Pending {
    Request request;
    CompletionCallback done;
    int replica = -1;      // where it is in flight; -1: waiting for a replica
    uint64_t attempt = 0;  // the answer of this attempt only is taken
    int attempts = 0;      // replicas it was sent to
    std::vector<int> tried;
    size_t prefix = 0;  // the affinity key of its prompt (affinity on only)
    Status last_error;
    // The replica its last counted failure was counted against, and that failure's message; kNoBlame once it
    // failed the same way on a second replica (then the request, not the replicas, is at fault: that count is
    // taken back, and the same failure is not counted again). A different failure (a dead server's refused
    // connection after an HTTP 500 elsewhere) is counted.
    int blamed = -1;
    std::string blamed_error;
  };
  // Work decided under the lock and done after it: a send, an answer, or a restart task.
  struct Action {
    std::shared_ptr<Engine> engine;  // send
    Request request;
    uint64_t id = 0, attempt = 0;
    int replica = -1;
    CompletionCallback done;  // answer
    Completion completion;
    std::function<void()> task;  // restart / retire
  };
  using Actions = std::vector<Action>;

  void OnDone(uint64_t id, uint64_t attempt, int replica, Completion c);
  void Run(Actions* actions);
  void Dispatch(uint64_t id, Actions* out);               // REQUIRES: mu_
  void Deliver(uint64_t id, Completion c, Actions* out);  // REQUIRES: mu_
  void TakeOut(int replica, Actions* out);                // REQUIRES: mu_
  void FailWaitingIfNoneLeft(Actions* out);               // REQUIRES: mu_
  int Pick(const Pending& p) const;                       // REQUIRES: mu_; -1 when none is healthy
  void RestartLoop(int replica, std::shared_ptr<Engine> retired);
  bool AnyRestarting() const;  // REQUIRES: mu_
  size_t PrefixKey(const Request& r) const;
  int Affine(const Pending& p, int least) const;  // REQUIRES: mu_; the replica affinity picks, else `least`

  FleetOptions opt_;
  int capacity_ = 0;
  double load_seconds_ = 0;
  int num_gpus_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // Shutdown wakes backoff waits
  std::vector<Replica> reps_;
  std::map<uint64_t, Pending> pending_;
  std::deque<uint64_t> waiting_;
  uint64_t next_id_ = 0, next_attempt_ = 0;
  size_t cursor_ = 0;                         // round robin among equally loaded replicas
  std::unordered_map<size_t, int> affinity_;  // prompt prefix key → the replica it was last sent to
  bool shutdown_ = false;
  // One long-lived thread runs the restart tasks: a server started from it lives as long as it does (a child
  // started from a thread that exits is killed, util/process/subprocess.h terminate_with_parent).
  std::deque<std::function<void()>> tasks_;
  std::thread worker_;
  void WorkerLoop();
};

void Fleet::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return shutdown_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // shut down
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

Fleet::Fleet(std::vector<FleetReplica> replicas, FleetOptions options) : opt_(std::move(options)) {
  for (size_t i = 0; i < replicas.size(); ++i) {
    Replica r;
    r.name = replicas[i].name.empty() ? "replica " + std::to_string(i) : replicas[i].name;
    r.stats.name = r.name;
    capacity_ += replicas[i].engine->Capacity();
    load_seconds_ = std::max(load_seconds_, replicas[i].engine->LoadSeconds());
    num_gpus_ += replicas[i].engine->NumGpus();
    r.engine = std::shared_ptr<Engine>(std::move(replicas[i].engine));
    r.restart = std::move(replicas[i].restart);
    reps_.push_back(std::move(r));
  }
  if (!opt_.run_async) {
    opt_.run_async = [this](std::function<void()> task) {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
      if (!shutdown_ && !worker_.joinable()) worker_ = std::thread([this] { WorkerLoop(); });
      cv_.notify_all();
    };
  }
  if (!opt_.sleep) {
    opt_.sleep = [this](double seconds) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return shutdown_; });
    };
  }
}

void Fleet::Submit(Request request, CompletionCallback done) {
  Actions actions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t id = next_id_++;
    Pending& p = pending_[id];
    p.request = std::move(request);
    p.done = std::move(done);
    if (opt_.affinity_prefix_chars > 0) p.prefix = PrefixKey(p.request);
    if (shutdown_) {
      Deliver(id, ErrorCompletion(Status::Unavailable("engine shut down")), &actions);
    } else {
      Dispatch(id, &actions);
    }
  }
  Run(&actions);
}

int Fleet::Pick(const Pending& p) const {
  int best = -1;
  bool best_tried = true;
  for (size_t k = 0; k < reps_.size(); ++k) {
    int i = static_cast<int>((cursor_ + k) % reps_.size());
    const Replica& r = reps_[i];
    if (!r.engine) continue;
    bool tried = std::find(p.tried.begin(), p.tried.end(), i) != p.tried.end();
    // Untried replicas first (a request that failed somewhere goes elsewhere), then the least outstanding.
    if (best < 0 || (best_tried && !tried) || (tried == best_tried && r.outstanding < reps_[best].outstanding)) {
      best = i;
      best_tried = tried;
    }
  }
  return best < 0 || !p.tried.empty() ? best : Affine(p, best);
}

size_t Fleet::PrefixKey(const Request& r) const {
  std::string_view head(r.prompt);
  head = head.substr(0, static_cast<size_t>(opt_.affinity_prefix_chars));
  return std::hash<std::string_view>()(head) ^ (r.raw_prompt ? 0x9e3779b97f4a7c15ull : 0);
}

int Fleet::Affine(const Pending& p, int least) const {
  if (opt_.affinity_prefix_chars <= 0) return least;
  auto it = affinity_.find(p.prefix);
  if (it == affinity_.end() || it->second == least) return least;
  const Replica& r = reps_[it->second];
  if (!r.engine || r.outstanding > reps_[least].outstanding + opt_.affinity_slack) return least;
  return it->second;
}

bool Fleet::AnyRestarting() const {
  for (const auto& r : reps_)
    if (r.restarting) return true;
  return false;
}

void Fleet::Dispatch(uint64_t id, Actions* out) {
  Pending& p = pending_[id];
  int i = Pick(p);
  if (i < 0) {
    p.replica = -1;
    if (AnyRestarting()) {
      waiting_.push_back(id);
      return;
    }
    std::string why = p.last_error.ok() ? "" : " (last error: " + p.last_error.message() + ")";
    Deliver(id, ErrorCompletion(Status::Unavailable("every replica of the fleet is down" + why)), out);
    return;
  }
  cursor_ = (static_cast<size_t>(i) + 1) % reps_.size();
  if (opt_.affinity_prefix_chars > 0) {
    if (affinity_.size() >= kMaxAffinityKeys && !affinity_.count(p.prefix)) affinity_.clear();
    affinity_[p.prefix] = i;
  }
  p.replica = i;
  p.attempt = ++next_attempt_;
  ++p.attempts;
  p.tried.push_back(i);
  ++reps_[i].outstanding;
  Action a;
  a.engine = reps_[i].engine;
  a.request = p.request;
  a.id = id;
  a.attempt = p.attempt;
  a.replica = i;
  out->push_back(std::move(a));
}

void Fleet::Deliver(uint64_t id, Completion c, Actions* out) {
  auto it = pending_.find(id);
  Action a;
  a.done = std::move(it->second.done);
  a.completion = std::move(c);
  pending_.erase(it);
  out->push_back(std::move(a));
}

void Fleet::OnDone(uint64_t id, uint64_t attempt, int replica, Completion c) {
  Actions actions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.attempt != attempt || it->second.replica != replica) return;
    Replica& r = reps_[replica];
    --r.outstanding;
    it->second.replica = -1;
    if (!Retryable(c) || shutdown_) {
      if (c.finish != FinishReason::kError) {
        r.consecutive_failures = 0;
        ++r.stats.requests;
        r.stats.prompt_tokens += c.prompt_tokens;
        r.stats.completion_tokens += c.completion_tokens;
      }
      Deliver(id, std::move(c), &actions);
    } else {
      ++r.stats.failures;
      LOG_DEBUG("fleet: " << r.name << " failed a request: " << c.error.message());
      Pending& p = it->second;
      p.last_error = c.error;
      bool same = p.blamed != -1 && c.error.message() == p.blamed_error;
      if (same && p.blamed >= 0 && p.blamed != replica) {
        Replica& first = reps_[p.blamed];
        if (first.consecutive_failures > 0) --first.consecutive_failures;
        p.blamed = kNoBlame;
      } else if (!same) {
        p.blamed = replica;
        p.blamed_error = c.error.message();
        if (r.engine && ++r.consecutive_failures >= opt_.fail_threshold) TakeOut(replica, &actions);
      }
      if (it->second.attempts >= opt_.max_attempts) {
        Deliver(id, std::move(c), &actions);
      } else {
        Dispatch(id, &actions);
      }
    }
  }
  Run(&actions);
}

void Fleet::TakeOut(int replica, Actions* out) {
  Replica& r = reps_[replica];
  std::shared_ptr<Engine> retired = std::move(r.engine);
  r.engine.reset();
  r.outstanding = 0;
  r.consecutive_failures = 0;
  bool restart = r.restart && r.stats.restarts < opt_.max_restarts && !shutdown_;
  LOG_WARN("fleet: " << r.name << " taken out after " << opt_.fail_threshold << " failures in a row"
                     << (restart ? ", restarting it" : ""));
  r.restarting = restart;
  std::vector<uint64_t> moved;  // its requests go to the others at once
  for (auto& [id, p] : pending_) {
    if (p.replica != replica) continue;
    p.replica = -1;
    moved.push_back(id);
  }
  for (uint64_t id : moved) Dispatch(id, out);
  Action a;
  if (restart) {
    a.task = [this, replica, retired] { RestartLoop(replica, retired); };
  } else {
    a.task = [retired] { retired->Shutdown(); };  // not on a callback: that may be the engine's own thread
  }
  out->push_back(std::move(a));
  FailWaitingIfNoneLeft(out);
}

void Fleet::FailWaitingIfNoneLeft(Actions* out) {
  for (const auto& r : reps_)
    if (r.engine || r.restarting) return;
  while (!waiting_.empty()) {
    uint64_t id = waiting_.front();
    waiting_.pop_front();
    if (pending_.count(id)) Dispatch(id, out);  // no replica left: answers with the error
  }
}

void Fleet::RestartLoop(int replica, std::shared_ptr<Engine> retired) {
  retired->Shutdown();
  retired.reset();
  for (;;) {
    double backoff;
    {
      std::lock_guard<std::mutex> lock(mu_);
      backoff = opt_.restart_backoff_seconds * (1 << std::min<int64_t>(reps_[replica].stats.restarts, 16));
    }
    opt_.sleep(backoff);
    std::function<Result<std::unique_ptr<Engine>>()> restart;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutdown_) break;
      restart = reps_[replica].restart;
    }
    Result<std::unique_ptr<Engine>> fresh = restart();
    Actions actions;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Replica& r = reps_[replica];
      ++r.stats.restarts;
      if (fresh.ok() && !shutdown_) {
        r.engine = std::shared_ptr<Engine>(std::move(*fresh));
        r.restarting = false;
        LOG_INFO("fleet: " << r.name << " restarted (restart " << r.stats.restarts << ")");
        std::deque<uint64_t> waiting;
        waiting.swap(waiting_);
        for (uint64_t id : waiting)
          if (pending_.count(id)) Dispatch(id, &actions);
      } else if (!fresh.ok()) {
        LOG_WARN("fleet: cannot restart " << r.name << ": " << fresh.status().message());
        if (r.stats.restarts < opt_.max_restarts && !shutdown_) continue;
        r.restarting = false;
        FailWaitingIfNoneLeft(&actions);
      }
      if (shutdown_) r.restarting = false;
    }
    if (fresh.ok() && *fresh) (*fresh)->Shutdown();  // made while shutting down: not kept
    Run(&actions);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  reps_[replica].restarting = false;
}

void Fleet::Run(Actions* actions) {
  for (auto& a : *actions) {
    if (a.task) {
      opt_.run_async(std::move(a.task));
    } else if (a.engine) {
      uint64_t id = a.id, attempt = a.attempt;
      int replica = a.replica;
      a.engine->Submit(std::move(a.request),
                       [this, id, attempt, replica](Completion c) { OnDone(id, attempt, replica, std::move(c)); });
    } else if (a.done) {
      a.done(std::move(a.completion));
    }
  }
  actions->clear();
}

void Fleet::Shutdown() {
  std::vector<std::shared_ptr<Engine>> engines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    for (auto& r : reps_)
      if (r.engine) engines.push_back(r.engine);
  }
  cv_.notify_all();
  // Queued tasks still run (a retired engine is shut down; a restart sees shutdown_ and stops), then the worker ends.
  std::thread worker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    worker.swap(worker_);
  }
  if (worker.joinable()) worker.join();
  for (;;) {  // tasks handed over while the worker was ending (their restarts see shutdown_)
    std::function<void()> task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (tasks_.empty()) break;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
  for (auto& e : engines) e->Shutdown();  // their requests answer "engine shut down", delivered as is
  Actions actions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<uint64_t> left;
    for (const auto& [id, p] : pending_) left.push_back(id);
    for (uint64_t id : left) Deliver(id, ErrorCompletion(Status::Unavailable("engine shut down")), &actions);
    waiting_.clear();
    for (auto& r : reps_) r.engine.reset();
  }
  Run(&actions);
}

std::vector<ReplicaStats> Fleet::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ReplicaStats> out;
  for (const auto& r : reps_) {
    out.push_back(r.stats);
    out.back().healthy = r.engine != nullptr;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<FleetEngine>> CreateFleetEngine(std::vector<FleetReplica> replicas, FleetOptions options) {
  if (replicas.empty()) return Status::InvalidArgument("a fleet needs at least one replica");
  for (const auto& r : replicas)
    if (!r.engine) return Status::InvalidArgument("fleet replica '" + r.name + "' has no engine");
  if (options.fail_threshold < 1 || options.max_attempts < 1 || options.max_restarts < 0)
    return Status::InvalidArgument("fleet: fail_threshold and max_attempts must be >= 1, max_restarts >= 0");
  if (options.affinity_prefix_chars < 0 || options.affinity_slack < 0)
    return Status::InvalidArgument("fleet: affinity_prefix_chars and affinity_slack must be >= 0");
  return std::unique_ptr<FleetEngine>(new Fleet(std::move(replicas), std::move(options)));
}

}  // namespace mmirage::engine

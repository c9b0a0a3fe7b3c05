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
  std::vector<FleetEvent> TakeEvents() override;

 private:
  struct Replica {
    std::string name;
    std::shared_ptr<Engine> engine;  // null while taken out
    std::function<Result<std::unique_ptr<Engine>>()> restart;
    bool external = false;
    bool restarting = false;
    uint64_t generation = 0;    // engines it has had (a failure counts against the engine it happened on)
    uint64_t failed_at_us = 0;  // its last answer was a retryable failure, then (monotonic); 0: it was not
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
    // Its failures not yet counted against their replicas. They are counted when the request is answered by
    // another replica, or fails on the same replica again; forgiven when it fails the same way on two replicas
    // (the message goes to `bad`: the request's own failure, never counted), or when it is answered with an error.
    struct Failure {
      int replica;
      uint64_t generation;
      std::string message;
    };
    std::vector<Failure> failures;
    std::vector<std::string> bad;
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
  // REQUIRES: mu_. Counts a failure of `replica` (if it still has the engine of that generation).
  void Blame(int replica, uint64_t generation, Actions* out);
  void Park(uint64_t id, Actions* out);  // REQUIRES: mu_; waits a quarantine out before dispatching again
  void WakeParked();
  bool Quarantined(const Replica& r, uint64_t now) const;                // REQUIRES: mu_
  bool wake_scheduled_ = false;                                          // a task will dispatch the parked requests
  void OnFailure(uint64_t id, int replica, Completion c, Actions* out);  // REQUIRES: mu_
  void FailWaitingIfNoneLeft(Actions* out);                              // REQUIRES: mu_
  int Pick(const Pending& p) const;                                      // REQUIRES: mu_; -1 when none is healthy
  void RestartLoop(int replica, std::shared_ptr<Engine> retired);
  // After a restart try: true when the loop ends (restarted, given up, or shutting down).
  bool RestartDone(int replica, Result<std::unique_ptr<Engine>>* fresh);
  bool AnyRestarting() const;                      // REQUIRES: mu_
  void AddEvent(int replica, const char* change);  // REQUIRES: mu_
  void Async(int replica, std::function<void()> task);
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
  std::vector<FleetEvent> events_;
  // One long-lived thread per replica runs its restart tasks: a server started from it lives as long as it does (a
  // child started from a thread that exits is killed, util/process/subprocess.h terminate_with_parent).
  std::vector<std::deque<std::function<void()>>> tasks_;
  std::vector<std::thread> workers_;
  void WorkerLoop(int replica);
  bool RunQueuedTask();  // runs one task of any replica's queue; false when all are empty
};

void Fleet::WorkerLoop(int replica) {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this, replica] { return shutdown_ || !tasks_[replica].empty(); });
      if (tasks_[replica].empty()) return;  // shut down
      task = std::move(tasks_[replica].front());
      tasks_[replica].pop_front();
    }
    task();
  }
}

void Fleet::Async(int replica, std::function<void()> task) {
  if (opt_.run_async) return opt_.run_async(std::move(task));
  std::lock_guard<std::mutex> lock(mu_);
  tasks_[replica].push_back(std::move(task));
  if (!shutdown_ && !workers_[replica].joinable())
    workers_[replica] = std::thread([this, replica] { WorkerLoop(replica); });
  cv_.notify_all();
}

bool Fleet::RunQueuedTask() {
  std::function<void()> task;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& q : tasks_) {
      if (q.empty()) continue;
      task = std::move(q.front());
      q.pop_front();
      break;
    }
  }
  if (!task) return false;
  task();
  return true;
}

void Fleet::AddEvent(int replica, const char* change) {
  if (events_.size() >= kMaxFleetEvents) events_.erase(events_.begin());
  FleetEvent e;
  e.t = static_cast<double>(opt_.env->NowMicros()) / 1e6;
  e.replica = replica;
  e.name = reps_[replica].name;
  e.change = change;
  events_.push_back(std::move(e));
}

std::vector<FleetEvent> Fleet::TakeEvents() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FleetEvent> out;
  out.swap(events_);
  return out;
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
    r.external = replicas[i].external;
    reps_.push_back(std::move(r));
  }
  tasks_.resize(reps_.size());
  workers_.resize(reps_.size());
  if (opt_.env == nullptr) opt_.env = Env::Default();
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
  std::pair<bool, bool> best_rank;
  const uint64_t now = opt_.env->MonotonicMicros();
  for (size_t k = 0; k < reps_.size(); ++k) {
    int i = static_cast<int>((cursor_ + k) % reps_.size());
    const Replica& r = reps_[i];
    if (!r.engine) continue;
    bool tried = std::find(p.tried.begin(), p.tried.end(), i) != p.tried.end();
    // Untried replicas first (a request that failed somewhere goes elsewhere), then those whose last answer was
    // not a failure (a dead server answers fast and would draw every request), then the least outstanding.
    std::pair<bool, bool> rank{tried, Quarantined(r, now)};
    if (best < 0 || rank < best_rank || (rank == best_rank && r.outstanding < reps_[best].outstanding)) {
      best = i;
      best_rank = rank;
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
  if (std::find(p.tried.begin(), p.tried.end(), i) != p.tried.end() &&
      Quarantined(reps_[i], opt_.env->MonotonicMicros()))
    return Park(id, out);  // every replica failed it, the best just now: not again at once
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

bool Fleet::Quarantined(const Replica& r, uint64_t now) const {
  return r.failed_at_us != 0 && static_cast<double>(now - r.failed_at_us) < opt_.quarantine_seconds * 1e6;
}

void Fleet::Park(uint64_t id, Actions* out) {
  pending_[id].replica = -1;
  waiting_.push_back(id);
  if (wake_scheduled_) return;
  wake_scheduled_ = true;
  Action a;
  a.replica = static_cast<int>(cursor_ % reps_.size());
  a.task = [this] { WakeParked(); };
  out->push_back(std::move(a));
}

void Fleet::WakeParked() {
  opt_.sleep(opt_.quarantine_seconds);
  Actions actions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_scheduled_ = false;
    if (shutdown_) return;
    std::deque<uint64_t> parked;
    parked.swap(waiting_);
    for (uint64_t id : parked)
      if (pending_.count(id)) Dispatch(id, &actions);
  }
  Run(&actions);
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
        r.failed_at_us = 0;
        ++r.stats.requests;
        r.stats.prompt_tokens += c.prompt_tokens;
        r.stats.completion_tokens += c.completion_tokens;
        // It failed elsewhere, not here: those replicas are at fault.
        std::vector<Pending::Failure> failed;
        failed.swap(it->second.failures);
        for (const auto& f : failed)
          if (f.replica != replica) Blame(f.replica, f.generation, &actions);
        if (!waiting_.empty()) {  // waiting requests: a replica answers
          std::deque<uint64_t> parked;
          parked.swap(waiting_);
          for (uint64_t w : parked)
            if (pending_.count(w) && w != id) Dispatch(w, &actions);
        }
      }
      Deliver(id, std::move(c), &actions);
    } else {
      OnFailure(id, replica, std::move(c), &actions);
    }
  }
  Run(&actions);
}

void Fleet::OnFailure(uint64_t id, int replica, Completion c, Actions* out) {
  Replica& r = reps_[replica];
  Pending& p = pending_[id];
  ++r.stats.failures;
  LOG_DEBUG("fleet: " << r.name << " failed a request: " << c.error.message());
  p.last_error = c.error;
  const std::string& msg = c.error.message();
  auto& fs = p.failures;
  auto same_msg = [&](const Pending::Failure& f) { return f.message == msg && f.replica != replica; };
  auto same_rep = [&](const Pending::Failure& f) { return f.replica == replica; };
  if (std::find(p.bad.begin(), p.bad.end(), msg) != p.bad.end()) {
    // the request's own failure, known
  } else if (std::any_of(fs.begin(), fs.end(), same_msg)) {
    for (const auto& f : fs)
      if (same_msg(f) && reps_[f.replica].generation == f.generation) reps_[f.replica].failed_at_us = 0;
    fs.erase(std::remove_if(fs.begin(), fs.end(), same_msg), fs.end());
    p.bad.push_back(msg);  // the same failure on two replicas: the request's own
  } else if (c.transport_failure) {
    r.failed_at_us = opt_.env->MonotonicMicros();
    Blame(replica, r.generation, out);  // refused or broken: the replica's fault whatever the request
  } else {
    r.failed_at_us = opt_.env->MonotonicMicros();
    auto again = std::find_if(fs.begin(), fs.end(), same_rep);
    if (again != fs.end()) {
      uint64_t generation = again->generation;
      fs.erase(std::remove_if(fs.begin(), fs.end(), same_rep), fs.end());
      Blame(replica, generation, out);  // it failed the request twice
    } else {
      fs.push_back({replica, r.generation, msg});
    }
  }
  if (!pending_.count(id) || pending_[id].replica >= 0) return;  // re-issued by a take-out above
  if (p.attempts >= opt_.max_attempts) {
    Deliver(id, std::move(c), out);
  } else {
    Dispatch(id, out);
  }
}

void Fleet::Blame(int replica, uint64_t generation, Actions* out) {
  Replica& r = reps_[replica];
  if (r.engine && r.generation == generation && ++r.consecutive_failures >= opt_.fail_threshold) TakeOut(replica, out);
}

void Fleet::TakeOut(int replica, Actions* out) {
  Replica& r = reps_[replica];
  std::shared_ptr<Engine> retired = std::move(r.engine);
  r.engine.reset();
  r.outstanding = 0;
  r.consecutive_failures = 0;
  bool restart = r.restart && (r.external || r.stats.restarts < opt_.max_restarts) && !shutdown_;
  LOG_WARN("fleet: " << r.name << " taken out after " << opt_.fail_threshold << " failures in a row"
                     << (!restart     ? ""
                         : r.external ? ", back when it answers again"
                                      : ", restarting it"));
  AddEvent(replica, "out");
  if (r.restart && !restart && !shutdown_) {
    LOG_WARN("fleet: " << r.name << " given up after " << r.stats.restarts << " restart(s)");
    AddEvent(replica, "gave_up");
  }
  r.restarting = restart;
  std::vector<uint64_t> moved;  // its requests go to the others at once
  for (auto& [id, p] : pending_) {
    if (p.replica != replica) continue;
    p.replica = -1;
    moved.push_back(id);
  }
  for (uint64_t id : moved) Dispatch(id, out);
  Action a;
  a.replica = replica;
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
    std::function<Result<std::unique_ptr<Engine>>()> restart;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const Replica& r = reps_[replica];
      backoff = r.external ? opt_.probe_interval_seconds
                           : opt_.restart_backoff_seconds * (1 << std::min<int64_t>(r.stats.restarts, 16));
      restart = r.restart;
    }
    opt_.sleep(backoff);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutdown_) break;
    }
    Result<std::unique_ptr<Engine>> fresh = restart();
    if (RestartDone(replica, &fresh)) return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  reps_[replica].restarting = false;
}

bool Fleet::RestartDone(int replica, Result<std::unique_ptr<Engine>>* fresh) {
  Actions actions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Replica& r = reps_[replica];
    if (!r.external || fresh->ok()) ++r.stats.restarts;
    if (fresh->ok() && !shutdown_) {
      r.engine = std::shared_ptr<Engine>(std::move(**fresh));
      ++r.generation;
      r.failed_at_us = 0;
      r.restarting = false;
      if (r.external) {
        LOG_INFO("fleet: " << r.name << " answers again, back in the fleet");
      } else {
        LOG_INFO("fleet: " << r.name << " restarted (restart " << r.stats.restarts << ")");
      }
      AddEvent(replica, r.external ? "back" : "restarted");
      std::deque<uint64_t> waiting;
      waiting.swap(waiting_);
      for (uint64_t id : waiting)
        if (pending_.count(id)) Dispatch(id, &actions);
    } else if (!fresh->ok()) {
      if (r.external) {
        LOG_DEBUG("fleet: " << r.name << " does not answer yet: " << fresh->status().message());
      } else {
        LOG_WARN("fleet: cannot restart " << r.name << ": " << fresh->status().message());
      }
      if ((r.external || r.stats.restarts < opt_.max_restarts) && !shutdown_) return false;
      r.restarting = false;
      LOG_WARN("fleet: " << r.name << " given up after " << r.stats.restarts << " restart(s)");
      AddEvent(replica, "gave_up");
      FailWaitingIfNoneLeft(&actions);
    }
    if (shutdown_) r.restarting = false;
  }
  if (fresh->ok() && **fresh) (**fresh)->Shutdown();  // made while shutting down: not kept
  Run(&actions);
  return true;
}

void Fleet::Run(Actions* actions) {
  for (auto& a : *actions) {
    if (a.task) {
      Async(a.replica, std::move(a.task));
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
  // Queued tasks still run (a retired engine is shut down; a restart sees shutdown_ and stops), then the workers end.
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers.swap(workers_);
    workers_.resize(reps_.size());
  }
  for (auto& w : workers)
    if (w.joinable()) w.join();
  while (RunQueuedTask()) {  // tasks handed over while the workers were ending (their restarts see shutdown_)
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
  if (options.restart_backoff_seconds < 0 || options.probe_interval_seconds < 0 || options.quarantine_seconds < 0)
    return Status::InvalidArgument("fleet: restart, probe and quarantine seconds must be >= 0");
  if (options.affinity_prefix_chars < 0 || options.affinity_slack < 0)
    return Status::InvalidArgument("fleet: affinity_prefix_chars and affinity_slack must be >= 0");
  return std::unique_ptr<FleetEngine>(new Fleet(std::move(replicas), std::move(options)));
}

}  // namespace mmirage::engine

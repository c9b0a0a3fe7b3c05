#include "exec/local_executor.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "engine/managed_server.h"
#include "process/image_gen/image_gen_processor.h"
#include "process/llm/engine_factory.h"
#include "process/llm/fleet_factory.h"
#include "data/json.h"
#include "pipeline/cost_budget.h"
#include "pipeline/failure_report.h"
#include "state/shard_state.h"
#include "util/env_schemes.h"
#include "util/fnv.h"
#include "util/hex.h"
#include "util/log.h"
#include "util/signals.h"
#include "util/process/subprocess.h"

namespace mmirage::exec {
namespace {

// After a stop request, workers that have not exited this long after their signal are killed (SIGKILL to their
// process group, managed servers included); what they committed stays resumable.
constexpr int kStopGraceSeconds = 60;

struct Worker {
  int64_t shard;
  std::unique_ptr<Subprocess> process;
  int gpu_slot = -1;  // index into LocalScheduler::gpu_slots_, -1: not pinned
};

// The shards to run: options.shard_ids, or every shard of the config.
std::vector<int64_t> ShardIds(const config::Config& config, const LocalRunOptions& options) {
  std::vector<int64_t> ids = options.shard_ids;
  if (ids.empty()) {
    for (int64_t id = 0; id < config.loading.num_shards; ++id) ids.push_back(id);
  }
  return ids;
}

// Of `ids`, those to start: not succeeded and with attempts left (a submitted batch_api shard always); the
// others are logged.
std::deque<int64_t> RunnableShards(Env* env, const config::Config& config, const LocalRunOptions& options,
                                   const std::vector<int64_t>& ids) {
  const int64_t max_attempts = config.execution.max_retries + 1;
  std::deque<int64_t> queue;
  for (int64_t id : ids) {
    ShardRecord r = ShardState(env, config.loading.state_dir, id).Read();
    if (r.status == ShardStatus::kSuccess) {
      LOG_INFO("Shard " << id << " already succeeded; skipped");
    } else if (r.attempts_spent >= max_attempts && r.status != ShardStatus::kSubmitted) {
      LOG_ERROR("Shard " << id << " has used all " << max_attempts << " attempts without progress (max_retries="
                         << config.execution.max_retries << "); `mmirage retry --config " << options.config_path
                         << " --reset` gives it a fresh budget");
    } else {
      queue.push_back(id);
    }
  }
  return queue;
}

// Runs shards as worker processes, `local_workers` at a time: starts them, reaps them, queues a failed shard
// again while its attempts last, and on a stop request (or a worker that cannot be started) signals every
// running worker, kills those still running after kStopGraceSeconds, and reaps them all. Run returns only once
// no worker of this scheduler is left. Single-threaded; one Run per object.
class LocalScheduler {
 public:
  // `image_server` (borrowed, may be null): the shared image server whose URL the workers get.
  LocalScheduler(Env* env, const config::Config& config, const LocalRunOptions& options,
                 const engine::ManagedServer* image_server)
      : env_(env),
        config_(config),
        options_(options),
        image_server_(image_server),
        max_attempts_(config.execution.max_retries + 1),
        parallel_(static_cast<size_t>(std::max<int64_t>(1, config.execution.local_workers))) {
    PlanGpuSlots();
  }

  void Run(std::deque<int64_t> queue) {
    queue_ = std::move(queue);
    // The shards that run at once split the endpoints' rate limits, so that together they stay under them.
    shares_ = std::min(parallel_, queue_.size());
    if (shares_ > 1 || config_.execution.max_cost_usd) PrepareSharedBudget();
    while ((!queue_.empty() && !budget_spent_) || !running_.empty()) {
      if (StopRequested() && !stopping_) {
        // Each worker is in its own process group (the terminal's Ctrl-C reaches only us), so it gets exactly one
        // stop signal, from here: it commits what is finished and exits resumable.
        StopAll(StopSignal());
      }
      KillLateWorkers();
      StartWorkers();
      bool reaped = ReapWorkers();
      if (!reaped && !running_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  bool stopped() const { return stopping_; }           // by a stop request or a start failure
  bool start_failed() const { return start_failed_; }  // a worker could not be started: the run fails
  bool in_progress() const { return in_progress_; }    // some batch_api shard's batches are still running

 private:
  ShardRecord Record(int64_t id) const { return ShardState(env_, config_.loading.state_dir, id).Read(); }

  // The workers run on this machine, one after another or at once: they draw from one rate-limit and cost budget, kept
  // in files under a fresh directory (util/shared_counters.h) — the state directory when it is local, else one under
  // /tmp named after it. When the directory cannot be made, each worker keeps its own buckets and the limits are split
  // statically.
  void PrepareSharedBudget() {
    const std::string& state = config_.loading.state_dir;
    std::string dir = PathScheme(state).empty() ? env_->AbsolutePath(state) + "/shared_budget"
                                                : "/tmp/mmirage_shared_budget_" + Hex64(Fnv1a64(state));
    Status s = env_->RemoveAll(dir);
    if (s.ok()) s = env_->CreateDirs(dir);
    if (!s.ok()) {
      LOG_WARN("cannot make the shared budget directory " << dir << " (" << s.message() << "): the " << shares_
                                                          << " workers split the rate limits statically");
      return;
    }
    shared_dir_ = dir;
    if (shares_ > 1)
      LOG_INFO(shares_ << " shards run at once on this machine and share one rate-limit budget (" << dir << ")");
  }

  // What the run spent of execution_params.max_cost_usd, from the workers' shared cost file.
  std::string RunCostSummary() {
    std::string s = "execution_params.max_cost_usd (" + FormatDouble(*config_.execution.max_cost_usd) + ") reached";
    double spent = 0;
    if (!shared_dir_.empty() && NewFileSharedCounters(shared_dir_ + "/cost")
                                    ->Update([&](SharedCounters::Map* m) { spent = pipeline::SharedCostSpent(*m); })
                                    .ok())
      s += ": the shards spent $" + FormatDouble(std::round(spent * 1e4) / 1e4) + " together";
    return s + "; no further shard starts. Run again to continue (resumable)";
  }

  // No new worker; each running one gets `sig` (SIGKILL later, see KillLateWorkers).
  void StopAll(int sig) {
    stopping_ = true;
    stop_started_us_ = env_->MonotonicMicros();
    queue_.clear();
    for (auto& w : running_) (void)w.process->Signal(sig);
  }

  // SIGKILL to the groups of workers still running kStopGraceSeconds after StopAll (once).
  void KillLateWorkers() {
    if (!stopping_ || killed_ || running_.empty() ||
        env_->MonotonicMicros() - stop_started_us_ <= static_cast<uint64_t>(kStopGraceSeconds) * 1000000) {
      return;
    }
    LOG_WARN("workers still running " << kStopGraceSeconds << " s after the stop request; killing them");
    for (auto& w : running_) (void)w.process->SignalGroup(SIGKILL);
    killed_ = true;
  }

  // gpus_per_worker: one CUDA_VISIBLE_DEVICES slice per worker slot; fewer slices than local_workers lower the
  // workers run at once (a worker never shares its GPUs); no GPU visible: workers are not pinned.
  void PlanGpuSlots() {
    int64_t per = config_.execution.gpus_per_worker;
    if (per <= 0) return;
    std::vector<std::string> gpus = process::llm::VisibleGpus(nullptr);
    gpu_slots_ = process::llm::GpuSlices(gpus, static_cast<size_t>(per));
    if (gpus.empty()) {
      LOG_WARN("gpus_per_worker: no GPU visible (CUDA_VISIBLE_DEVICES, nvidia-smi -L); workers are not pinned");
    } else if (gpu_slots_.empty()) {
      LOG_WARN("gpus_per_worker " << per << " with " << gpus.size()
                                  << " visible GPU(s): one worker at a time, on every visible GPU");
      parallel_ = 1;
    } else if (gpu_slots_.size() < parallel_) {
      LOG_WARN("gpus_per_worker " << per << " with " << gpus.size() << " visible GPU(s): " << gpu_slots_.size()
                                  << " worker(s) at once instead of local_workers " << parallel_);
      parallel_ = gpu_slots_.size();
    }
    gpu_slot_used_.assign(gpu_slots_.size(), false);
  }

  // A free GPU slot (marked used), or -1 when workers are not pinned.
  int TakeGpuSlot() {
    for (size_t i = 0; i < gpu_slot_used_.size(); ++i) {
      if (!gpu_slot_used_[i]) {
        gpu_slot_used_[i] = true;
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // Starts queued shards while a worker slot is free. A worker that cannot be started stops the run (StopAll).
  void StartWorkers() {
    while (!stopping_ && !budget_spent_ && running_.size() < parallel_ && !queue_.empty()) {
      int64_t id = queue_.front();
      queue_.pop_front();
      SubprocessOptions so;
      so.argv = {options_.binary,    "run",         "--config",        options_.config_path, "--shard-id",
                 std::to_string(id), "--log-level", options_.log_level};
      if (options_.collect_stats) so.argv.push_back("--stats");
      // Several workers share the terminal: each reports progress as log lines, not as a live line.
      so.argv.insert(so.argv.end(), {"--progress", "log"});
      so.env_overrides = {{"SLURM_ARRAY_TASK_ID", std::to_string(id)}};
      if (shares_ > 1 && shared_dir_.empty())
        so.env_overrides.push_back({process::llm::kRateLimitSharesVar, std::to_string(shares_)});
      if (!shared_dir_.empty()) so.env_overrides.push_back({process::llm::kSharedBudgetDirVar, shared_dir_});
      if (image_server_) so.env_overrides.push_back({"MMIRAGE_SGLANG_BASE_URL", image_server_->base_url()});
      int slot = TakeGpuSlot();
      if (slot >= 0) so.env_overrides.push_back({"CUDA_VISIBLE_DEVICES", gpu_slots_[static_cast<size_t>(slot)]});
      if (options_.stdout_to_stderr) so.stdout_path = "/dev/stderr";
      so.new_process_group = true;      // one stop signal per worker, from us, not a second from the terminal
      so.terminate_with_parent = true;  // and none survives us, even after a SIGKILL
      auto p = Subprocess::Start(so);
      if (!p.ok()) {
        if (slot >= 0) gpu_slot_used_[static_cast<size_t>(slot)] = false;
        LOG_ERROR("cannot start shard " << id << ": " << p.status().message());
        start_failed_ = true;
        StopAll(SIGTERM);
        return;
      }
      LOG_INFO("Shard " << id << ": started (attempt #" << Record(id).retry_count + 1 << ", pid " << (*p)->pid()
                        << ")");
      (void)RegisterStopGroup((*p)->pid());
      attempts_before_[id] = Record(id).retry_count;
      running_.push_back(Worker{id, std::move(*p), slot});
    }
  }

  // Reaps the workers that ended (OnWorkerEnd for each); true when some did.
  bool ReapWorkers() {
    bool reaped = false;
    for (size_t i = 0; i < running_.size();) {
      auto rc = running_[i].process->Poll();
      if (!rc) {
        ++i;
        continue;
      }
      reaped = true;
      int64_t id = running_[i].shard;
      if (running_[i].gpu_slot >= 0) gpu_slot_used_[static_cast<size_t>(running_[i].gpu_slot)] = false;
      UnregisterStopGroup(running_[i].process->pid());
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
      OnWorkerEnd(id, *rc);
    }
    return reaped;
  }

  // Logs how shard `id`'s worker ended (exit status `rc`) and queues the shard again when it failed with attempts
  // left. A worker that ended without recording an attempt (e.g. a missing API key) is bounded too.
  void OnWorkerEnd(int64_t id, int rc) {
    ShardRecord r = Record(id);
    if (r.retry_count <= attempts_before_[id]) ++uncounted_[id];
    if (rc == 0 && r.status == ShardStatus::kSuccess) {
      LOG_INFO("Shard " << id << ": succeeded");
    } else if ((rc == 0 || rc == 75) && r.status == ShardStatus::kSubmitted) {  // batch_api: with the provider
      LOG_INFO("Shard " << id << ": " << (rc == 0 ? "submitted" : "batches still in progress"));
      if (rc == 75) in_progress_ = true;
    } else if (stopping_) {
      LOG_WARN("Shard " << id << ": stopped (exit " << rc << "); it resumes from its last commit next time");
    } else if (pipeline::IsCostBudgetStop(r.error.value_or(""))) {
      // The run's budget is spent: neither this shard nor the queued ones would get further now.
      if (!budget_spent_) LOG_WARN(RunCostSummary());
      budget_spent_ = true;
    } else if (r.attempts_spent < max_attempts_ && uncounted_[id] < max_attempts_) {
      LOG_WARN("Shard " << id << ": failed (exit " << rc << ", attempt " << r.retry_count << ", " << r.attempts_spent
                        << "/" << max_attempts_ << " without progress): " << r.error.value_or("no status written")
                        << "; retrying");
      queue_.push_back(id);
    } else {
      LOG_ERROR("Shard " << id << ": failed after " << r.retry_count << " attempts (" << r.attempts_spent
                         << " without progress): " << r.error.value_or("no status written")
                         << "; `mmirage retry --config " << options_.config_path
                         << " --reset` gives it a fresh budget");
    }
  }

  Env* env_;
  const config::Config& config_;
  const LocalRunOptions& options_;
  const engine::ManagedServer* image_server_;
  const int64_t max_attempts_;
  size_t parallel_;            // workers at once: local_workers, fewer when GPU slices run out
  size_t shares_ = 1;          // workers that split the rate limits: parallel_, or fewer when fewer shards are queued
  bool budget_spent_ = false;  // a worker stopped at max_cost_usd: no new worker starts
  std::string shared_dir_;     // the workers' shared budgets ("" = none: they split the limits statically)
  std::deque<int64_t> queue_;
  std::vector<Worker> running_;
  std::vector<std::string> gpu_slots_;  // CUDA_VISIBLE_DEVICES per worker slot (gpus_per_worker)
  std::vector<bool> gpu_slot_used_;
  bool stopping_ = false;
  bool killed_ = false;
  bool start_failed_ = false;
  bool in_progress_ = false;
  uint64_t stop_started_us_ = 0;
  std::map<int64_t, int64_t> attempts_before_;  // retry_count of each shard when its worker was started
  std::map<int64_t, int64_t> uncounted_;        // workers of this run that ended without recording an attempt
};

// The end of a run that was not stopped: the failed rows of every shard once more (the workers' own reports
// scrolled by among the others), then the exit code: 1 when some shard did not succeed, 75 when batch_api
// batches are still in progress, else 0.
int FinishRun(Env* env, const config::Config& config, const std::vector<int64_t>& ids, bool in_progress) {
  (void)pipeline::LogFailureSummary(env, config);
  std::vector<int64_t> bad;
  bool any_submitted = false;
  for (int64_t id : ids) {
    ShardStatus st = ShardState(env, config.loading.state_dir, id).Read().status;
    if (st == ShardStatus::kSubmitted) any_submitted = true;
    else if (st != ShardStatus::kSuccess) bad.push_back(id);
  }
  if (!bad.empty()) {
    std::string list;
    for (int64_t id : bad) list += (list.empty() ? "" : ", ") + std::to_string(id);
    LOG_ERROR("Pipeline ended with shards that did not succeed: " << list << " (see `mmirage check`)");
    return 1;
  }
  if (any_submitted) {
    LOG_INFO("Every shard's batches are submitted; `mmirage collect --config C` fetches the results");
    return in_progress ? 75 : 0;
  }
  LOG_INFO("All shards completed successfully");
  return 0;
}

}  // namespace

int RunAllShardsLocally(Env* env, const config::Config& config, const LocalRunOptions& options) {
  const std::vector<int64_t> ids = ShardIds(config, options);
  std::deque<int64_t> queue = RunnableShards(env, config, options, ids);
  // backend: sglang image generation: one server shared by all the shard processes, which get its URL in
  // MMIRAGE_SGLANG_BASE_URL (starting one server per shard would load the model once per shard).
  std::unique_ptr<engine::ManagedServer> image_server;
  if (!queue.empty()) {
    auto s = process::image_gen::StartSharedImageServer(config, config.loading.state_dir, config::ProcessVarLookup());
    if (!s.ok()) {
      LOG_ERROR(s.status().message());
      return 1;
    }
    image_server = std::move(*s);
  }
  LocalScheduler scheduler(env, config, options, image_server.get());
  scheduler.Run(std::move(queue));
  if (scheduler.start_failed()) return 1;
  if (scheduler.stopped()) return 128 + StopSignal();
  return FinishRun(env, config, ids, scheduler.in_progress());
}

}  // namespace mmirage::exec

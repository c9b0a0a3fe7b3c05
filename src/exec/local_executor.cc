#include "exec/local_executor.h"

#include <signal.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "engine/managed_server.h"
#include "process/image_gen/image_gen_processor.h"
#include "pipeline/failure_report.h"
#include "state/shard_state.h"
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
};

}  // namespace

int RunAllShardsLocally(Env* env, const config::Config& config, const LocalRunOptions& options) {
  const int64_t n = config.loading.num_shards;
  const int64_t max_attempts = config.execution.max_retries + 1;
  const size_t parallel = static_cast<size_t>(std::max<int64_t>(1, config.execution.local_workers));
  auto attempts_of = [&](int64_t id) { return ShardState(env, config.loading.state_dir, id).Read(); };

  std::deque<int64_t> queue;
  std::vector<int64_t> ids = options.shard_ids;
  if (ids.empty()) {
    for (int64_t id = 0; id < n; ++id) ids.push_back(id);
  }
  for (int64_t id : ids) {
    ShardRecord r = attempts_of(id);
    if (r.status == "success") {
      LOG_INFO("Shard " << id << " already succeeded; skipped");
    } else if (r.attempts_spent >= max_attempts && r.status != "submitted") {
      LOG_ERROR("Shard " << id << " has used all " << max_attempts << " attempts without progress (max_retries="
                         << config.execution.max_retries << "); `mmirage retry --config " << options.config_path
                         << " --reset` gives it a fresh budget");
    } else {
      queue.push_back(id);
    }
  }
  // backend: sglang image generation: one server around all the shard processes, as the original (they get its
  // URL in MMIRAGE_SGLANG_BASE_URL).
  std::unique_ptr<engine::ManagedServer> image_server;
  if (!queue.empty()) {
    auto s = process::image_gen::StartSharedImageServer(config, config.loading.state_dir, config::ProcessEnvLookup());
    if (!s.ok()) {
      LOG_ERROR(s.status().message());
      return 1;
    }
    image_server = std::move(*s);
  }
  std::vector<Worker> running;
  bool stopping = false;
  bool in_progress = false, any_submitted = false;  // batch_api shards
  // Workers of this call that ended without recording an attempt (e.g. a missing API key): bounded too.
  std::map<int64_t, int64_t> attempts_before, uncounted;
  uint64_t stop_started_us = 0;
  bool killed = false;
  bool start_failed = false;  // a worker could not be started: the others are stopped, the run fails
  // Stops the run: no new worker; each running one gets `sig` (and SIGKILL after the grace period, below), and
  // the loop goes on until every one is reaped, so that none outlives this call.
  auto stop_workers = [&](int sig) {
    stopping = true;
    stop_started_us = env->MonotonicMicros();
    queue.clear();
    for (auto& w : running) (void)w.process->Signal(sig);
  };
  while (!queue.empty() || !running.empty()) {
    if (StopRequested() && !stopping) {
      // Each worker is in its own process group (the terminal's Ctrl-C reaches only us), so it gets exactly one
      // stop signal, from here: it commits what is finished and exits resumable.
      stop_workers(StopSignal());
    }
    if (stopping && !killed && !running.empty() &&
        env->MonotonicMicros() - stop_started_us > static_cast<uint64_t>(kStopGraceSeconds) * 1000000) {
      LOG_WARN("workers still running " << kStopGraceSeconds << " s after the stop request; killing them");
      for (auto& w : running) (void)w.process->SignalGroup(SIGKILL);
      killed = true;
    }
    while (!stopping && running.size() < parallel && !queue.empty()) {
      int64_t id = queue.front();
      queue.pop_front();
      SubprocessOptions so;
      so.argv = {options.binary, "run", "--config", options.config_path, "--shard-id", std::to_string(id),
                 "--log-level", options.log_level};
      if (options.collect_stats) so.argv.push_back("--stats");
      // Several workers share the terminal: each reports progress as log lines, not as a live line.
      so.argv.insert(so.argv.end(), {"--progress", "log"});
      so.env_overrides = {{"SLURM_ARRAY_TASK_ID", std::to_string(id)}};
      if (image_server) so.env_overrides.push_back({"MMIRAGE_SGLANG_BASE_URL", image_server->base_url()});
      if (options.stdout_to_stderr) so.stdout_path = "/dev/stderr";
      so.new_process_group = true;      // one stop signal per worker, from us, not a second from the terminal
      so.terminate_with_parent = true;  // and none survives us, even after a SIGKILL
      auto p = Subprocess::Start(so);
      if (!p.ok()) {
        LOG_ERROR("cannot start shard " << id << ": " << p.status().message());
        start_failed = true;
        stop_workers(SIGTERM);
        break;
      }
      LOG_INFO("Shard " << id << ": started (attempt #" << attempts_of(id).retry_count + 1 << ", pid "
                        << (*p)->pid() << ")");
      (void)RegisterStopGroup((*p)->pid());
      attempts_before[id] = attempts_of(id).retry_count;
      running.push_back(Worker{id, std::move(*p)});
    }
    // Reap finished workers; retry failed shards that have attempts left.
    bool reaped = false;
    for (size_t i = 0; i < running.size();) {
      auto rc = running[i].process->Poll();
      if (!rc) {
        ++i;
        continue;
      }
      reaped = true;
      int64_t id = running[i].shard;
      UnregisterStopGroup(running[i].process->pid());
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      ShardRecord r = attempts_of(id);
      if (r.retry_count <= attempts_before[id]) ++uncounted[id];
      if (*rc == 0 && r.status == "success") {
        LOG_INFO("Shard " << id << ": succeeded");
      } else if ((*rc == 0 || *rc == 75) && r.status == "submitted") {  // batch_api: with the provider
        LOG_INFO("Shard " << id << ": " << (*rc == 0 ? "submitted" : "batches still in progress"));
        if (*rc == 75) in_progress = true;
      } else if (stopping) {
        LOG_WARN("Shard " << id << ": stopped (exit " << *rc << "); it resumes from its last commit next time");
      } else if (r.attempts_spent < max_attempts && uncounted[id] < max_attempts) {
        LOG_WARN("Shard " << id << ": failed (exit " << *rc << ", attempt " << r.retry_count << ", "
                          << r.attempts_spent << "/" << max_attempts << " without progress): "
                          << r.error.value_or("no status written") << "; retrying");
        queue.push_back(id);
      } else {
        LOG_ERROR("Shard " << id << ": failed after " << r.retry_count << " attempts (" << r.attempts_spent
                           << " without progress): " << r.error.value_or("no status written") << "; `mmirage retry --config "
                           << options.config_path << " --reset` gives it a fresh budget");
      }
    }
    if (!reaped && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (start_failed) return 1;
  if (stopping) return 128 + StopSignal();
  // The workers' own reports scrolled by among the others: the failed rows of every shard once more, at the end.
  (void)pipeline::LogFailureSummary(env, config);
  std::vector<int64_t> bad;
  for (int64_t id : ids) {
    std::string st = attempts_of(id).status;
    if (st == "submitted") any_submitted = true;
    else if (st != "success") bad.push_back(id);
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

}  // namespace mmirage::exec

#include "exec/local_executor.h"

#include <signal.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "engine/managed_server.h"
#include "process/image_gen_processor.h"
#include "state/shard_state.h"
#include "util/log.h"
#include "util/signals.h"
#include "util/subprocess.h"

namespace mmirage::exec {
namespace {

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
    } else if (r.retry_count >= max_attempts) {
      LOG_ERROR("Shard " << id << " has used all " << max_attempts << " attempts (max_retries="
                         << config.execution.max_retries << ")");
    } else {
      queue.push_back(id);
    }
  }
  // backend: sglang image generation: one server around all the shard processes, as the original (they get its
  // URL in MMIRAGE_SGLANG_BASE_URL).
  std::unique_ptr<engine::ManagedServer> image_server;
  if (!queue.empty()) {
    auto s = process::StartSharedImageServer(config, config.loading.state_dir, config::ProcessEnvLookup());
    if (!s.ok()) {
      LOG_ERROR(s.status().message());
      return 1;
    }
    image_server = std::move(*s);
  }
  std::vector<Worker> running;
  bool stopping = false;
  while (!queue.empty() || !running.empty()) {
    if (StopRequested() && !stopping) {
      stopping = true;
      queue.clear();
      for (auto& w : running) (void)w.process->Signal(StopSignal());
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
      auto p = Subprocess::Start(so);
      if (!p.ok()) {
        LOG_ERROR("cannot start shard " << id << ": " << p.status().message());
        return 1;
      }
      LOG_INFO("Shard " << id << ": started (attempt #" << attempts_of(id).retry_count + 1 << ", pid "
                        << (*p)->pid() << ")");
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
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      ShardRecord r = attempts_of(id);
      if (*rc == 0 && r.status == "success") {
        LOG_INFO("Shard " << id << ": succeeded");
      } else if (stopping) {
        LOG_WARN("Shard " << id << ": stopped (exit " << *rc << "); it resumes from its last commit next time");
      } else if (r.retry_count < max_attempts) {
        LOG_WARN("Shard " << id << ": failed (exit " << *rc << ", attempt " << r.retry_count << "/" << max_attempts
                          << "): " << r.error.value_or("no status written") << "; retrying");
        queue.push_back(id);
      } else {
        LOG_ERROR("Shard " << id << ": failed after " << r.retry_count << " attempts: "
                           << r.error.value_or("no status written"));
      }
    }
    if (!reaped && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (stopping) return 128 + StopSignal();
  std::vector<int64_t> bad;
  for (int64_t id : ids) {
    if (attempts_of(id).status != "success") bad.push_back(id);
  }
  if (!bad.empty()) {
    std::string list;
    for (int64_t id : bad) list += (list.empty() ? "" : ", ") + std::to_string(id);
    LOG_ERROR("Pipeline ended with shards that did not succeed: " << list << " (see `mmirage check`)");
    return 1;
  }
  LOG_INFO("All shards completed successfully");
  return 0;
}

}  // namespace mmirage::exec

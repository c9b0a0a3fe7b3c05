// A managed inference server (SGLang, vLLM, llama-server) started for one shard: spawned in its own process group with
// its stdout/stderr appended to a log file, polled until healthy, then used through the OpenAI engine, and stopped
// (SIGTERM to the group, SIGKILL after a grace period) when the engine shuts down, when startup fails, or when this
// object is destroyed. When mmirage dies (even by SIGKILL) the leader gets SIGKILL and a guard process stops the rest
// of the group (util/process/subprocess.h: stop_group_with_parent), so no server process is left.
//
// Thread-safety: Start, Stop and the destructor from one thread (the engine's owner); the engine from
// CreateManagedServerEngine follows engine.h. Ownership: the ManagedServer owns the child process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine/openai_engine.h"

namespace mmirage {
class Env;
class Subprocess;
}  // namespace mmirage

namespace mmirage::engine {

struct ManagedServerOptions {
  std::string name = "server";           // for messages: "sglang", "vllm", "llama-server"
  std::vector<std::string> argv;         // the command, ready to run (port and model already in it)
  int port = 0;                          // where it listens on 127.0.0.1
  std::string log_path;                  // stdout and stderr appended here (parent directory created)
  double startup_timeout_seconds = 900;  // start → healthy
  double stop_grace_seconds = 10;        // SIGTERM → SIGKILL
  double poll_interval_seconds = 0.2;    // health checks
  Env* env = nullptr;                    // directories, log reads, clock, sleeps; nullptr: Env::Default(). Borrowed.
  std::vector<std::pair<std::string, std::string>> env_overrides;  // e.g. CUDA_VISIBLE_DEVICES of a fleet replica
};

class ManagedServer {
 public:
  // Spawns the server and waits until GET /health (or, where that answers 404, GET /v1/models) returns 200.
  // Errors (the server is stopped first): kNotFound (the program does not exist), kIOError (spawn, log file),
  // kUnavailable "<name> exited (<status>) before becoming healthy" or "<name> not healthy after N s
  // (server_startup_timeout_seconds)", each followed by the last 20 lines of its log.
  static Result<std::unique_ptr<ManagedServer>> Start(const ManagedServerOptions& options);
  // Start in two steps, so several servers load at once: Spawn starts the process (call it from a long-lived
  // thread: the server gets SIGKILL when that thread ends), AwaitHealthy waits (any one thread at a time; on
  // failure the server is stopped). Errors: as Start.
  static Result<std::unique_ptr<ManagedServer>> Spawn(const ManagedServerOptions& options);
  Status AwaitHealthy();
  ~ManagedServer();
  ManagedServer(const ManagedServer&) = delete;
  ManagedServer& operator=(const ManagedServer&) = delete;

  std::string base_url() const;  // http://127.0.0.1:<port>/v1
  double startup_seconds() const { return startup_seconds_; }
  int pid() const;
  // Stops the server and every process of its group. Idempotent.
  void Stop();

 private:
  ManagedServer(const ManagedServerOptions& options, std::unique_ptr<Subprocess> process);
  Status WaitHealthy();

  ManagedServerOptions options_;
  std::unique_ptr<Subprocess> process_;
  double startup_seconds_ = 0;
  uint64_t start_us_ = 0;  // when Spawn began (monotonic)
  bool stopped_ = false;
};

// Starts the server and the OpenAI engine against it (base_url, load_seconds = start → healthy, and, with an
// empty model, the model id the server reports). Shutdown stops the engine, then the server.
// Errors: those of ManagedServer::Start and CreateOpenAiEngine.
Result<std::unique_ptr<Engine>> CreateManagedServerEngine(const ManagedServerOptions& server,
                                                          OpenAiEngineOptions engine);
// The same for several servers, spawned one after the other from the calling thread and loading at once; one
// result per server, in order.
std::vector<Result<std::unique_ptr<Engine>>> CreateManagedServerEngines(
    const std::vector<ManagedServerOptions>& servers, const OpenAiEngineOptions& engine);

}  // namespace mmirage::engine

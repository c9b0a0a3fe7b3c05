#include "engine/managed_server.h"

#include <signal.h>

#include <algorithm>
#include <thread>

#include "data/json.h"
#include "util/env.h"
#include "util/http/event_loop.h"
#include "util/log.h"
#include "util/process/subprocess.h"

namespace mmirage::engine {
namespace {

constexpr int kLogTailLines = 20;
constexpr double kHealthRequestTimeoutSeconds = 5;

std::string LogTail(Env* env, const std::string& path) {
  auto text = env->ReadFileToString(path);
  if (!text.ok()) return "";
  std::string s = std::move(*text);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  size_t pos = s.size();
  for (int n = 0; n < kLogTailLines && pos != std::string::npos && pos > 0; ++n) pos = s.rfind('\n', pos - 1);
  return pos == std::string::npos ? s : s.substr(pos + 1);
}

// The engine over a managed server: the OpenAI engine first, the server after it.
class ManagedServerEngine : public Engine {
 public:
  ManagedServerEngine(std::unique_ptr<ManagedServer> server, std::unique_ptr<Engine> engine)
      : server_(std::move(server)), engine_(std::move(engine)) {}
  ~ManagedServerEngine() override { Shutdown(); }
  void Submit(Request request, CompletionCallback done) override {
    engine_->Submit(std::move(request), std::move(done));
  }
  int Capacity() const override { return engine_->Capacity(); }
  double LoadSeconds() const override { return engine_->LoadSeconds(); }
  int NumGpus() const override { return engine_->NumGpus(); }
  void Shutdown() override {
    engine_->Shutdown();
    server_->Stop();
  }

 private:
  std::unique_ptr<ManagedServer> server_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace

ManagedServer::ManagedServer(const ManagedServerOptions& options, std::unique_ptr<Subprocess> process)
    : options_(options), process_(std::move(process)) {}

ManagedServer::~ManagedServer() { Stop(); }

std::string ManagedServer::base_url() const { return "http://127.0.0.1:" + std::to_string(options_.port) + "/v1"; }

int ManagedServer::pid() const { return process_->pid(); }

Result<std::unique_ptr<ManagedServer>> ManagedServer::Spawn(const ManagedServerOptions& options) {
  ManagedServerOptions o = options;
  if (o.env == nullptr) o.env = Env::Default();
  if (o.argv.empty()) return Status::InvalidArgument(o.name + ": empty server command");
  size_t slash = o.log_path.rfind('/');
  if (slash != std::string::npos && slash > 0) MMIRAGE_TRY(o.env->CreateDirs(o.log_path.substr(0, slash)));
  SubprocessOptions so;
  so.argv = o.argv;
  so.env_overrides = o.env_overrides;
  so.stdout_path = o.log_path;
  so.stderr_path = "=stdout";
  so.new_process_group = true;
  so.terminate_with_parent = true;   // the leader at once
  so.stop_group_with_parent = true;  // and all it forked (a shell, a launcher's workers), even after our SIGKILL
  so.group_stop_grace_seconds = o.stop_grace_seconds;
  uint64_t start_us = o.env->MonotonicMicros();
  LOG_INFO("Starting " << o.name << " on 127.0.0.1:" << o.port << " (log: " << o.log_path << ")");
  std::string command;
  for (const auto& a : o.argv) command += (command.empty() ? "" : " ") + a;
  LOG_DEBUG(o.name << " command: " << command);
  auto p = Subprocess::Start(so);
  if (!p.ok()) return p.status().WithContext("cannot start " + o.name);
  std::unique_ptr<ManagedServer> server(new ManagedServer(o, std::move(*p)));
  server->start_us_ = start_us;
  return server;
}

Result<std::unique_ptr<ManagedServer>> ManagedServer::Start(const ManagedServerOptions& options) {
  MMIRAGE_ASSIGN_OR_RETURN(std::unique_ptr<ManagedServer> server, Spawn(options));
  MMIRAGE_TRY(server->AwaitHealthy());
  return server;
}

Status ManagedServer::AwaitHealthy() {
  const ManagedServerOptions& o = options_;
  Status healthy = WaitHealthy();
  if (!healthy.ok()) {
    Stop();
    std::string tail = LogTail(o.env, o.log_path);
    return Status::Unavailable(healthy.message() + "; last lines of " + o.log_path + ":\n" + tail);
  }
  startup_seconds_ = static_cast<double>(o.env->MonotonicMicros() - start_us_) / 1e6;
  LOG_INFO(o.name << " healthy after "
                  << FormatDouble(static_cast<double>(static_cast<int64_t>(startup_seconds_ * 1000)) / 1000)
                  << " s (pid " << pid() << ")");
  return Status::OK();
}

Status ManagedServer::WaitHealthy() {
  Env* env = options_.env;
  uint64_t start = env->MonotonicMicros();
  std::string root = "http://127.0.0.1:" + std::to_string(options_.port);
  std::string path = "/health";
  while (true) {
    if (auto exit = process_->Poll()) {
      int st = *exit;
      std::string how =
          st >= 128 ? "killed by signal " + std::to_string(st - 128) : "exit status " + std::to_string(st);
      return Status::Unavailable(options_.name + " exited (" + how + ") before becoming healthy");
    }
    HttpRequest r;
    r.method = "GET";
    r.url = root + path;
    r.timeout_seconds = kHealthRequestTimeoutSeconds;
    HttpResponse resp = HttpFetch(r);
    if (resp.transport == HttpTransport::kOk && resp.status_code == 200) return Status::OK();
    if (resp.transport == HttpTransport::kOk && resp.status_code == 404 && path == "/health") {
      path = "/v1/models";  // a server without /health
      continue;
    }
    double waited = static_cast<double>(env->MonotonicMicros() - start) / 1e6;
    if (waited >= options_.startup_timeout_seconds) {
      return Status::Unavailable(
          options_.name + " not healthy after " + std::to_string(static_cast<int64_t>(waited)) +
          " s (server_startup_timeout_seconds=" + FormatDouble(options_.startup_timeout_seconds) + ")");
    }
    env->SleepMicros(static_cast<uint64_t>(options_.poll_interval_seconds * 1e6));
  }
}

void ManagedServer::Stop() {
  if (stopped_ || process_ == nullptr) return;
  stopped_ = true;
  Env* env = options_.env;
  bool was_running = !process_->Poll().has_value();
  Status s = process_->SignalGroup(SIGTERM);
  if (!s.ok()) LOG_WARN(options_.name << ": " << s.message());
  uint64_t deadline = env->MonotonicMicros() + static_cast<uint64_t>(options_.stop_grace_seconds * 1e6);
  while (!process_->Poll().has_value() && env->MonotonicMicros() < deadline) env->SleepMicros(20000);
  if (!process_->Poll().has_value()) {
    LOG_WARN(options_.name << " (pid " << process_->pid() << ") still running "
                           << FormatDouble(options_.stop_grace_seconds) << " s after SIGTERM; sending SIGKILL");
  }
  // SIGKILL to whatever is left of the group (the leader after its grace period, and children that outlived it).
  s = process_->SignalGroup(SIGKILL);
  if (!s.ok()) LOG_WARN(options_.name << ": " << s.message());
  process_->Wait();
  if (was_running) LOG_INFO(options_.name << " stopped");
}

namespace {

Result<std::unique_ptr<Engine>> EngineOver(std::unique_ptr<ManagedServer> server, OpenAiEngineOptions engine_options) {
  engine_options.base_url = server->base_url();
  engine_options.load_seconds = server->startup_seconds();
  auto engine = CreateOpenAiEngine(engine_options);
  if (!engine.ok()) return engine.status();  // the server is stopped by its destructor
  return std::unique_ptr<Engine>(new ManagedServerEngine(std::move(server), std::move(*engine)));
}

}  // namespace

Result<std::unique_ptr<Engine>> CreateManagedServerEngine(const ManagedServerOptions& server_options,
                                                          OpenAiEngineOptions engine_options) {
  MMIRAGE_ASSIGN_OR_RETURN(std::unique_ptr<ManagedServer> server, ManagedServer::Start(server_options));
  return EngineOver(std::move(server), std::move(engine_options));
}

std::vector<Result<std::unique_ptr<Engine>>> CreateManagedServerEngines(
    const std::vector<ManagedServerOptions>& servers, const OpenAiEngineOptions& engine_options) {
  std::vector<Result<std::unique_ptr<ManagedServer>>> spawned;
  for (const auto& s : servers) spawned.push_back(ManagedServer::Spawn(s));  // from this thread: see the header
  std::vector<Status> healthy(spawned.size());
  std::vector<std::thread> waits;
  for (size_t i = 0; i < spawned.size(); ++i) {
    if (spawned[i].ok()) waits.emplace_back([&spawned, &healthy, i] { healthy[i] = (*spawned[i])->AwaitHealthy(); });
  }
  for (auto& t : waits) t.join();
  std::vector<Result<std::unique_ptr<Engine>>> out;
  for (size_t i = 0; i < spawned.size(); ++i) {
    if (!spawned[i].ok()) {
      out.emplace_back(spawned[i].status());
    } else if (!healthy[i].ok()) {
      out.emplace_back(healthy[i]);
    } else {
      out.emplace_back(EngineOver(std::move(*spawned[i]), engine_options));
    }
  }
  return out;
}

}  // namespace mmirage::engine

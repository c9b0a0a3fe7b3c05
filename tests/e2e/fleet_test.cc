// End-to-end: one shard over a fleet of llama-servers on the synthetic model. `endpoint.base_urls` with three
// servers, one of which gets SIGKILL mid-run: the output equals the fault-free run's (greedy), no row lost or
// doubled. `server_args.replicas` starts the servers itself, one log each; a managed replica killed mid-run is
// restarted and the output is still the fault-free run's.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "data/json.h"
#include "e2e/e2e_util.h"
#include "support/proc_util.h"
#include "util/http/event_loop.h"
#include "util/net.h"
#include "util/process/subprocess.h"

namespace mmirage::testing {
namespace {

std::string LlamaServer() {
  std::string bin = MMIRAGE_BINARY;
  return bin.substr(0, bin.rfind('/')) + "/llama-server";
}

bool Healthy(int port) {
  HttpRequest r;
  r.method = "GET";
  r.url = "http://127.0.0.1:" + std::to_string(port) + "/health";
  r.timeout_seconds = 2;
  HttpResponse resp = HttpFetch(r);
  return resp.transport == HttpTransport::kOk && resp.status_code == 200;
}

struct Server {
  std::unique_ptr<Subprocess> process;
  int port = 0;
  ~Server() { Kill(); }
  void Kill() {
    if (!process) return;
    (void)process->Signal(SIGKILL);
    process->Wait();
    process.reset();
  }
};

std::unique_ptr<Server> StartServer(const std::string& log) {
  auto s = std::make_unique<Server>();
  s->port = *FindFreeLoopbackPort();
  SubprocessOptions o;
  o.argv = {
      LlamaServer(), "-m",   SharedTinyModel(), "--host", "127.0.0.1", "--port", std::to_string(s->port), "-np", "2",
      "-c",          "1024", "--threads",       "1"};
  o.stdout_path = log;
  o.stderr_path = "=stdout";
  o.new_process_group = true;
  o.terminate_with_parent = true;
  auto p = Subprocess::Start(o);
  if (!p.ok()) return nullptr;
  s->process = std::move(*p);
  for (int i = 0; i < 600 && !Healthy(s->port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return Healthy(s->port) ? std::move(s) : nullptr;
}

std::string Config(const TempDir& d, const std::string& out, const std::string& llm) {
  return "processors:\n  - type: llm\n" + llm +
         "    default_sampling_params: {temperature: 0, max_new_tokens: 12}\n"
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path(out) +
         ", output_format: jsonl}]\n  state_dir: " + d.Path(out + "_state") +
         "\nprocessing_params:\n"
         "  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
         "  outputs: [{name: summary, type: llm, prompt: \"Summarise: {{ text }}\"}]\n"
         "  output_schema: {id: \"{{ id }}\", summary: \"{{ summary }}\"}\n"
         "  remove_columns: true\n"
         "execution_params: {max_failed_rows: 1000, cache: \"off\"}\n";
}

// The ids of the rows in `errors.jsonl` (their messages may name the replica that answered last).
std::vector<std::string> ErrorIds(const std::string& path) {
  std::vector<std::string> ids;
  for (const auto& line : ReadLines(path)) {
    size_t at = line.find("\"id\":");
    ids.push_back(at == std::string::npos ? line : line.substr(at, line.find(',', at) - at));
  }
  return ids;
}

class FleetE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::access(LlamaServer().c_str(), X_OK), 0) << "llama-server is not built: " << LlamaServer();
    ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model";
    WriteFile(d_.Path("data.jsonl"), MakeRows(36));
  }
  TempDir d_;
};

TEST_F(FleetE2eTest, AReplicaKilledMidRunChangesNothingInTheOutput) {
  // Long enough that the replica is killed while requests are in flight on it.
  const size_t kRows = 96;
  WriteFile(d_.Path("data.jsonl"), MakeRows(kRows));
  std::vector<std::unique_ptr<Server>> servers;
  std::string urls;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(StartServer(d_.Path("server" + std::to_string(i) + ".log")));
    ASSERT_NE(servers.back(), nullptr) << "llama-server " << i << " did not become healthy";
    urls += std::string(i ? ", " : "") + "http://127.0.0.1:" + std::to_string(servers.back()->port) + "/v1";
  }
  std::string llm = "    backend: openai\n    endpoint: {base_urls: [" + urls + "], max_concurrency: 2}\n";
  WriteFile(d_.Path("clean.yaml"), Config(d_, "clean", llm));
  WriteFile(d_.Path("killed.yaml"), Config(d_, "killed", llm));
  auto t0 = std::chrono::steady_clock::now();
  auto clean = RunMmirage("run -q --config clean.yaml", d_.path());
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  auto clean_wall = std::chrono::steady_clock::now() - t0;

  int port1 = servers[1]->port;
  std::thread killer([&] {
    std::this_thread::sleep_for(clean_wall / 5);
    servers[1]->Kill();
  });
  t0 = std::chrono::steady_clock::now();
  auto killed = RunMmirage("run --config killed.yaml", d_.path());
  auto killed_wall = std::chrono::steady_clock::now() - t0;
  killer.join();
  ASSERT_EQ(killed.exit_code, 0) << killed.err;
  std::string url1 = "http://127.0.0.1:" + std::to_string(port1) + "/v1";
  EXPECT_NE(killed.err.find("fleet: " + url1 + " taken out"), std::string::npos)
      << "the replica was not killed mid-run: " << killed.err;
  // The take-out is in the shard's timeline (and so in the HTML report's).
  bool in_timeline = false;
  for (const auto& line : ReadLines(d_.Path("killed_state/shard_0/timeline.jsonl")))
    in_timeline = in_timeline || (line.find("\"event\":\"replica\"") != std::string::npos &&
                                  line.find("\"name\":\"" + url1 + "\"") != std::string::npos &&
                                  line.find("\"change\":\"out\"") != std::string::npos);
  EXPECT_TRUE(in_timeline) << ReadFile(d_.Path("killed_state/shard_0/timeline.jsonl"));
  auto rows = ReadLines(d_.Path("clean/shard_0/data.jsonl"));
  EXPECT_GE(rows.size(), kRows / 2) << "most rows answer";
  EXPECT_EQ(ReadLines(d_.Path("killed/shard_0/data.jsonl")), rows);
  EXPECT_EQ(ErrorIds(d_.Path("killed/shard_0/errors.jsonl")), ErrorIds(d_.Path("clean/shard_0/errors.jsonl")));
  EXPECT_EQ(rows.size() + ErrorIds(d_.Path("clean/shard_0/errors.jsonl")).size(), kRows);
  // status.json: the fleet's replicas and the output tokens each generated, which add up to the shard's.
  auto st = ParseJson(ReadFile(d_.Path("killed_state/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  const Value& stats = *st->Find("stats");
  EXPECT_EQ(stats.Find("replicas")->as_int(), 3);
  ASSERT_TRUE(stats.Find("replica_output_tokens")->is_array());
  int64_t sum = 0;
  for (const auto& t : stats.Find("replica_output_tokens")->as_array()) sum += t.as_int();
  EXPECT_EQ(sum, stats.Find("output_tokens")->as_int());
  EXPECT_TRUE(stats.Find("replica_restarts")->is_int());
  std::cerr << rows.size() << " rows answered; fault-free " << std::chrono::duration<double>(clean_wall).count()
            << " s, one replica killed " << std::chrono::duration<double>(killed_wall).count() << " s\n";
}

TEST_F(FleetE2eTest, ManagedReplicasEachGetTheirOwnServer) {
  WriteFile(d_.Path("data.jsonl"), MakeRows(6));
  std::string llm = "    backend: llama-server\n    server_args: {model_path: " + SharedTinyModel() +
                    ", replicas: 2, extra_engine_args: {max_running_requests: 2, n_threads: 1}}\n";
  WriteFile(d_.Path("c.yaml"), Config(d_, "out", llm));
  auto r = RunMmirage("run -q --config c.yaml", d_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadLines(d_.Path("out/shard_0/data.jsonl")).size() + ReadLines(d_.Path("out/shard_0/errors.jsonl")).size(),
            6u);
  for (const char* log : {"server_0.log", "server_1.log"})
    EXPECT_NE(ReadFile(d_.Path(std::string("out_state/shard_0/") + log)).find("listening"), std::string::npos) << log;
}

// The pid of the llama-server listening on `port` (from /proc/*/cmdline), or 0.
int LlamaServerPid(int port) {
  std::string want = std::string("--port") + '\0' + std::to_string(port) + '\0';
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(entry.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmd.find("llama-server") != std::string::npos && cmd.find(want) != std::string::npos) return std::stoi(name);
  }
  return 0;
}

// The port of the managed server whose log is `log_name`, from mmirage's "Starting llama-server on 127.0.0.1:<port>
// (log: .../<log_name>)" line, or 0.
int ReplicaPort(const std::string& mmirage_log, const std::string& log_name) {
  const std::string at = "Starting llama-server on 127.0.0.1:";
  for (size_t p = mmirage_log.find(at); p != std::string::npos; p = mmirage_log.find(at, p + 1)) {
    size_t eol = mmirage_log.find('\n', p);
    if (mmirage_log.substr(p, eol - p).find("/" + log_name + ")") != std::string::npos)
      return std::atoi(mmirage_log.c_str() + p + at.size());
  }
  return 0;
}

TEST_F(FleetE2eTest, AManagedReplicaKilledMidRunIsRestartedAndChangesNothingInTheOutput) {
  std::string llm = "    backend: llama-server\n    server_args: {model_path: " + SharedTinyModel() +
                    ", replicas: 2, max_restarts: 2, extra_engine_args: {max_running_requests: 2, n_threads: 1}}\n";
  WriteFile(d_.Path("data.jsonl"), MakeRows(120));  // enough work left after the kill for the restart (1 s backoff)
  WriteFile(d_.Path("clean.yaml"), Config(d_, "clean", llm));
  WriteFile(d_.Path("killed.yaml"), Config(d_, "killed", llm));
  auto clean = RunMmirage("run -q --config clean.yaml", d_.path());
  ASSERT_EQ(clean.exit_code, 0) << clean.err;

  SubprocessOptions o;
  o.argv = {MMIRAGE_BINARY, "run", "--config", d_.Path("killed.yaml")};
  o.stdout_path = d_.Path("killed.log");
  o.stderr_path = "=stdout";
  o.new_process_group = true;
  o.terminate_with_parent = true;
  auto run = Subprocess::Start(o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  // Mid-run: the replicas are loaded and rows are being generated; replica 0's port is in mmirage's log.
  std::string log = d_.Path("killed.log");
  bool serving = WaitFor([&] { return ReadFile(log).find("Model loaded") != std::string::npos; }, 60);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int pid = LlamaServerPid(ReplicaPort(ReadFile(log), "server_0.log"));
  if (!serving || pid <= 0) {
    (void)(*run)->SignalGroup(SIGKILL);
    (*run)->Wait();
    FAIL() << "replica 0 never served (pid " << pid << "):\n" << ReadFile(d_.Path("killed.log"));
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int code = (*run)->Wait();
  std::string out = ReadFile(d_.Path("killed.log"));
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("fleet: replica 0 taken out"), std::string::npos) << out;
  EXPECT_NE(out.find("fleet: replica 0 restarted"), std::string::npos) << out;
  EXPECT_EQ(ReadLines(d_.Path("killed/shard_0/data.jsonl")), ReadLines(d_.Path("clean/shard_0/data.jsonl")));
  EXPECT_EQ(ErrorIds(d_.Path("killed/shard_0/errors.jsonl")), ErrorIds(d_.Path("clean/shard_0/errors.jsonl")));
  auto st = ParseJson(ReadFile(d_.Path("killed_state/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  EXPECT_GE(st->Find("stats")->Find("replica_restarts")->as_int(), 1);
  std::string timeline = ReadFile(d_.Path("killed_state/shard_0/timeline.jsonl"));
  EXPECT_NE(timeline.find("\"change\":\"restarted\""), std::string::npos) << timeline;
}

}  // namespace
}  // namespace mmirage::testing

namespace mmirage::testing {
namespace {

// execution_params.gpus_per_worker: each local worker process sees only its own GPU slice.
TEST(GpusPerWorkerTest, EachLocalWorkerSeesItsOwnGpus) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(4));
  WriteFile(d.Path("fn.py"), "import os\n\ndef f(row):\n    return os.environ.get('CUDA_VISIBLE_DEVICES', '')\n");
  WriteFile(d.Path("c.yaml"),
            "processors:\n  - type: custom\n    script_path: " + d.Path("fn.py") +
                "\n    function_name: f\n"
                "loading_params:\n  state_dir: " +
                d.Path("state") + "\n  num_shards: 2\n  datasets: [{type: JSONL, path: " + d.Path("data.jsonl") +
                ", output_dir: " + d.Path("out") +
                ", output_format: jsonl}]\n"
                "processing_params:\n  inputs: [{name: id, key: id}]\n  outputs: [{name: gpus, type: custom}]\n"
                "  remove_columns: true\n  output_schema: {id: \"{{ id }}\", gpus: \"{{ gpus }}\"}\n"
                "execution_params: {mode: local, retry: true, local_workers: 2, gpus_per_worker: 2}\n");
  auto r =
      RunCommand("CUDA_VISIBLE_DEVICES=3,5,6,7 '" + std::string(MMIRAGE_BINARY) + "' run -q --config c.yaml", d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string s0 = ReadFile(d.Path("out/shard_0/data.jsonl")), s1 = ReadFile(d.Path("out/shard_1/data.jsonl"));
  bool a = s0.find("\"gpus\":\"3,5\"") != std::string::npos && s1.find("\"gpus\":\"6,7\"") != std::string::npos;
  bool b = s0.find("\"gpus\":\"6,7\"") != std::string::npos && s1.find("\"gpus\":\"3,5\"") != std::string::npos;
  EXPECT_TRUE(a || b) << s0 << s1;
}

}  // namespace
}  // namespace mmirage::testing

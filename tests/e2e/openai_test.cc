// End-to-end: `mmirage run` with the OpenAI-compatible backends against a real llama-server (built by
// scripts/setup.sh next to mmirage) on the synthetic model: an existing endpoint, a managed server (started and
// stopped by mmirage, no orphan), a fault-injecting proxy in front of the server, an unreachable endpoint, and a
// server that fails to start. Every server and proxy listens on a free 127.0.0.1 port the test picked.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "data/json.h"
#include "e2e/e2e_util.h"
#include "util/http/event_loop.h"
#include "util/net.h"
#include "util/process/subprocess.h"

namespace mmirage::testing {
namespace {

std::string BinDir() {
  std::string bin = MMIRAGE_BINARY;
  return bin.substr(0, bin.rfind('/'));
}
std::string LlamaServerPath() { return BinDir() + "/llama-server"; }

const std::string& TinyModel() { return SharedTinyModel(); }

bool WaitHealthy(int port, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    HttpRequest r;
    r.method = "GET";
    r.url = "http://127.0.0.1:" + std::to_string(port) + "/health";
    r.timeout_seconds = 2;
    HttpResponse resp = HttpFetch(r);
    if (resp.transport == HttpTransport::kOk && resp.status_code == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// A child process (server or proxy) in its own group, killed with its group at destruction.
struct Child {
  std::unique_ptr<Subprocess> process;
  int port = 0;
  ~Child() {
    if (process) {
      (void)process->Signal(SIGKILL);
      process->Wait();
    }
  }
};

std::unique_ptr<Child> StartChild(std::vector<std::string> argv, const std::string& log, int port) {
  SubprocessOptions o;
  o.argv = std::move(argv);
  o.stdout_path = log;
  o.stderr_path = "=stdout";
  o.new_process_group = true;
  o.terminate_with_parent = true;  // a test killed midway leaves no server behind
  auto p = Subprocess::Start(o);
  if (!p.ok()) return nullptr;
  auto c = std::make_unique<Child>();
  c->process = std::move(*p);
  c->port = port;
  return c;
}

class OpenAiE2eTest : public ::testing::Test {
 protected:
  // One llama-server for the tests that use an existing endpoint.
  static void SetUpTestSuite() {
    if (!IsRegularFileOnDisk(LlamaServerPath()) || TinyModel().empty()) return;
    log_dir_ = new TempDir();
    int port = *FindFreeLoopbackPort();
    server_ = StartChild({LlamaServerPath(), "-m", TinyModel(), "--host", "127.0.0.1", "--port", std::to_string(port),
                          "-np", "4", "-c", "2048", "--threads", "1"},  // ctest runs two tests at once on 2 cores
                         log_dir_->Path("llama-server.log"), port)
                  .release();
    if (server_ != nullptr && !WaitHealthy(port, 60)) {
      delete server_;
      server_ = nullptr;
    }
  }
  static void TearDownTestSuite() {
    bool healthy = server_ != nullptr;
    delete server_;
    server_ = nullptr;
    if (healthy) {  // else its log stays for the failures that name it
      delete log_dir_;
      log_dir_ = nullptr;
    }
  }
  static bool IsRegularFileOnDisk(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

  void SetUp() override {
    ASSERT_TRUE(IsRegularFileOnDisk(LlamaServerPath()))
        << "llama-server is not built: " << LlamaServerPath()
        << " is missing (scripts/setup.sh builds it and links it at build/llama-server)";
    ASSERT_FALSE(TinyModel().empty()) << "cannot generate the synthetic model";
    ASSERT_NE(server_, nullptr) << "llama-server did not become healthy; see its log in " << log_dir_->path();
  }

  // An llm config: a plain output and (with `json`) a JSON output per row. The synthetic model's greedy outputs
  // are sometimes invalid UTF-8, which llama-server answers with HTTP 500: such rows use up their retries and
  // their regenerations, hence few retries (and the JSON output, slow on llama-server, only where it matters).
  static std::string Config(const TempDir& d, const std::string& llm_block, int rows_allowed_to_fail,
                            bool json = true) {
    std::string judge = json ? "    - name: judge\n"
                               "      type: llm\n"
                               "      output_type: JSON\n"
                               "      output_schema:\n"
                               "        score: {type: int, min: 0, max: 3}\n"
                               "        relevant: bool\n"
                               "      prompt: \"Rate this summary of '{{ text }}': {{ summary }}\"\n"
                             : "";
    return "processors:\n"
           "  - type: llm\n" +
           llm_block +
           "    default_sampling_params: {temperature: 0, max_new_tokens: 16}\n"
           "loading_params:\n"
           "  datasets: [{type: JSONL, path: " +
           d.Path("data.jsonl") + ", output_dir: " + d.Path("out") +
           ", output_format: jsonl}]\n"
           "  state_dir: " +
           d.Path("state") +
           "\n"
           "processing_params:\n"
           "  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
           "  outputs:\n"
           "    - name: summary\n"
           "      type: llm\n"
           "      prompt: \"Summarise: {{ text }}\"\n" +
           judge +
           "  remove_columns: true\n"
           "  output_schema:\n"
           "    id: \"{{ id }}\"\n"
           "    summary: \"{{ summary }}\"\n" +
           (json ? "    judge: \"{{ judge }}\"\n" : "") +
           "execution_params: {max_failed_rows: " + std::to_string(rows_allowed_to_fail) + "}\n";
  }

  static std::string EndpointBlock(int port, const std::string& extra = "") {
    return "    backend: openai\n"
           "    server_args: {model_path: none}\n"
           "    endpoint: {base_url: \"http://127.0.0.1:" +
           std::to_string(port) + "/v1\", max_concurrency: 8" +
           (extra.find("max_retries") == std::string::npos ? ", max_retries: 2" : "") + extra + "}\n";
  }

  // Every row is written or listed in errors.jsonl with a message; nothing blank. Returns the rows written.
  static size_t CheckRowsAccountedFor(const TempDir& d, size_t n, bool json = true) {
    auto rows = ReadLines(d.Path("out/shard_0/data.jsonl"));
    auto errors = ReadLines(d.Path("out/shard_0/errors.jsonl"));
    EXPECT_EQ(rows.size() + errors.size(), n);
    for (const auto& line : rows) {
      auto v = ParseJson(line);
      EXPECT_TRUE(v.ok()) << line;
      if (!v.ok()) continue;
      EXPECT_TRUE(v->Find("summary")->is_string()) << line;
      if (json) { EXPECT_TRUE(v->Find("judge")->is_object()) << line; }
    }
    for (const auto& line : errors) {
      auto e = ParseJson(line);
      EXPECT_TRUE(e.ok()) << line;
      if (!e.ok()) continue;
      const Value* m = e->Find("message");
      EXPECT_TRUE(m != nullptr && m->is_string() && !m->as_string().empty()) << line;
    }
    return rows.size();
  }

  static Value Stats(const TempDir& d) {
    auto st = ParseJson(ReadFile(d.Path("state/shard_0/status.json")));
    EXPECT_TRUE(st.ok());
    return st.ok() && st->Find("stats") != nullptr ? *st->Find("stats") : Value();
  }

  static TempDir* log_dir_;
  static Child* server_;
};

TempDir* OpenAiE2eTest::log_dir_ = nullptr;
Child* OpenAiE2eTest::server_ = nullptr;

TEST_F(OpenAiE2eTest, AnExistingEndpointGeneratesEveryRowWithTokenCounts) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(8));
  WriteFile(d.Path("cfg.yaml"), Config(d, EndpointBlock(server_->port), 8));
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(CheckRowsAccountedFor(d, 8), 0u);
  Value stats = Stats(d);
  ASSERT_TRUE(stats.is_object());
  EXPECT_GT(stats.Find("input_tokens")->as_int(), 0);
  EXPECT_GT(stats.Find("output_tokens")->as_int(), 0);
}

TEST_F(OpenAiE2eTest, CompletionModeSendsThePromptVerbatim) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(6));
  WriteFile(d.Path("cfg.yaml"), Config(d, EndpointBlock(server_->port, ", mode: completion"), 6, false));
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CheckRowsAccountedFor(d, 6, false);
  EXPECT_GT(Stats(d).Find("output_tokens")->as_int(), 0);
}

TEST_F(OpenAiE2eTest, FaultsAreRetriedAndEveryRowIsWrittenOrListed) {
  TempDir d;
  int port = *FindFreeLoopbackPort();
  auto proxy = StartChild({PythonPath(), std::string(MMIRAGE_SOURCE_DIR) + "/tests/e2e/fault_proxy.py", "--port",
                           std::to_string(port), "--upstream", std::to_string(server_->port), "--fault-rate", "0.3",
                           "--stall-seconds", "4", "--fault-log", d.Path("faults.log")},
                          d.Path("proxy.log"), port);
  ASSERT_NE(proxy, nullptr);
  ASSERT_TRUE(WaitHealthy(port, 20)) << ReadFile(d.Path("proxy.log"));  // GETs are never faulted
  WriteFile(d.Path("data.jsonl"), MakeRows(40));
  WriteFile(d.Path("cfg.yaml"),
            Config(d, EndpointBlock(port, ", timeout_seconds: 2, max_retries: 4, mode: completion"), 40, false));
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(CheckRowsAccountedFor(d, 40, false), 20u);
  auto faults = ReadLines(d.Path("faults.log"));
  EXPECT_GE(faults.size(), 8u);  // ~30 % of 40+ requests
  std::string all;
  for (const auto& f : faults) all += f + " ";
  for (const char* kind : {"500", "429", "stall", "reset"}) EXPECT_NE(all.find(kind), std::string::npos) << kind;
  EXPECT_GT(Stats(d).Find("output_tokens")->as_int(), 0);
}

TEST_F(OpenAiE2eTest, AnUnreachableEndpointFailsTheShardFastNamingIt) {
  TempDir d;
  int port = *FindFreeLoopbackPort();  // nothing listens there
  WriteFile(d.Path("data.jsonl"), MakeRows(40));
  WriteFile(d.Path("cfg.yaml"), Config(d, EndpointBlock(port, ", max_retries: 1000, down_timeout_seconds: 2"), 0));
  auto start = std::chrono::steady_clock::now();
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("endpoint http://127.0.0.1:" + std::to_string(port) + "/v1 unreachable for"), std::string::npos)
      << r.err;
  EXPECT_LT(took, 60);  // not 40 rows × 1000 retries
}

TEST_F(OpenAiE2eTest, AManagedLlamaServerIsStartedAndStoppedWithoutOrphans) {
  TempDir d;
  // A model path of our own, so that no other llama-server command line can match it.
  std::string model = d.Path("managed-model.gguf");
  ASSERT_EQ(::symlink(TinyModel().c_str(), model.c_str()), 0);
  WriteFile(d.Path("data.jsonl"), MakeRows(12));
  WriteFile(d.Path("cfg.yaml"),
            Config(d,
                   "    backend: llama-server\n"
                   "    server_args:\n"
                   "      model_path: " +
                       model +
                       "\n"
                       "      extra_engine_args: {max_running_requests: 4, context_length: 512, n_threads: 1}\n"
                       "    endpoint: {base_url: \"http://ignored.invalid/v1\", max_retries: 2}\n",
                   12, false));
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(CheckRowsAccountedFor(d, 12, false), 0u);
  Value stats = Stats(d);
  EXPECT_GT(stats.Find("output_tokens")->as_int(), 0);
  EXPECT_GT(stats.Find("model_load_seconds")->as_number(), 0);  // start → healthy
  EXPECT_NE(ReadFile(d.Path("state/shard_0/server.log")).find("listening"), std::string::npos);
  // "[l]" keeps the pattern from matching the shell that runs pgrep.
  auto ps = RunCommand("pgrep -f '[l]lama-server -m " + model + "'");
  EXPECT_NE(ps.exit_code, 0) << "a llama-server is still running: " << ps.out;
}

TEST_F(OpenAiE2eTest, AManagedServerIsGoneAfterMmirageIsKilled) {
  TempDir d;
  std::string model = d.Path("killed-model.gguf");
  ASSERT_EQ(::symlink(TinyModel().c_str(), model.c_str()), 0);
  WriteFile(d.Path("data.jsonl"), MakeRows(2000));
  WriteFile(d.Path("cfg.yaml"),
            Config(d,
                   "    backend: llama-server\n"
                   "    server_args:\n"
                   "      model_path: " +
                       model +
                       "\n"
                       "      extra_engine_args: {max_running_requests: 2, context_length: 512, n_threads: 1}\n",
                   2000, false));
  auto run = StartChild({MMIRAGE_BINARY, "run", "--config", d.Path("cfg.yaml")}, d.Path("mmirage.log"), 0);
  ASSERT_NE(run, nullptr);
  std::string pattern = "'[l]lama-server -m " + model + "'";  // "[l]": not the shell running pgrep
  bool started = false;
  for (int i = 0; i < 300 && !started; ++i) {  // up to 30 s for the server to come up
    started = ReadFile(d.Path("mmirage.log")).find("healthy") != std::string::npos;
    if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(started) << ReadFile(d.Path("mmirage.log"));
  EXPECT_EQ(RunCommand("pgrep -f " + pattern).exit_code, 0);
  ASSERT_TRUE(run->process->Signal(SIGKILL).ok());
  run->process->Wait();
  run->process.reset();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {  // PR_SET_PDEATHSIG → SIGTERM; llama-server exits within a moment
    gone = RunCommand("pgrep -f " + pattern).exit_code != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "llama-server outlived a SIGKILLed mmirage";
  if (!gone) RunCommand("kill -KILL $(pgrep -f " + pattern + ")");  // the orphan, by pid
}

TEST_F(OpenAiE2eTest, AServerThatExitsAtStartFailsTheShardWithItsLog) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(3));
  WriteFile(d.Path("cfg.yaml"),
            Config(d,
                   "    backend: llama-server\n"
                   "    server_command: [\"/bin/sh\", \"-c\", \"echo cannot-load-the-model; exit 3\"]\n"
                   "    server_startup_timeout_seconds: 30\n",
                   3, false));
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("llama-server exited (exit status 3) before becoming healthy"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot-load-the-model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mmirage::testing

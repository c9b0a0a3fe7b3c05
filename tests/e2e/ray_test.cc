// execution_params.mode: ray against a real local Ray head (`ray start --head --num-cpus 2` from the test venv,
// tests/requirements-dist.txt), started for this suite on 127.0.0.1 and stopped on the way out with everything it
// started: a 4-shard model-free config run as a Ray job gives the output of a local run, and a shard process killed
// mid-run is judged failed, resubmitted, and the merged output is still the local one; through a ray:// address, a
// kill -9 of the submitting run leaves the job running and a second run reattaches to it; a 2-shard config on the
// synthetic model gives the rows of a local run too.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "e2e/e2e_util.h"
#include "support/proc_util.h"

namespace mmirage::testing {
namespace {

// A TCP port free on 127.0.0.1 now (the kernel's ephemeral range, outside Ray's default worker ports 10002-19999).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The pid of a live `mmirage run ... --shard-id <id>` whose command line names `config`, or -1.
pid_t FindShardProcess(const std::string& config, int id) {
  DIR* proc = ::opendir("/proc");
  pid_t found = -1;
  while (dirent* e = proc ? ::readdir(proc) : nullptr) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::string cmd = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    std::string want = std::string("--config") + '\0' + config + '\0' + "--shard-id" + '\0' + std::to_string(id) + '\0';
    if (cmd.find(want) != std::string::npos && cmd.find("ray_driver") == std::string::npos) found = pid;
  }
  if (proc) ::closedir(proc);
  return found;
}

std::string Execution(const std::string& mode_block) {
  return "execution_params:\n  retry: true\n  merge: true\n  max_retries: 2\n  poll_interval_seconds: 1\n"
         "  commit_every_rows: 1\n  commit_interval_seconds: 0.01\n" +
         mode_block;
}

class RayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    std::string ray = std::string(MMIRAGE_DIST_PYTHON);
    ray = ray.substr(0, ray.rfind('/')) + "/ray";
    int port = FreePort(), dashboard = FreePort(), client = FreePort(), agent = FreePort();
    address_ = "http://127.0.0.1:" + std::to_string(dashboard);
    client_address_ = "ray://127.0.0.1:" + std::to_string(client);
    dashboard_port_ = dashboard;
    std::string log = dir_->Path("head.log");
    head_ = ::fork();
    if (head_ == 0) {
      ::setsid();
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      f = std::freopen(log.c_str(), "a", stdout);
      (void)f;
      ::setenv("RAY_USAGE_STATS_ENABLED", "0", 1);
      std::vector<std::string> args = {ray,
                                       "start",
                                       "--head",
                                       "--block",
                                       "--num-cpus=2",
                                       "--num-gpus=0",
                                       "--node-ip-address=127.0.0.1",
                                       "--dashboard-host=127.0.0.1",
                                       "--include-dashboard=true",
                                       "--port=" + std::to_string(port),
                                       "--dashboard-port=" + std::to_string(dashboard),
                                       "--ray-client-server-port=" + std::to_string(client),
                                       "--dashboard-agent-listen-port=" + std::to_string(agent),
                                       "--temp-dir=" + dir_->Path("ray"),
                                       "--disable-usage-stats"};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(ray.c_str(), argv.data());
      ::_exit(127);
    }
    bool up =
        WaitFor([&] { return RunCommand("curl -sf " + address_ + "/api/jobs/ -o /dev/null").exit_code == 0; }, 60);
    if (!up) {
      error_ = "the local Ray head (" + ray + " start --head) did not serve its Jobs API at " + address_ +
               " within 60 s (run scripts/setup.sh --for-tests, which installs tests/requirements-dist.txt): " +
               ReadFile(log).substr(0, 3000);
    }
  }
  static void TearDownTestSuite() {
    if (head_ > 0) {
      ::kill(head_, SIGTERM);  // `ray start --block` stops every Ray process it started
      bool gone = WaitFor([&] { return ::waitpid(head_, nullptr, WNOHANG) == head_; }, 30);
      ::kill(-head_, SIGKILL);
      if (!gone) ::waitpid(head_, nullptr, 0);
    }
    delete dir_;
  }
  void SetUp() override { ASSERT_TRUE(error_.empty()) << error_; }

  // A ray:// address (the head's Ray Client port) names the head; the Jobs API is its dashboard's port. The
  // submitting `run` is killed (-9) once the first shard task runs: the job goes on into the state directory,
  // `check` shows the run in progress, and a second `run` reattaches to the job and ends with the local output.
  void ReattachAfterTheSubmitterIsKilled(const TempDir& d, const std::vector<std::string>& want) {
    std::string client_block = "  mode: ray\n  ray:\n    address: " + client_address_ +
                               "\n    dashboard_port: " + std::to_string(dashboard_port_) +
                               "\n    python: " + MMIRAGE_DIST_PYTHON + "\n    num_cpus: 1\n    max_parallel: 1\n";
    std::string acfg = d.Path("attach.yaml");
    WriteFile(acfg, RestructureConfig(d.Path("data.jsonl"), d.Path("aout"), d.Path("astate"), "  num_shards: 4\n",
                                      Execution(client_block)));
    std::string alog = d.Path("attach.log");
    pid_t first = ::fork();
    if (first == 0) {
      FILE* f = std::freopen(alog.c_str(), "w", stderr);
      (void)f;
      ::execl(MMIRAGE_BINARY, MMIRAGE_BINARY, "run", "--config", acfg.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    bool started = WaitFor([&] { return FindShardProcess(acfg, 0) > 0; }, 60);
    ::kill(first, SIGKILL);
    ::waitpid(first, nullptr, 0);
    ASSERT_TRUE(started) << "no shard task started through " << client_address_ << ": " << ReadFile(alog);
    EXPECT_NE(ReadFile(alog).find("(the dashboard of " + client_address_ + ")"), std::string::npos) << ReadFile(alog);
    auto progress = RunMmirage("check --config " + acfg);
    EXPECT_NE(progress.exit_code, 0) << progress.out;  // not every shard succeeded yet
    auto again = RunMmirage("run --config " + acfg);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.err.find("Reattaching to Ray job mmirage-"), std::string::npos) << again.err;
    EXPECT_EQ(again.err.find("Submitted Ray job"), std::string::npos) << again.err;
    EXPECT_NE(again.err.find("/4 shards succeeded"), std::string::npos) << again.err;  // progress while it waits
    EXPECT_EQ(CatLines(d.Path("aout/merged")), want);
  }

  static TempDir* dir_;
  static pid_t head_;
  static std::string address_, client_address_, error_;
  static int dashboard_port_;
};
TempDir* RayTest::dir_ = nullptr;
pid_t RayTest::head_ = -1;
std::string RayTest::address_, RayTest::client_address_, RayTest::error_;
int RayTest::dashboard_port_ = 0;

// One test (one Ray head for both runs): the suite's tests run in separate processes.
TEST_F(RayTest, FourShardsMatchLocalAndAKilledShardTaskIsRetried) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(40000));
  WriteFile(d.Path("l.yaml"), RestructureConfig(d.Path("data.jsonl"), d.Path("lout"), d.Path("lstate"),
                                                "  num_shards: 4\n", Execution("")));
  auto local = RunMmirage("run --config " + d.Path("l.yaml") + " --log-level WARNING");
  ASSERT_EQ(local.exit_code, 0) << local.err;
  std::vector<std::string> want = CatLines(d.Path("lout/merged"));
  ASSERT_EQ(want.size(), 40000u);

  std::string ray_block = "  mode: ray\n  ray:\n    address: " + address_ + "\n    python: " + MMIRAGE_DIST_PYTHON +
                          "\n    num_cpus: 1\n    max_parallel: 2\n";
  std::string cfg = d.Path("ray.yaml");
  WriteFile(cfg, RestructureConfig(d.Path("data.jsonl"), d.Path("rout"), d.Path("rstate"), "  num_shards: 4\n",
                                   Execution(ray_block)));
  auto r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Submitted Ray job"), std::string::npos) << r.err;
  EXPECT_EQ(CatLines(d.Path("rout/merged")), want);
  auto check = RunMmirage("check --config " + cfg);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;

  // Shard 1's process is killed as soon as its Ray task starts it; the run resubmits shard 1 and still succeeds.
  std::string kcfg = d.Path("kill.yaml");
  WriteFile(kcfg, RestructureConfig(d.Path("data.jsonl"), d.Path("kout"), d.Path("kstate"), "  num_shards: 4\n",
                                    Execution(ray_block)));
  std::string log = d.Path("kill.log");
  pid_t run = ::fork();
  if (run == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    ::execl(MMIRAGE_BINARY, MMIRAGE_BINARY, "run", "--config", kcfg.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_t victim = -1;
  std::string victim_env;  // the shard process's environment, NUL-separated
  bool killed = WaitFor(
      [&] {
        victim = FindShardProcess(kcfg, 1);
        if (victim > 0) victim_env = ReadFile("/proc/" + std::to_string(victim) + "/environ");
        return victim > 0 && ::kill(victim, SIGKILL) == 0;
      },
      60);
  int status = 0;
  ::waitpid(run, &status, 0);
  ASSERT_TRUE(killed) << "shard 1's process never appeared: " << ReadFile(log);
  // max_parallel 2 of 4 shards: the job's runtime_env gives each task its share of hosted rate limits.
  EXPECT_NE(victim_env.find(std::string(1, '\0') + "MMIRAGE_RATE_LIMIT_SHARES=2" + '\0'), std::string::npos);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(log);
  EXPECT_NE(ReadFile(log).find("Retrying failed shards: 1"), std::string::npos) << ReadFile(log);
  EXPECT_EQ(CatLines(d.Path("kout/merged")), want);

  ReattachAfterTheSubmitterIsKilled(d, want);
  if (HasFatalFailure()) return;

  // The synthetic model, 2 shards: each Ray task loads the model in its shard process.
  ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model with " << MakeTestModelTool();
  WriteFile(d.Path("small.jsonl"), MakeRows(6));
  auto llm = [&](const std::string& out, const std::string& mode) {
    return "processors:\n  - type: llm\n    server_args:\n      model_path: " + SharedTinyModel() +
           "\n      extra_engine_args: {max_running_requests: 1, context_length: 256, n_threads: 1}\n"
           "    default_sampling_params: {temperature: 0, max_new_tokens: 8}\n"
           "loading_params:\n  datasets: [{type: JSONL, path: " +
           d.Path("small.jsonl") + ", output_dir: " + d.Path(out) +
           ", output_format: jsonl}]\n  state_dir: " + d.Path(out + "_state") +
           "\n  num_shards: 2\nprocessing_params:\n  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
           "  outputs: [{name: answer, type: llm, prompt: \"Rewrite: {{ text }}\"}]\n  remove_columns: true\n"
           "  output_schema: {id: \"{{ id }}\", answer: \"{{ answer }}\"}\n" +
           Execution("  cache: off\n" + mode);
  };
  WriteFile(d.Path("llm_local.yaml"), llm("llm_local", ""));
  auto llm_local = RunMmirage("run --config " + d.Path("llm_local.yaml") + " --log-level WARNING");
  ASSERT_EQ(llm_local.exit_code, 0) << llm_local.err;
  WriteFile(d.Path("llm_ray.yaml"), llm("llm_ray", ray_block));
  auto llm_ray = RunMmirage("run --config " + d.Path("llm_ray.yaml") + " --log-level WARNING");
  ASSERT_EQ(llm_ray.exit_code, 0) << llm_ray.err;
  std::vector<std::string> llm_want = CatLines(d.Path("llm_local/merged"));
  ASSERT_EQ(llm_want.size(), 6u);
  EXPECT_EQ(CatLines(d.Path("llm_ray/merged")), llm_want);
}

}  // namespace
}  // namespace mmirage::testing

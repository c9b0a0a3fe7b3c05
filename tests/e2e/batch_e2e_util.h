// Shared by the batch_api end-to-end tests: the fake provider (tests/support/fake_batch_provider.py) on a free
// 127.0.0.1 port, child processes killed with the test, the binary, and what the provider was asked to create.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "data/json.h"
#include "e2e/e2e_util.h"
#include "util/http/event_loop.h"
#include "util/net.h"
#include "util/process/subprocess.h"

namespace mmirage::testing {

inline bool WaitHealthy(int port, double seconds) {
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

struct Child {
  std::unique_ptr<Subprocess> process;
  ~Child() {
    if (process) {
      (void)process->Signal(SIGKILL);
      process->Wait();
    }
  }
};

inline std::unique_ptr<Child> Start(std::vector<std::string> argv, const std::string& log,
                                    std::vector<std::pair<std::string, std::string>> env = {}) {
  SubprocessOptions o;
  o.argv = std::move(argv);
  o.stdout_path = log;
  o.stderr_path = "=stdout";
  o.new_process_group = true;
  o.terminate_with_parent = true;
  o.env_overrides = std::move(env);
  auto p = Subprocess::Start(o);
  if (!p.ok()) return nullptr;
  auto c = std::make_unique<Child>();
  c->process = std::move(*p);
  return c;
}

// The fake provider with `flags`; its creation log is <dir>/provider.log.
struct Provider {
  std::unique_ptr<Child> child;
  int port = 0;
  std::string log;
};
inline Provider StartProvider(const TempDir& d, std::vector<std::string> flags) {
  Provider p;
  p.port = *FindFreeLoopbackPort();
  p.log = d.Path("provider.log");
  std::vector<std::string> argv = {
      PythonPath(), std::string(MMIRAGE_SOURCE_DIR) + "/tests/support/fake_batch_provider.py",
      "--port",     std::to_string(p.port),
      "--log",      p.log};
  argv.insert(argv.end(), flags.begin(), flags.end());
  p.child = Start(argv, d.Path("provider.out"));
  EXPECT_NE(p.child, nullptr);
  EXPECT_TRUE(WaitHealthy(p.port, 20)) << ReadFile(d.Path("provider.out"));
  return p;
}

inline CommandResult Mm(const std::string& env, const std::string& args, const std::string& cwd = "") {
  return RunCommand(env + " '" + std::string(MMIRAGE_BINARY) + "' " + args, cwd);
}

inline std::vector<Value> JsonLines(const std::string& path) {
  std::vector<Value> out;
  for (const auto& l : ReadLines(path)) {
    auto v = ParseJson(l);
    EXPECT_TRUE(v.ok()) << path << ": " << l;
    if (v.ok()) out.push_back(*v);
  }
  return out;
}

// Every custom id the provider was asked to create a batch for, with how many times.
inline std::map<std::string, int> CreatedIds(const std::string& log) {
  std::map<std::string, int> n;
  for (const Value& e : JsonLines(log)) {
    if (e.Find("event")->as_string() != "create") continue;
    for (const Value& id : e.Find("custom_ids")->as_array()) ++n[id.as_string()];
  }
  return n;
}

}  // namespace mmirage::testing

// End-to-end, issue #13 item 11: a managed server whose command forks does not survive a SIGKILL of mmirage (no
// process of its group is left), and it inherits no descriptor of mmirage's but 0-2.
#include <signal.h>
#include <unistd.h>

#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "e2e/e2e_util.h"
#include "support/proc_util.h"
#include "util/process/subprocess.h"

namespace mmirage::testing {
namespace {

std::string Config(const TempDir& d, const std::string& server_command) {
  return "processors:\n"
         "  - type: llm\n"
         "    backend: vllm\n"
         "    server_args: {model_path: some/model}\n"
         "    server_command: \"" +
         server_command +
         "\"\n"
         "    server_startup_timeout_seconds: 120\n"
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path("out") +
         "}]\n"
         "  state_dir: " +
         d.Path("state") +
         "\n"
         "processing_params:\n"
         "  inputs: [{name: text, key: text}]\n"
         "  outputs: [{name: summary, type: llm, prompt: \"Summarise: {{ text }}\"}]\n"
         "  output_schema: {summary: \"{{ summary }}\"}\n";
}

TEST(ProcessSafetyE2eTest, AForkingManagedServerDiesWithASigkilledMmirageAndInheritsNoDescriptor) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(3));
  // The server: a shell (the group's leader) that lists its descriptors, forks a long sleep, records its group
  // id and waits; it never becomes healthy, so mmirage keeps waiting for it.
  std::string fds = d.Path("fds.txt"), pgid_file = d.Path("pgid.txt");
  WriteFile(d.Path("cfg.yaml"), Config(d, "ls /proc/self/fd > " + fds + "; sleep 300 & echo $$ > " + pgid_file +
                                              ".tmp; mv " + pgid_file + ".tmp " + pgid_file + "; wait"));
  SubprocessOptions o;
  o.argv = {MMIRAGE_BINARY, "run", "--config", d.Path("cfg.yaml")};
  o.stdout_path = d.Path("mmirage.log");
  o.stderr_path = "=stdout";
  o.new_process_group = true;
  auto run = Subprocess::Start(o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  bool started = WaitFor([&] { return !ReadFile(pgid_file).empty(); }, 60);
  int pgid = std::atoi(ReadFile(pgid_file).c_str());
  if (!started || pgid <= 0) {
    (void)(*run)->SignalGroup(SIGKILL);
    (*run)->Wait();
    FAIL() << "the server never started:\n" << ReadFile(d.Path("mmirage.log"));
  }
  ASSERT_TRUE(WaitFor([&] { return LiveGroupMembers(pgid).size() >= 2; }, 10)) << "the server's sleep did not start";

  std::istringstream listed(ReadFile(fds));
  std::set<std::string> seen;
  for (std::string w; listed >> w;) seen.insert(w);
  EXPECT_EQ(seen, (std::set<std::string>{"0", "1", "2", "3"}))  // 3: ls's handle on /proc/self/fd
      << "the managed server inherited descriptors of mmirage: " << ReadFile(fds);

  // SIGKILL every mmirage process (the orchestrator and, where it has one, its worker), never the server's group.
  ASSERT_NE(pgid, (*run)->pid());
  ASSERT_TRUE((*run)->SignalGroup(SIGKILL).ok());
  (*run)->Wait();
  bool gone = WaitFor([&] { return LiveGroupMembers(pgid).empty(); }, 30);
  EXPECT_TRUE(gone) << LiveGroupMembers(pgid).size() << " process(es) of the managed server's group " << pgid
                    << " outlived a SIGKILLed mmirage\n"
                    << ReadFile(d.Path("mmirage.log"));
  for (int pid : LiveGroupMembers(pgid)) ::kill(pid, SIGKILL);  // leave nothing behind when the test fails
}

}  // namespace
}  // namespace mmirage::testing

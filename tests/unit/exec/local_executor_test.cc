// RunAllShardsLocally with a shell script in place of this binary: what happens to the workers on every way out.
#include "exec/local_executor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include "config/config.h"
#include "support/test_util.h"
#include "util/process/process_info.h"

namespace mmirage::exec {
namespace {

config::Config ThreeShards(const std::string& state_dir) {
  std::string y =
      "processors: []\n"
      "loading_params:\n  datasets: [{type: JSONL, path: d.jsonl, output_dir: o}]\n"
      "  state_dir: " +
      state_dir +
      "\n  num_shards: 3\n"
      "processing_params:\n  inputs: []\n  outputs: []\n  output_schema: {x: 1}\n"
      "execution_params: {local_workers: 2, max_retries: 0}\n";
  config::LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(y, "t.yaml", o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

// Shard 0 records its pid and runs until stopped; shard 1 waits for that, removes the worker program and fails,
// so that starting shard 2 fails while shard 0 still runs.
TEST(LocalExecutorTest, AWorkerThatCannotStartStopsTheOthersBeforeReturning) {
  testing::TempDir d;
  std::string worker = d.Path("worker.sh");
  testing::WriteFile(worker,
                     "#!/bin/sh\n"
                     "case \"$5\" in\n"
                     "  0) echo $$ > '" +
                         d.Path("pid0.tmp") + "' && mv '" + d.Path("pid0.tmp") + "' '" + d.Path("pid0") +
                         "'; exec sleep 300;;\n"
                         "  1) while [ ! -f '" +
                         d.Path("pid0") +
                         "' ]; do sleep 0.05; done; rm -f \"$0\"; exit 1;;\n"
                         "esac\n");
  ASSERT_EQ(::chmod(worker.c_str(), 0755), 0);
  config::Config c = ThreeShards(d.Path("state"));
  LocalRunOptions o;
  o.config_path = d.Path("t.yaml");
  o.binary = worker;
  int rc = RunAllShardsLocally(Env::Default(), c, o);
  EXPECT_EQ(rc, 1);
  std::string pid_text = testing::ReadFile(d.Path("pid0"));
  ASSERT_FALSE(pid_text.empty()) << "shard 0's worker did not start";
  int64_t pid = std::stoll(pid_text);
  bool alive = ProcessAlive(pid);
  if (alive) ::kill(static_cast<pid_t>(-pid), SIGKILL);
  EXPECT_FALSE(alive) << "shard 0's worker (pid " << pid << ") outlived RunAllShardsLocally";
}

}  // namespace
}  // namespace mmirage::exec

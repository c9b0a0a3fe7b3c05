// The custom processor's pool lifecycle, with a shell worker that speaks the handshake and ignores rows.
#include "process/custom/custom_processor.h"

#include <gtest/gtest.h>

#include <thread>

namespace mmirage::process::custom {
namespace {

config::Processor ShellWorker(int64_t workers) {
  config::Processor p;
  p.type = "custom";
  p.custom.max_workers = workers;
  // Ready at once; after stdin closes it lingers a little, so that stopping the pool takes a while.
  p.custom.command = {"sh", "-c", "echo '{\"ready\": true}'; cat >/dev/null; sleep 0.5"};
  return p;
}

TEST(CustomProcessorTest, ConcurrentShutdownsJoinEachThreadOnce) {
  std::vector<std::string> warnings;
  auto proc = StartCustomProcessor(ShellWorker(2), CustomStartOptions{}, &warnings);
  ASSERT_TRUE(proc.ok()) << proc.status().ToString();
  OutputProcessor* p = proc->get();
  std::thread a([p] { p->Shutdown(); });
  std::thread b([p] { p->Shutdown(); });
  a.join();
  b.join();
  p->Shutdown();  // and once more, after both
  GenerateResult got;
  p->Generate(0, "", Value::EmptyObject(), RowInfo{}, [&](GenerateResult r) { got = std::move(r); });
  EXPECT_TRUE(got.status.IsUnavailable()) << got.status.ToString();
}

}  // namespace
}  // namespace mmirage::process::custom

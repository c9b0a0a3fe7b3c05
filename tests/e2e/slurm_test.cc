// End-to-end against a real one-node SLURM (started by tests/slurm/start_slurm.sh; .ci/run does it): `mmirage run`
// in slurm mode submits real array jobs through sbatch, follows them with squeue, retries and merges. No fake
// sbatch anywhere. When SLURM is not running these tests fail and say how to start it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

std::string MakeModelTool() {
  std::string bin = MMIRAGE_BINARY;
  return bin.substr(0, bin.size() - std::string("mmirage").size()) + "mmirage-make-test-model";
}

// Empty when a node is usable, else why not.
std::string SlurmProblem() {
  CommandResult r = RunCommand("sinfo -h -o %t");
  if (r.exit_code != 0) return "`sinfo -h -o %t` failed (exit " + std::to_string(r.exit_code) + "): " + r.err;
  for (const char* ok : {"idle", "mix", "alloc", "comp"})  // comp: finishing the last job, takes new ones
    if (r.out.find(ok) != std::string::npos) return "";
  return "no idle node (sinfo says: " + r.out + ")";
}

#define ASSERT_SLURM_UP()                                                                                  \
  do {                                                                                                     \
    std::string problem = SlurmProblem();                                                                  \
    ASSERT_TRUE(problem.empty()) << "SLURM is not usable on this host: " << problem                        \
                                 << "\nStart the test daemons with tests/slurm/start_slurm.sh (as root)."; \
  } while (0)

const std::string& TinyModel() {
  static TempDir dir;  // removed at exit
  static std::string path = [] {
    std::string p = dir.Path("tiny.gguf");
    if (RunCommand("'" + MakeModelTool() + "' --out '" + p + "' --seed 11").exit_code != 0) p.clear();
    return p;
  }();
  return path;
}

std::string ExecParams(const TempDir& d, const std::string& job_name, int max_retries, const std::string& mode) {
  return "execution_params:\n"
         "  mode: " +
         mode +
         "\n"
         "  account: mmirage-test\n"
         "  job_name: " +
         job_name +
         "\n"
         "  project_root: " +
         d.path() +
         "\n"
         "  report_dir: " +
         d.Path("reports") +
         "\n"
         "  hf_home: " +
         d.Path("hf") +
         "\n"
         "  gpus: 0\n"
         "  cpus_per_task: 1\n"
         "  time_limit: \"00:15:00\"\n"
         "  poll_interval_seconds: 1\n"
         "  settle_time_seconds: 0\n"
         "  retry: true\n"
         "  merge: true\n"
         "  max_retries: " +
         std::to_string(max_retries) +
         "\n"
         "  commit_every_rows: 2\n"
         "  commit_interval_seconds: 0.2\n"
         "  heartbeat_timeout_seconds: 30\n";
}

// `engine` "{max_running_requests: 1, prefix_reuse: false, …}" makes outputs independent of which rows are decoded
// together (the engine is not batch-invariant), so that a resumed shard can be compared byte for byte.
std::string LlmConfig(const TempDir& d, const std::string& tag, int shards, int max_new_tokens,
                      const std::string& job_name, const std::string& mode = "slurm",
                      const std::string& engine = "{max_running_requests: 4, context_length: 512, n_threads: 1}") {
  return "processors:\n"
         "  - type: llm\n"
         "    server_args:\n"
         "      model_path: " +
         TinyModel() +
         "\n"
         "      extra_engine_args: " +
         engine +
         "\n"
         "    default_sampling_params: {temperature: 0, max_new_tokens: " +
         std::to_string(max_new_tokens) +
         "}\n"
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path(tag + "_out") +
         ", output_format: jsonl}]\n"
         "  state_dir: " +
         d.Path(tag + "_state") +
         "\n"
         "  num_shards: " +
         std::to_string(shards) +
         "\n"
         "processing_params:\n"
         "  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
         "  outputs: [{name: answer, type: llm, prompt: \"Rewrite: {{ text }}\"}]\n"
         "  remove_columns: true\n"
         "  output_schema: {id: \"{{ id }}\", answer: \"{{ answer }}\"}\n" +
         ExecParams(d, job_name, 2, mode);
}

std::vector<std::string> ReadLinesOf(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl > start) lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string StatusField(const std::string& state_dir, int shard, const char* field) {
  auto v = ParseJson(ReadFile(state_dir + "/shard_" + std::to_string(shard) + "/status.json"));
  if (!v.ok() || !v->is_object() || v->Find(field) == nullptr) return "";
  const Value* f = v->Find(field);
  if (f->is_string()) return f->as_string();
  if (f->is_int()) return std::to_string(f->as_int());
  return "";
}

// batch_api in slurm mode: each array task renders and submits its shard (exit 0, shard `submitted`), then
// `collect` on the login node publishes every shard. The fake provider listens on 127.0.0.1 of this one node.
TEST(SlurmTest, BatchApiArrayTasksSubmitAndCollectPublishes) {
  ASSERT_SLURM_UP();
  TempDir d;
  int port = 0;
  {
    CommandResult p = RunCommand(
        "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); "
        "print(s.getsockname()[1])'");
    port = std::atoi(p.out.c_str());
  }
  ASSERT_GT(port, 0);
  std::string server = "'" + PythonPath() + "' '" + std::string(MMIRAGE_SOURCE_DIR) +
                       "/tests/support/fake_batch_provider.py' --port " + std::to_string(port) + " --log '" +
                       d.Path("provider.log") + "' --polls 1 > '" + d.Path("provider.out") + "' 2>&1 & echo $!";
  CommandResult srv = RunCommand(server);
  std::string pid = srv.out.substr(0, srv.out.find('\n'));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  WriteFile(d.Path("data.jsonl"), MakeRows(8));
  std::string exec = ExecParams(d, "mm-e2e-batch", 1, "slurm");
  exec.replace(exec.find("  merge: true\n"), 14, "  merge: false\n");
  WriteFile(d.Path("cfg.yaml"),
            "processors:\n"
            "  - type: batch_api\n"
            "    provider: openai\n"
            "    base_url: http://127.0.0.1:" +
                std::to_string(port) +
                "/v1\n"
                "loading_params:\n"
                "  datasets: [{type: JSONL, path: " +
                d.Path("data.jsonl") + ", output_dir: " + d.Path("b_out") +
                ", output_format: jsonl}]\n"
                "  state_dir: " +
                d.Path("b_state") +
                "\n"
                "  num_shards: 2\n"
                "processing_params:\n"
                "  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
                "  outputs: [{name: answer, type: batch_api, prompt: \"Rewrite: {{ text }}\"}]\n"
                "  remove_columns: true\n"
                "  output_schema: {id: \"{{ id }}\", answer: \"{{ answer }}\"}\n" +
                exec);
  CommandResult r =
      RunCommand("OPENAI_API_KEY=test-key '" + std::string(MMIRAGE_BINARY) + "' run --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Each task submitted its shard; a task may also find its batch already done (the fake provider is quick) and
  // publish at once. Either way no shard failed, and collect finishes the rest.
  for (int s = 0; s < 2; ++s) {
    std::string st = StatusField(d.Path("b_state"), s, "status");
    EXPECT_TRUE(st == "submitted" || st == "success") << st << "\n" << r.err;
  }
  CommandResult c = RunCommand("OPENAI_API_KEY=test-key '" + std::string(MMIRAGE_BINARY) + "' collect --config " +
                               d.Path("cfg.yaml"));
  EXPECT_EQ(c.exit_code, 0) << c.err;
  size_t rows =
      ReadLines(d.Path("b_out/shard_0/data.jsonl")).size() + ReadLines(d.Path("b_out/shard_1/data.jsonl")).size();
  EXPECT_EQ(rows, 8u) << c.err;
  if (!pid.empty()) RunCommand("kill " + pid);
}

TEST(SlurmTest, FourShardRunIsAnArrayJobAndMerges) {
  ASSERT_SLURM_UP();
  ASSERT_FALSE(TinyModel().empty()) << "cannot generate the synthetic model with " << MakeModelTool();
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(16));
  WriteFile(d.Path("cfg.yaml"), LlmConfig(d, "s", 4, 8, "mm-e2e-four"));
  CommandResult r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Submitted SLURM job"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--array=0-3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("All shards completed successfully"), std::string::npos) << r.err;
  auto rows = ReadLines(d.Path("s_out/merged/data.jsonl"));
  ASSERT_EQ(rows.size(), 16u) << r.err;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto v = ParseJson(rows[i]);
    ASSERT_TRUE(v.ok()) << rows[i];
    EXPECT_EQ(v->Find("id")->as_int(), static_cast<int64_t>(i));
    EXPECT_TRUE(v->Find("answer")->is_string());
  }
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(StatusField(d.Path("s_state"), s, "status"), "success");
    EXPECT_EQ(StatusField(d.Path("s_state"), s, "slurm_array_task_id"), std::to_string(s));
    EXPECT_FALSE(StatusField(d.Path("s_state"), s, "slurm_job_id").empty());
  }
}

TEST(SlurmTest, CancelledTaskIsRetriedAndTheMergeEqualsALocalRun) {
  ASSERT_SLURM_UP();
  ASSERT_FALSE(TinyModel().empty()) << "cannot generate the synthetic model with " << MakeModelTool();
  TempDir d;
  // Two shards of 100 rows, one sequence at a time: a few seconds each on the synthetic model, long enough to be
  // caught mid-run, and deterministic whatever rows a resumed attempt starts from.
  const std::string engine = "{max_running_requests: 1, prefix_reuse: false, context_length: 512, n_threads: 1}";
  WriteFile(d.Path("data.jsonl"), MakeRows(200));
  WriteFile(d.Path("cfg.yaml"), LlmConfig(d, "s", 2, 24, "mm-e2e-cancel", "slurm", engine));
  CommandResult r;
  std::thread runner([&] { r = RunMmirage("run --config " + d.Path("cfg.yaml")); });
  // Cancel shard 1's array task once it has committed rows (mid-run).
  std::string cancelled;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string progress = ReadFile(d.Path("s_state/shard_1/progress.json"));
    auto p = ParseJson(progress);
    bool started_rows = p.ok() && p->is_object() && p->Find("rows_done") && p->Find("rows_done")->is_int() &&
                        p->Find("rows_done")->as_int() > 0;
    if (StatusField(d.Path("s_state"), 1, "status") == "running" && started_rows) {
      // The task's own SLURM_JOB_ID may be the array's id (scancel would cancel every task): use <array>_1.
      CommandResult q = RunCommand("squeue -h -n mm-e2e-cancel -t RUNNING -o %i");
      std::string job;
      for (const auto& line : ReadLinesOf(q.out))
        if (line.size() > 2 && line.compare(line.size() - 2, 2, "_1") == 0) job = line;
      if (job.empty()) continue;
      CommandResult c = RunCommand("scancel " + job);
      ASSERT_EQ(c.exit_code, 0) << c.err;
      cancelled = job;
      break;
    }
    if (StatusField(d.Path("s_state"), 1, "status") == "success") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  runner.join();
  ASSERT_FALSE(cancelled.empty()) << "shard 1 was never seen running with rows committed; run log:\n" << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Retrying failed shards: 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--array=1"), std::string::npos) << r.err;
  EXPECT_EQ(StatusField(d.Path("s_state"), 1, "retry_count"), "2") << r.err;
  EXPECT_EQ(StatusField(d.Path("s_state"), 0, "retry_count"), "1") << r.err;

  // The same config run locally, one shard at a time, then merged.
  WriteFile(d.Path("local.yaml"), LlmConfig(d, "l", 2, 24, "mm-e2e-local", "local", engine));
  for (int s = 0; s < 2; ++s) {
    CommandResult l = RunMmirage("run --config " + d.Path("local.yaml") + " --shard-id " + std::to_string(s));
    ASSERT_EQ(l.exit_code, 0) << l.err;
  }
  CommandResult m = RunMmirage("merge --config " + d.Path("local.yaml"));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  auto slurm_rows = ReadLines(d.Path("s_out/merged/data.jsonl"));
  auto local_rows = ReadLines(d.Path("l_out/merged/data.jsonl"));
  ASSERT_EQ(slurm_rows.size(), 200u);
  ASSERT_EQ(local_rows.size(), 200u);
  for (size_t i = 0; i < slurm_rows.size(); ++i) ASSERT_EQ(slurm_rows[i], local_rows[i]) << "row " << i;
}

TEST(SlurmTest, DeterministicallyFailingShardExhaustsItsRetriesAndRunFails) {
  ASSERT_SLURM_UP();
  TempDir d;
  // 8 rows over 4 shards: rows 6 and 7 are shard 3's; row 7 has no meta.lang, a row error, and
  // max_failed_rows is 0, so shard 3 fails on every attempt.
  std::string rows = MakeRows(7) + "{\"id\":7,\"text\":\"no meta here\",\"tags\":[]}\n";
  WriteFile(d.Path("data.jsonl"), rows);
  WriteFile(d.Path("cfg.yaml"),
            RestructureConfig(d.Path("data.jsonl"), d.Path("out"), d.Path("state"), "  num_shards: 4\n") +
                ExecParams(d, "mm-e2e-fail", 1, "slurm"));
  CommandResult r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("Retrying failed shards: 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Shard 3: failed, 2 of 2 attempts used (max_retries exhausted)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exhausted max_retries=1"), std::string::npos) << r.err;
  EXPECT_EQ(StatusField(d.Path("state"), 3, "status"), "failed");
  EXPECT_EQ(StatusField(d.Path("state"), 3, "retry_count"), "2");
  for (int s = 0; s < 3; ++s) EXPECT_EQ(StatusField(d.Path("state"), s, "status"), "success") << s;
  EXPECT_FALSE(Exists(d.Path("out/merged")));
}

}  // namespace
}  // namespace mmirage::testing

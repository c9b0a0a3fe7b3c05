// End-to-end: a real 3-shard run on the synthetic model with one shard interrupted (SIGTERM) and resumed, then
// `mmirage stats --html`: the page parses as HTML with well-formed SVG, holds every aggregate value, and renders
// in headless Chromium without console errors (tests/e2e/check_html_report.py); the timelines record the attempts.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

std::string Config(const TempDir& d, const std::string& model) {
  return "processors:\n"
         "  - type: llm\n"
         "    server_args:\n"
         "      model_path: " +
         model +
         "\n"
         "      extra_engine_args: {max_running_requests: 4, context_length: 1024, n_threads: 1}\n"
         "    default_sampling_params: {temperature: 0, max_new_tokens: 32}\n"
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path("out") +
         "}]\n"
         "  state_dir: " +
         d.Path("state") +
         "\n"
         "  num_shards: 3\n"
         "  batch_size: 8\n"
         "processing_params:\n"
         "  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
         "  outputs: [{name: answer, type: llm, prompt: \"Rewrite: {{ text }}\"}]\n"
         "  remove_columns: true\n"
         "  output_schema: {id: \"{{ id }}\", answer: \"{{ answer }}\"}\n"
         "execution_params:\n"
         "  cache: off\n"  // every shard really generates (the report is about generation)
         "  commit_every_rows: 2\n"
         "  commit_interval_seconds: 0.2\n";
}

// The last third of the rows (shard 2) has long texts: longer prompts in its usage.jsonl.
std::string Rows(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    std::string text = "The capital of country " + std::to_string(i) + " is city " + std::to_string(i);
    if (i >= 2 * n / 3) {
      for (int j = 0; j < 40; ++j) text += " and landmark " + std::to_string(j);
    }
    s += "{\"id\":" + std::to_string(i) + ",\"text\":\"" + text + "\"}\n";
  }
  return s;
}

int64_t JournalRows(const std::string& out, int shard) {
  auto j = ParseJson(ReadFile(out + "/shard_" + std::to_string(shard) + ".tmp.partial/journal.json"));
  if (!j.ok() || !j->is_object()) return 0;
  return j->Find("splits")->as_array()[0].Find("rows_done")->as_int();
}

std::string Str(const Value& v, const char* key) {
  const Value* x = v.Find(key);
  return x && x->is_string() ? x->as_string() : "";
}

std::vector<Value> TimelineLines(const std::string& path) {
  std::vector<Value> out;
  for (const auto& l : ReadLines(path)) {
    auto v = ParseJson(l);
    EXPECT_TRUE(v.ok()) << l;
    if (v.ok()) out.push_back(*v);
  }
  return out;
}

TEST(StatsHtmlTest, ThreeShardRunWithAnInterruptedShardGivesAValidSelfContainedReport) {
  const std::string& model = SharedTinyModel();
  ASSERT_FALSE(model.empty()) << "cannot make the synthetic model (build/mmirage-make-test-model)";
  TempDir d;
  WriteFile(d.Path("data.jsonl"), Rows(324));  // long enough to be interrupted on a quiet machine
  std::string cfg = d.Path("cfg.yaml");
  WriteFile(cfg, Config(d, model));
  ::setenv("MMIRAGE_TIMELINE_INTERVAL_SECONDS", "0.5", 1);  // several samples in a short run (children inherit it)

  auto r0 = RunMmirage("run --config " + cfg + " --shard-id 0 --quiet");
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  // Shard 1: stopped with SIGTERM once some rows are committed, then resumed.
  pid_t pid = ::fork();
  if (pid == 0) {
    FILE* f = std::freopen(d.Path("run1.log").c_str(), "w", stderr);
    (void)f;
    ::execl(MMIRAGE_BINARY, MMIRAGE_BINARY, "run", "--config", cfg.c_str(), "--shard-id", "1", "--quiet",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 6000 && JournalRows(d.Path("out"), 1) < 6; ++i)  // up to 60 s on a loaded machine
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // at least one sample of the first attempt
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << ReadFile(d.Path("run1.log"));
  ASSERT_EQ(WEXITSTATUS(status), 128 + SIGTERM)
      << "shard 1 finished before it could be interrupted; " << ReadFile(d.Path("run1.log"));
  auto r1 = RunMmirage("run --config " + cfg + " --shard-id 1 --quiet");
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_NE(r1.err.find("resuming shard 1 after"), std::string::npos) << r1.err;
  auto r2 = RunMmirage("run --config " + cfg + " --shard-id 2 --quiet");
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  ::unsetenv("MMIRAGE_TIMELINE_INTERVAL_SECONDS");

  // The time series: shard 1 has an interrupted attempt and a successful one that resumed committed rows.
  auto tl = TimelineLines(d.Path("state/shard_1/timeline.jsonl"));
  std::vector<std::string> ends;
  int64_t resumed = 0, samples1 = 0;
  for (const Value& e : tl) {
    std::string ev = Str(e, "event");
    const Value* attempt = e.Find("attempt");
    ASSERT_TRUE(attempt && attempt->is_int()) << ToJson(e);
    if (ev == "end") ends.push_back(Str(e, "outcome"));
    if (ev.empty() && attempt->as_int() == 1) ++samples1;
    if (ev.empty() && e.Find("resumed") && e.Find("resumed")->is_int()) resumed = e.Find("resumed")->as_int();
    if (ev.empty()) {
      EXPECT_NE(e.Find("rows_per_sec"), nullptr) << ToJson(e);
      EXPECT_NE(e.Find("in_flight"), nullptr) << ToJson(e);
    }
  }
  EXPECT_EQ(ends, (std::vector<std::string>{"interrupted", "success"}));
  EXPECT_GE(resumed, 6);
  EXPECT_GE(samples1, 2);
  // Shard 0: start, the model load (samples may come before it when the load takes longer than a period), end.
  auto tl0 = TimelineLines(d.Path("state/shard_0/timeline.jsonl"));
  ASSERT_GE(tl0.size(), 4u);
  EXPECT_EQ(Str(tl0.front(), "event"), "start");
  int loaded = 0;
  for (const Value& e : tl0) {
    if (Str(e, "event") != "loaded") continue;
    ++loaded;
    const Value* cap = e.Find("capacity");
    EXPECT_TRUE(cap && cap->is_int() && cap->as_int() == 4) << ToJson(e);
  }
  EXPECT_EQ(loaded, 1);
  EXPECT_EQ(Str(tl0.back(), "outcome"), "success");

  auto json = RunMmirage("stats --config " + cfg);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  WriteFile(d.Path("stats.json"), json.out);
  auto html = RunMmirage("stats --config " + cfg + " --html " + d.Path("report.html"));
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_EQ(html.out, "");  // the page goes to the file only
  std::string page = ReadFile(d.Path("report.html"));
  EXPECT_NE(page.find("data-outcome=\"interrupted\""), std::string::npos);
  EXPECT_NE(page.find("data-rule=\"attempts_lost\""), std::string::npos);
  auto check =
      RunCommand("'" + PythonPath() + "' '" + std::string(MMIRAGE_SOURCE_DIR) + "/tests/e2e/check_html_report.py' '" +
                 d.Path("report.html") + "' '" + d.Path("stats.json") + "' --png '" + d.Path("report.png") + "'");
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("ok: "), std::string::npos) << check.out;

  auto stdout_html = RunMmirage("stats --config " + cfg + " --format html");
  ASSERT_EQ(stdout_html.exit_code, 0) << stdout_html.err;
  EXPECT_EQ(stdout_html.out.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(stdout_html.out.find("id=\"metrics\""), std::string::npos);

  auto table = RunMmirage("stats --config " + cfg + " --format table");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("Advice:"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("shard 1 #1 interrupted"), std::string::npos) << table.out;
}

TEST(StatsHtmlTest, AnUnwritableReportPathIsAOneLineErrorAndExitOne) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(5));
  std::string cfg = d.Path("cfg.yaml");
  WriteFile(cfg, RestructureConfig(d.Path("data.jsonl"), d.Path("out"), d.Path("state")));
  ASSERT_EQ(RunMmirage("run --config " + cfg + " --quiet").exit_code, 0);
  auto r = RunMmirage("stats --config " + cfg + " --html " + d.Path("no/such/dir/report.html"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write the HTML report"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(d.Path("no/such/dir/report.html")), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(d.Path("no/such/dir/report.html")));
  auto bad = RunMmirage("stats --config " + cfg + " --format pdf");
  EXPECT_NE(bad.exit_code, 0);
}

TEST(StatsHtmlTest, ABadTimelinePeriodIsRefusedBeforeAnyStateIsWritten) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(5));
  std::string cfg = d.Path("cfg.yaml");
  WriteFile(cfg, RestructureConfig(d.Path("data.jsonl"), d.Path("out"), d.Path("state")));
  for (const char* v : {"abc", "0", "-3", "10s"}) {
    ::setenv("MMIRAGE_TIMELINE_INTERVAL_SECONDS", v, 1);
    auto r = RunMmirage("run --config " + cfg + " --quiet");
    ::unsetenv("MMIRAGE_TIMELINE_INTERVAL_SECONDS");
    EXPECT_EQ(r.exit_code, 2) << v << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("MMIRAGE_TIMELINE_INTERVAL_SECONDS='") + v + "'"), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(d.Path("state/shard_0/status.json"))) << v;
  }
}

}  // namespace
}  // namespace mmirage::testing

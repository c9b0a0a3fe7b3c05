// s3:// paths against a real S3-compatible server (moto in server mode, tests/e2e/s3_server.py, started once for
// this suite on 127.0.0.1): inputs, outputs in every output_format and the state directory in a bucket; a run
// killed with -9 between two commits (the shard's files then in parts) resumes from the state in the bucket to the
// output of an uninterrupted local run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "e2e/e2e_util.h"
#include "support/proc_util.h"

namespace mmirage::testing {
namespace {

const char* kBucket = "mmirage-test";

class S3Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    std::string python = MMIRAGE_DIST_PYTHON, script = std::string(MMIRAGE_SOURCE_DIR) + "/tests/e2e/s3_server.py";
    std::string port_file = dir_->Path("port"), log = dir_->Path("server.log");
    server_ = ::fork();
    if (server_ == 0) {
      ::setsid();
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      f = std::freopen(log.c_str(), "a", stdout);
      (void)f;
      ::execl(python.c_str(), python.c_str(), script.c_str(), "serve", port_file.c_str(), "log",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (WaitFor([&] { return !ReadFile(port_file).empty(); }, 60)) {
      endpoint_ = "http://127.0.0.1:" + ReadFile(port_file);
    } else {
      error_ = "the S3 server (" + python + " " + script +
               ") did not start (run scripts/setup.sh --for-tests, "
               "which installs tests/requirements-dist.txt): " +
               ReadFile(log).substr(0, 2000);
    }
    ::setenv("AWS_ACCESS_KEY_ID", "testing", 1);  // what moto accepts; no real credential is ever used here
    ::setenv("AWS_SECRET_ACCESS_KEY", "testing", 1);
    ::setenv("AWS_REGION", "us-east-1", 1);
    ::setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    ::setenv("AWS_ENDPOINT_URL", endpoint_.c_str(), 1);
  }
  static void TearDownTestSuite() {
    if (server_ > 0) {
      ::kill(-server_, SIGKILL);
      ::waitpid(server_, nullptr, 0);
    }
    delete dir_;
  }
  void SetUp() override { ASSERT_TRUE(error_.empty()) << error_; }

  // Uploads the local file `path` as s3://<bucket>/<key> (creating the bucket).
  static void Put(const std::string& path, const std::string& key) {
    auto r = RunCommand(std::string(MMIRAGE_DIST_PYTHON) + " " + MMIRAGE_SOURCE_DIR + "/tests/e2e/s3_server.py put " +
                        endpoint_ + " " + kBucket + " " + key + " " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static std::string Url(const std::string& key) { return std::string("s3://") + kBucket + "/" + key; }
  // The keys under `prefix` in the bucket, one a line.
  static std::string ListKeys(const std::string& prefix) {
    auto r = RunCommand(std::string(MMIRAGE_DIST_PYTHON) + " " + MMIRAGE_SOURCE_DIR + "/tests/e2e/s3_server.py list " +
                        endpoint_ + " " + kBucket + " " + prefix);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  static TempDir* dir_;
  static pid_t server_;
  static std::string endpoint_, error_;
};
TempDir* S3Test::dir_ = nullptr;
pid_t S3Test::server_ = -1;
std::string S3Test::endpoint_, S3Test::error_;

std::string Retrying(const std::string& commit) {
  return "execution_params:\n  retry: true\n  merge: true\n  max_retries: 3\n" + commit;
}

TEST_F(S3Test, EveryOutputFormatFromAndToTheBucketMatchesLocal) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(30));
  Put(d.Path("data.jsonl"), "fmt/in/data.jsonl");
  WriteFile(d.Path("l.yaml"),
            RestructureConfig(d.Path("data.jsonl"), d.Path("out"), d.Path("state"), "  num_shards: 2\n", Retrying("")));
  auto local = RunMmirage("run --config " + d.Path("l.yaml") + " --log-level WARNING");
  ASSERT_EQ(local.exit_code, 0) << local.err;
  std::vector<std::string> want = CatLines(d.Path("out/merged"));
  ASSERT_EQ(want.size(), 30u);
  for (std::string format : {"jsonl", "parquet", "hf"}) {
    std::string cfg = RestructureConfig(Url("fmt/in/data.jsonl"), Url("fmt/out_" + format), Url("fmt/state_" + format),
                                        "  num_shards: 2\n", Retrying(""));
    cfg.replace(cfg.find("output_format: jsonl"), 20, "output_format: " + format);
    WriteFile(d.Path(format + ".yaml"), cfg);
    auto r = RunMmirage("run --config " + d.Path(format + ".yaml") + " --log-level WARNING");
    ASSERT_EQ(r.exit_code, 0) << format << ": " << r.err;
    EXPECT_EQ(CatLines(Url("fmt/out_" + format + "/merged")), want) << format;
    auto check = RunMmirage("check --config " + d.Path(format + ".yaml"));
    EXPECT_EQ(check.exit_code, 0) << format << ": " << check.out << check.err;
  }
  // A Parquet input in the bucket (the merged output above), read through ranged requests.
  std::string pq = "processors: []\nloading_params:\n  datasets:\n    - type: parquet\n      path: " +
                   Url("fmt/out_parquet/merged/*.parquet") + "\n      output_dir: " + Url("fmt/out_pq") +
                   "\n      output_format: jsonl\n  state_dir: " + Url("fmt/state_pq") +
                   "\nprocessing_params:\n  inputs: [{name: id, key: id}]\n  outputs: []\n  remove_columns: true\n"
                   "  output_schema: {id: \"{{ id }}\"}\n" +
                   Retrying("");
  WriteFile(d.Path("pq.yaml"), pq);
  auto r = RunMmirage("run --config " + d.Path("pq.yaml") + " --log-level INFO");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CatLines(Url("fmt/out_pq/merged")).size(), 30u);
  // One JSONL shard: merged by a server-side copy, byte for byte what copying its lines writes, rows counted.
  EXPECT_NE((r.out + r.err).find("shards=1 rows=30 "), std::string::npos) << r.out << r.err;
  std::string get = std::string(MMIRAGE_DIST_PYTHON) + " " + MMIRAGE_SOURCE_DIR + "/tests/e2e/s3_server.py get " +
                    endpoint_ + " " + kBucket + " ";
  auto shard = RunCommand(get + "fmt/out_pq/shard_0/data.jsonl"),
       merged = RunCommand(get + "fmt/out_pq/merged/data.jsonl");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(std::count(merged.out.begin(), merged.out.end(), '\n'), 30);
  EXPECT_EQ(merged.out, shard.out);
}

// There is no rename on object storage: a shard is published by copying its objects, and the manifest
// `_mmirage.json` must be the last one written (state_format.md "On object storage"): a publish cut short never leaves
// a manifest over missing data. Read from the server's request log.
TEST_F(S3Test, PublishingWritesTheManifestLast) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(40));
  Put(d.Path("data.jsonl"), "pub/in/data.jsonl");
  WriteFile(d.Path("c.yaml"), RestructureConfig(Url("pub/in/data.jsonl"), Url("pub/out"), Url("pub/state"),
                                                "  num_shards: 1\n", Retrying("")));
  auto r = RunMmirage("run --config " + d.Path("c.yaml") + " --log-level WARNING");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // moto logs one line a request: ... "PUT /<bucket>/<key> HTTP/1.1" 200 ...
  const std::string shard = std::string("\"PUT /") + kBucket + "/pub/out/shard_0/";
  std::vector<std::string> puts;
  for (const auto& line : ReadLines(dir_->Path("server.log"))) {
    size_t at = line.find(shard);
    if (at == std::string::npos) continue;
    std::string key = line.substr(at + shard.size(), line.find(' ', at + 5) - at - shard.size());
    if (!key.empty() && key.back() != '/') puts.push_back(key);  // not a folder marker
  }
  ASSERT_GE(puts.size(), 2u) << ReadFile(dir_->Path("server.log")).substr(0, 3000);
  EXPECT_EQ(puts.back(), "_mmirage.json");
  EXPECT_NE(std::find(puts.begin(), puts.end(), "data.jsonl"), puts.end());
  EXPECT_EQ(std::count(puts.begin(), puts.end(), "_mmirage.json"), 1);
}

TEST_F(S3Test, KillNineMidRunThenResumeGivesTheLocalOutput) {
  TempDir d;
  const int kRows = 30000;  // 8 batches of up to 2048 rows a shard: 8 commits, each past the first a part
  WriteFile(d.Path("data.jsonl"), MakeRows(kRows));
  Put(d.Path("data.jsonl"), "kill/in/data.jsonl");
  const std::string commit = "  commit_every_rows: 1\n  commit_interval_seconds: 0.01\n";
  WriteFile(d.Path("l.yaml"), RestructureConfig(d.Path("data.jsonl"), d.Path("out"), d.Path("state"),
                                                "  num_shards: 2\n", Retrying(commit)));
  auto local = RunMmirage("run --config " + d.Path("l.yaml") + " --log-level WARNING");
  ASSERT_EQ(local.exit_code, 0) << local.err;
  std::vector<std::string> want = CatLines(d.Path("out/merged"));
  ASSERT_EQ(want.size(), static_cast<size_t>(kRows));

  // A kill that lands after the watched shard finished or closed its file proves nothing (a loaded machine can be
  // that slow): such a try is repeated under a fresh prefix, at most three times.
  int64_t resumed_from = 0;
  bool parts_at_kill = false;
  std::string logs, prefix;
  for (int attempt = 0; attempt < 3 && (resumed_from == 0 || !parts_at_kill); ++attempt) {
    prefix = "kill" + std::to_string(attempt);
    logs.clear();
    resumed_from = 0;
    std::string cfg = d.Path(prefix + ".yaml");
    WriteFile(cfg, RestructureConfig(Url("kill/in/data.jsonl"), Url(prefix + "/out"), Url(prefix + "/state"),
                                     "  num_shards: 2\n", Retrying(commit)));
    // A watcher polls the bucket from before the run starts, and the run is killed as soon as the first shard's
    // data.jsonl has a second part: past its first commits a file is uploaded as parts, one per commit
    // (object_storage.md), and the kill lands between two of them.
    std::string python = MMIRAGE_DIST_PYTHON, script = std::string(MMIRAGE_SOURCE_DIR) + "/tests/e2e/s3_server.py";
    std::string ready = d.Path(prefix + ".ready");
    pid_t watcher = ::fork();
    if (watcher == 0) {
      ::execl(python.c_str(), python.c_str(), script.c_str(), "wait", endpoint_.c_str(), kBucket,
              (prefix + "/out/shard_0.tmp.partial/data.jsonl.mmirage-parts/00000001").c_str(), "30", ready.c_str(),
              "exists", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ASSERT_TRUE(WaitFor([&] { return Exists(ready); }, 30)) << "the bucket watcher did not start";
    pid_t run = ::fork();
    if (run == 0) {
      ::setsid();
      FILE* f = std::freopen(d.Path(prefix + ".log").c_str(), "w", stderr);
      (void)f;
      ::execl(MMIRAGE_BINARY, MMIRAGE_BINARY, "run", "--config", cfg.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    int watched = 0, status = 0;
    ::waitpid(watcher, &watched, 0);
    bool finished = ::waitpid(run, &status, WNOHANG) == run;
    ::kill(-run, SIGKILL);
    if (!finished) ::waitpid(run, &status, 0);
    ASSERT_TRUE(WIFEXITED(watched) && WEXITSTATUS(watched) == 0)
        << "no commit reached the bucket: " << ReadFile(d.Path(prefix + ".log"));
    if (finished) {  // the run ended before it could be killed
      logs += prefix + ": the run ended before the kill\n";
      continue;
    }
    std::string at_kill = ListKeys(prefix + "/out/");
    parts_at_kill = at_kill.find(".mmirage-parts/") != std::string::npos;
    logs += prefix + " at the kill:\n" + at_kill;
    // Bytes past the last commit, as a kill while uploading the next commit leaves them: the last part grown and
    // one more part. Resuming truncates both away (deletes the extra part, rewrites the grown one if the journal
    // ends in it).
    const std::string parts = prefix + "/out/shard_0.tmp.partial/data.jsonl.mmirage-parts/";
    std::string listed = ListKeys(parts);
    if (!listed.empty()) {
      listed.pop_back();
      std::string last = listed.substr(listed.rfind('\n') + 1);
      auto got = RunCommand(std::string(MMIRAGE_DIST_PYTHON) + " " + MMIRAGE_SOURCE_DIR +
                            "/tests/e2e/s3_server.py get " + endpoint_ + " " + kBucket + " " + last);
      ASSERT_EQ(got.exit_code, 0) << got.err;
      WriteFile(d.Path(prefix + ".grown"), got.out + "{\"torn\": tru");
      Put(d.Path(prefix + ".grown"), last);
      WriteFile(d.Path(prefix + ".extra"), "{\"uncommitted\": 1}\n");
      Put(d.Path(prefix + ".extra"), parts + "99999998");  // not next in line: ignored
      char next[16];
      std::snprintf(next, sizeof next, "%08d", std::atoi(last.substr(last.size() - 8).c_str()) + 1);
      Put(d.Path(prefix + ".extra"), parts + next);
    }

    auto resumed = RunMmirage("run --config " + cfg);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    // attempts.log: "<attempt> <started_at> <host> <pid> <rows committed at its start>"; an attempt after the kill
    // started from the rows the killed one had committed to the bucket.
    for (std::string shard : {"0", "1"}) {
      auto attempts =
          RunCommand(std::string(MMIRAGE_DIST_PYTHON) + " " + MMIRAGE_SOURCE_DIR + "/tests/e2e/s3_server.py get " +
                     endpoint_ + " " + kBucket + " " + prefix + "/state/shard_" + shard + "/attempts.log");
      ASSERT_EQ(attempts.exit_code, 0) << attempts.err;
      logs += attempts.out;
      for (size_t at = 0, nl; (nl = attempts.out.find('\n', at)) != std::string::npos; at = nl + 1) {
        std::string line = attempts.out.substr(at, nl - at);
        if (line.rfind("1 ", 0) != 0 && std::isdigit(static_cast<unsigned char>(line[0]))) {
          resumed_from = std::max<int64_t>(resumed_from, std::atoll(line.substr(line.rfind(' ') + 1).c_str()));
        }
      }
    }
  }
  ASSERT_GT(resumed_from, 0) << "no shard resumed from committed rows in 3 tries:\n" << logs;
  EXPECT_EQ(CatLines(Url(prefix + "/out/merged")), want);
  EXPECT_TRUE(parts_at_kill) << "the killed run left no parts to resume from:\n" << logs;
  std::string after = ListKeys(prefix + "/");
  EXPECT_EQ(after.find(".mmirage-parts"), std::string::npos) << "parts left after the run:\n" << after;
  EXPECT_NE(after.find(prefix + "/out/shard_0/data.jsonl\n"), std::string::npos) << after;
}

// A model output with the state in the bucket, committed row by row (so in parts): the generation cache stays
// local (SQLite), the rows match a local run.
TEST_F(S3Test, SyntheticModelRunWithStateInTheBucketMatchesLocal) {
  TempDir d;
  ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model with " << MakeTestModelTool();
  WriteFile(d.Path("data.jsonl"), MakeRows(6));
  Put(d.Path("data.jsonl"), "llm/in/data.jsonl");
  auto config = [&](const std::string& data, const std::string& out, const std::string& state) {
    return "processors:\n  - type: llm\n    server_args:\n      model_path: " + SharedTinyModel() +
           "\n      extra_engine_args: {max_running_requests: 1, context_length: 256, n_threads: 1}\n"
           "    default_sampling_params: {temperature: 0, max_new_tokens: 8}\n"
           "loading_params:\n  datasets: [{type: JSONL, path: " +
           data + ", output_dir: " + out + ", output_format: jsonl}]\n  state_dir: " + state +
           "\n  num_shards: 2\nprocessing_params:\n  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
           "  outputs: [{name: answer, type: llm, prompt: \"Rewrite: {{ text }}\"}]\n  remove_columns: true\n"
           "  output_schema: {id: \"{{ id }}\", answer: \"{{ answer }}\"}\n" +
           Retrying("  commit_every_rows: 1\n  cache_dir: " + d.Path("cache") + "\n");  // a part per row
  };
  WriteFile(d.Path("l.yaml"), config(d.Path("data.jsonl"), d.Path("out"), d.Path("state")));
  auto local = RunMmirage("run --config " + d.Path("l.yaml") + " --log-level WARNING");
  ASSERT_EQ(local.exit_code, 0) << local.err;
  WriteFile(d.Path("s3.yaml"), config(Url("llm/in/data.jsonl"), Url("llm/out"), Url("llm/state")));
  std::string s3 = ReadFile(d.Path("s3.yaml"));
  s3.replace(s3.find("  cache_dir: "), std::string("  cache_dir: " + d.Path("cache") + "\n").size(), "");
  WriteFile(d.Path("s3.yaml"), s3);  // the default cache_dir: a local directory, not the bucket
  auto r = RunCommand("HOME=" + d.Path("home") + " " + MMIRAGE_BINARY + " run --config " + d.Path("s3.yaml") +
                      " --log-level WARNING");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Exists(d.Path("home/.cache/mmirage/generation_cache"))) << "the generation cache is not local";
  std::vector<std::string> want = CatLines(d.Path("out/merged"));
  ASSERT_EQ(want.size(), 6u);
  EXPECT_EQ(CatLines(Url("llm/out/merged")), want);
}

}  // namespace
}  // namespace mmirage::testing

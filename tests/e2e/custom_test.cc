// End-to-end: the `custom` processor (user functions in a worker pool): the original's example config against
// the original's output, thresholds, timeouts, crashes, load errors, non-JSON results and a `command:` worker.
#include <gtest/gtest.h>

#include <chrono>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

const std::string kFixtures = std::string(MMIRAGE_SOURCE_DIR) + "/tests/fixtures/mmirage-2972ff6";

class CustomTest : public ::testing::Test {
 protected:
  // A config whose one output is `custom`, over `n` rows {"id": i, "text": "row i"}.
  std::string Config(const std::string& processor_fields, int n = 20, const std::string& execution = "") {
    std::string data;
    for (int i = 0; i < n; ++i)
      data += "{\"id\":" + std::to_string(i) + ",\"text\":\"row " + std::to_string(i) + "\"}\n";
    WriteFile(dir_.Path("data.jsonl"), data);
    std::string cfg =
        "processors:\n  - type: custom\n" + processor_fields + "loading_params:\n  state_dir: " + dir_.Path("state") +
        "\n  datasets:\n    - type: JSONL\n      path: " + dir_.Path("data.jsonl") +
        "\n      output_dir: " + dir_.Path("out") + "\n      output_format: jsonl" +
        "\nprocessing_params:\n  inputs:\n    - name: text\n      key: text\n    - name: id\n      key: id\n"
        "  outputs:\n    - name: result\n      type: custom\n"
        "  remove_columns: true\n  output_schema:\n    id: \"{{ id }}\"\n    result: \"{{ result }}\"\n" +
        execution;
    WriteFile(dir_.Path("cfg.yaml"), cfg);
    return dir_.Path("cfg.yaml");
  }
  std::string Script(const std::string& body) {
    WriteFile(dir_.Path("fn.py"), body);
    return "    script_path: " + dir_.Path("fn.py") + "\n    function_name: f\n";
  }
  std::vector<Value> Rows() {
    std::vector<Value> out;
    for (const auto& l : ReadLines(dir_.Path("out/shard_0/data.jsonl"))) {
      auto v = ParseJson(l);
      EXPECT_TRUE(v.ok()) << l;
      if (v.ok()) out.push_back(*v);
    }
    return out;
  }
  std::vector<Value> Errors() {
    std::vector<Value> out;
    for (const auto& l : ReadLines(dir_.Path("out/shard_0/errors.jsonl"))) {
      auto v = ParseJson(l);
      EXPECT_TRUE(v.ok()) << l;
      if (v.ok()) out.push_back(*v);
    }
    return out;
  }
  TempDir dir_;
};

// The original's configs/config_mock_custom_module.yaml with tests/mock_script/mock_script.py, unchanged, run
// from a copy of the original's tree: the merged rows equal the original's (fixture from commit 2972ff6).
TEST_F(CustomTest, OriginalMockCustomModuleConfigGivesTheOriginalsRows) {
  ASSERT_EQ(RunCommand("cp -r '" + kFixtures + "/configs' '" + kFixtures + "/tests' '" + dir_.path() + "/'").exit_code,
            0);
  auto r = RunCommand(
      "HOME='" + dir_.path() + "' '" + MMIRAGE_BINARY + "' run --config configs/config_mock_custom_module.yaml",
      dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Like the original's, the output is an HF dataset (output_format defaults to hf): read it with `mmirage cat`,
  // and its features are the original's.
  std::string merged = dir_.Path("tests/output/data_mock_custom_feature/merged");
  auto cat = RunMmirage("cat '" + merged + "'");
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  std::vector<std::string> got;
  for (size_t b = 0, e; (e = cat.out.find('\n', b)) != std::string::npos; b = e + 1)
    got.push_back(cat.out.substr(b, e - b));
  auto info = ParseJson(ReadFile(merged + "/dataset_info.json"));
  auto want_features = ParseJson(ReadFile(kFixtures + "/expected/config_mock_custom_module.features.json"));
  ASSERT_TRUE(info.ok() && want_features.ok());
  EXPECT_EQ(ToJson(*info->Find("features")), ToJson(*want_features));
  auto want = ReadLines(kFixtures + "/expected/config_mock_custom_module.merged.jsonl");
  ASSERT_EQ(want.size(), 50u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    auto g = ParseJson(got[i]), w = ParseJson(want[i]);
    ASSERT_TRUE(g.ok() && w.ok());
    EXPECT_EQ(ToJson(*g), ToJson(*w)) << "row " << i;
  }
}

TEST_F(CustomTest, RowsKeepTheirOrderAcrossWorkersAndSeeTheWholeEnvironment) {
  // Later rows finish first; each result shows the row dict it got.
  std::string cfg =
      Config(Script("import time\n"
                    "def f(row):\n"
                    "    time.sleep((20 - row['id']) * 0.005)\n"
                    "    return {'keys': sorted(row), 'text': row['text'].upper(), 'n': row['id'] * 2}\n") +
             "    max_workers: 4\n");
  auto r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(ToJson(rows[i]), "{\"id\":" + std::to_string(i) +
                                   ",\"result\":{\"keys\":[\"id\",\"text\"],\"text\":\"ROW " + std::to_string(i) +
                                   "\",\"n\":" + std::to_string(2 * i) + "}}");
  }
  EXPECT_TRUE(Errors().empty());
}

TEST_F(CustomTest, ExceptionsBelowTheThresholdStoreTheFallbackAndAreListedAsWarnings) {
  std::string cfg = Config(Script("def f(row):\n"
                                  "    if row['id'] in (3, 7):\n"
                                  "        raise ValueError(f\"bad row {row['id']}\")\n"
                                  "    print('noise on stdout does not break the protocol')\n"
                                  "    return row['id']\n") +
                               "    max_workers: 2\n    max_errors: 3\n    fallback_value: {failed: true}\n",
                           20, "execution_params:\n  merge: true\n");
  auto r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 20u);
  EXPECT_EQ(ToJson(rows[3]), "{\"id\":3,\"result\":{\"failed\":true}}");
  EXPECT_EQ(ToJson(rows[4]), "{\"id\":4,\"result\":4}");
  auto errs = Errors();
  ASSERT_EQ(errs.size(), 2u);
  for (const auto& e : errs) {
    EXPECT_EQ(e.Find("level")->as_string(), "warning");
    EXPECT_NE(e.Find("message")->as_string().find("ValueError: bad row"), std::string::npos);
    EXPECT_NE(e.Find("message")->as_string().find("fallback_value"), std::string::npos);
  }
  auto st = ParseJson(ReadFile(dir_.Path("state/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->Find("status")->as_string(), "success");
  EXPECT_EQ(st->Find("failed_rows")->as_int(), 0);  // warnings are not failed rows
  // Merge keeps the warnings and does not count them as failed rows.
  EXPECT_EQ(ReadLines(dir_.Path("out/merged/errors.jsonl")).size(), 2u);
  EXPECT_EQ(r.err.find("failed_rows="), std::string::npos) << r.err;
}

TEST_F(CustomTest, ExceptionsAtTheThresholdTripTheBreakerWithThatReason) {
  std::string cfg = Config(Script("def f(row):\n"
                                  "    if row['id'] % 5 == 1:\n"
                                  "        raise KeyError('nope')\n"
                                  "    return 1\n") +
                           "    max_errors: 2\n    max_timeouts: 9\n");
  auto r = RunMmirage("run --config " + cfg);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("circuit breaker tripped: Max errors reached (2 of max_errors=2)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("KeyError"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Max timeouts"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(dir_.Path("out/shard_0/data.jsonl")));  // nothing published as done
  EXPECT_FALSE(Exists(dir_.Path("state/shard_0/.SUCCESS")));
}

TEST_F(CustomTest, TimeoutsKillOnlyThatWorkerAndCountTowardsMaxTimeouts) {
  // Row 2 hangs; its worker is replaced and the other rows go on (timeouts of 2 s: other rows never come near
  // them, even on a loaded machine).
  std::string cfg = Config(Script("import os, time\n"
                                  "def f(row):\n"
                                  "    if row['id'] == 2:\n"
                                  "        time.sleep(60)\n"
                                  "    return os.getpid()\n") +
                           "    max_workers: 2\n    timeout_ms: 2000\n    max_timeouts: 2\n    fallback_value: T\n");
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunMmirage("run --config " + cfg);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(secs, 30);
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 20u);
  EXPECT_EQ(ToJson(rows[2]), "{\"id\":2,\"result\":\"T\"}");
  EXPECT_TRUE(rows[3].Find("result")->is_int());
  auto errs = Errors();
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].Find("message")->as_string().find("timeout_ms=2000"), std::string::npos);

  // At the threshold: the breaker trips with the timeout reason.
  std::string cfg2 = Config(Script("import time\n"
                                   "def f(row):\n"
                                   "    time.sleep(60 if row['id'] in (1, 2) else 0)\n"
                                   "    return 0\n") +
                            "    max_workers: 1\n    timeout_ms: 200\n    max_timeouts: 2\n");
  RunCommand("rm -rf '" + dir_.Path("out") + "' '" + dir_.Path("state") + "'");
  r = RunMmirage("run --config " + cfg2);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("circuit breaker tripped: Max timeouts reached (2 of max_timeouts=2)"), std::string::npos)
      << r.err;
}

TEST_F(CustomTest, RowsQueuedBehindATimedOutRowAreNotLost) {
  // One worker with a row queued behind the hanging one: the queued row goes to the replacement worker.
  std::string cfg = Config(Script("import time\n"
                                  "def f(row):\n"
                                  "    if row['id'] == 2:\n"
                                  "        time.sleep(60)\n"
                                  "    return row['text']\n") +
                           "    max_workers: 1\n    timeout_ms: 2000\n    max_timeouts: 5\n    fallback_value: late\n");
  auto r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 20u);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(rows[i].Find("result")->as_string(), i == 2 ? "late" : "row " + std::to_string(i)) << i;
  EXPECT_EQ(Errors().size(), 1u);
}

TEST_F(CustomTest, AWorkerKilledWithSigkillTripsTheBreakerAtOnce) {
  std::string cfg = Config(Script("import os, signal\n"
                                  "def f(row):\n"
                                  "    if row['id'] == 5:\n"
                                  "        os.kill(os.getpid(), signal.SIGKILL)\n"
                                  "    return 0\n") +
                           "    max_workers: 2\n    max_errors: 100\n    max_timeouts: 100\n");
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunMmirage("run --config " + cfg);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(secs, 30);
  EXPECT_NE(r.err.find("Worker process crashed fatally: worker was killed by signal 9"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(dir_.Path("state/shard_0/.SUCCESS")));
}

TEST_F(CustomTest, LoadErrorsFailAtStartWithThePythonMessage) {
  struct Case {
    std::string script, function, want;
  } cases[] = {
      {"def f(row):\n    return (\n", "f", "SyntaxError"},
      {"import no_such_module_here\n", "f", "ModuleNotFoundError: No module named 'no_such_module_here'"},
      {"def g(row):\n    return 1\n", "f", "Function 'f' not found in script"},
      {"f = 3\n", "f", "'f' in '"},
  };
  for (const auto& c : cases) {
    WriteFile(dir_.Path("fn.py"), c.script);
    std::string cfg = Config("    script_path: " + dir_.Path("fn.py") + "\n    function_name: " + c.function +
                             "\n    max_workers: 3\n");
    auto t0 = std::chrono::steady_clock::now();
    auto r = RunMmirage("run --config " + cfg);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(r.exit_code, 0) << c.script;
    EXPECT_LT(secs, 30) << c.script;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.script << "\n" << r.err;
    EXPECT_NE(r.err.find("cfg.yaml:2:5: processor 'custom'"), std::string::npos) << r.err;
  }
  // Syntax errors name the line.
  WriteFile(dir_.Path("fn.py"), "x = 1\ndef f(row):\n    return (\n");
  auto r = RunMmirage("run --config " + Config(Script("x = 1\ndef f(row):\n    return (\n")));
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
  // A missing script: the original's boot message.
  r = RunMmirage("run --config " + Config("    script_path: " + dir_.Path("missing.py") + "\n    function_name: f\n"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("CustomProcessor failed to boot: script_path '" + dir_.Path("missing.py") + "' does not exist."),
            std::string::npos)
      << r.err;
  // An interpreter that does not exist.
  r = RunMmirage("run --config " +
                 Config(Script("def f(row):\n    return 1\n") + "    python_executable: /nonexistent/python9\n"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/nonexistent/python9"), std::string::npos) << r.err;
}

TEST_F(CustomTest, AResultThatIsNotJsonIsARowErrorNamingTheType) {
  std::string cfg = Config(Script("def f(row):\n"
                                  "    if row['id'] == 4:\n"
                                  "        return {1, 2}\n"
                                  "    if row['id'] == 6:\n"
                                  "        return float('nan')\n"
                                  "    return [row['id']]\n"),
                           10, "execution_params:\n  max_failed_rows: 5\n");
  auto r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Rows().size(), 8u);
  auto errs = Errors();
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0].Find("row_index")->as_int(), 4);
  EXPECT_EQ(errs[0].Find("level"), nullptr);
  EXPECT_NE(errs[0].Find("message")->as_string().find("returned a set, which is not a JSON value"), std::string::npos);
  EXPECT_NE(errs[1].Find("message")->as_string().find("nan"), std::string::npos);
}

TEST_F(CustomTest, RedoingFailedRowsKeepsTheWarnings) {
  // Row 4 fails on the first run only (a marker file); row 3 raises every time (fallback + warning).
  std::string marker = dir_.Path("second_run");
  std::string cfg = Config(Script("import os\n"
                                  "def f(row):\n"
                                  "    if row['id'] == 3:\n"
                                  "        raise RuntimeError('always')\n"
                                  "    if row['id'] == 4 and not os.path.exists('" +
                                  marker +
                                  "'):\n"
                                  "        return {1}\n"
                                  "    return row['id']\n") +
                               "    max_errors: 10\n    fallback_value: -1\n",
                           8, "execution_params:\n  max_failed_rows: 1\n");
  auto r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Rows().size(), 7u);
  ASSERT_EQ(Errors().size(), 2u);
  WriteFile(marker, "");
  r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(ToJson(rows[3]), "{\"id\":3,\"result\":-1}");
  EXPECT_EQ(ToJson(rows[4]), "{\"id\":4,\"result\":4}");
  auto errs = Errors();
  ASSERT_EQ(errs.size(), 1u);  // the warning about row 3 stays; row 4 is no longer failed
  EXPECT_EQ(errs[0].Find("row_index")->as_int(), 3);
  EXPECT_EQ(errs[0].Find("level")->as_string(), "warning");
}

TEST_F(CustomTest, ACommandWorkerInAnotherLanguageSpeaksTheProtocol) {
  // A POSIX shell worker: replies with the length of each request line and its own pid.
  WriteFile(dir_.Path("worker.sh"),
            "#!/bin/sh\n"
            "echo '{\"ready\": true}'\n"
            "while IFS= read -r line; do\n"
            "  id=$(printf '%s' \"$line\" | sed -n 's/^{\"id\":\\([0-9]*\\),.*/\\1/p')\n"
            "  printf '{\"id\":%s,\"ok\":true,\"value\":\"sh %s\"}\\n' \"$id\" \"${#line}\"\n"
            "done\n");
  ASSERT_EQ(RunCommand("chmod +x '" + dir_.Path("worker.sh") + "'").exit_code, 0);
  std::string cfg = Config("    command: [" + dir_.Path("worker.sh") + "]\n    max_workers: 2\n", 6);
  auto r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 6u);
  // {"id":N,"row":{"text":"row 0","id":0}} is 38 characters for N, the row and the id one digit each.
  EXPECT_EQ(rows[0].Find("result")->as_string(), "sh 38");

  // A command that breaks the protocol trips the breaker rather than storing garbage.
  WriteFile(dir_.Path("bad.sh"), "#!/bin/sh\necho '{\"ready\": true}'\nwhile read -r line; do echo hello; done\n");
  ASSERT_EQ(RunCommand("chmod +x '" + dir_.Path("bad.sh") + "'").exit_code, 0);
  RunCommand("rm -rf '" + dir_.Path("out") + "' '" + dir_.Path("state") + "'");
  r = RunMmirage("run --config " + Config("    command: [" + dir_.Path("bad.sh") + "]\n", 3));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("broke the protocol"), std::string::npos) << r.err;
}

TEST_F(CustomTest, ConfigChecksForTheExtensions) {
  auto r = RunMmirage("validate --config " + Config("    command: [a]\n    script_path: x.py\n    function_name: f\n"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("command replaces script_path and function_name"), std::string::npos)
      << r.out << r.err;
  r = RunMmirage("validate --config " + Config("    function_name: f\n"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("script_path must be a non-empty string"), std::string::npos);
}

}  // namespace
}  // namespace mmirage::testing

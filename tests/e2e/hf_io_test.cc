// HF datasets in and out (issue #9): `type: loadable` and `type: parquet` inputs, `output_format: hf | parquet |
// jsonl`, merge, `mmirage cat`, bad inputs and resume after kill -9 — checked with Python `datasets`/`pyarrow` as
// the oracle (tests/e2e/hf_oracle.py builds the inputs and loads the outputs back).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

std::string Oracle(const std::string& args) {
  return "'" + PythonPath() + "' '" + std::string(MMIRAGE_SOURCE_DIR) + "/tests/e2e/hf_oracle.py' " + args;
}

// Runs the oracle; the assertion message carries its complaint.
::testing::AssertionResult OracleOk(const std::string& args) {
  auto r = RunCommand(Oracle(args));
  if (r.exit_code == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "hf_oracle.py " << args << " exited " << r.exit_code << ":\n" << r.err;
}

// The restructure config of hf_oracle.py's expected_basic(): every input column kept, three columns added.
std::string BasicConfig(const TempDir& d, const std::string& src, const std::string& format, int shards = 1,
                        const std::string& type = "loadable") {
  return "processors: []\n"
         "loading_params:\n"
         "  datasets:\n"
         "    - type: " +
         type +
         "\n"
         "      path: " +
         src +
         "\n"
         "      output_dir: " +
         d.Path("out_" + format) + "\n" + (format.empty() ? "" : "      output_format: " + format + "\n") +
         "  state_dir: " + d.Path("state_" + format) +
         "\n"
         "  num_shards: " +
         std::to_string(shards) +
         "\n"
         "processing_params:\n"
         "  inputs:\n"
         "    - {name: text, key: text}\n"
         "    - {name: tags, key: tags}\n"
         "    - {name: first_role, key: \"conv[0].role\"}\n"
         "    - {name: img, key: img, optional: true}\n"
         "  outputs: []\n"
         "  remove_columns: false\n"
         "  output_schema:\n"
         "    summary: \"{{ text }} ({{ tags | length }} tags)\"\n"
         "    first_role: \"{{ first_role }}\"\n"
         "    pic: \"{{ img }}\"\n"
         "execution_params: {merge: true}\n";
}

// Runs every shard of a config; the last run (shard 0, the config's shard_id, no --shard-id) merges.
CommandResult RunAllShards(const std::string& cfg, int shards) {
  for (int s = shards - 1; s >= 1; --s) {
    auto r = RunMmirage("run -q --config '" + cfg + "' --shard-id " + std::to_string(s));
    if (r.exit_code != 0) return r;
  }
  return RunMmirage("run -q --config '" + cfg + "'");
}

ino_t Inode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

class HfIoTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(OracleOk("make-basic '" + d_.Path("basic") + "'")); }
  TempDir d_;
};

TEST_F(HfIoTest, LoadableRoundTripsIntoEveryOutputFormat) {
  for (const std::string format : {"hf", "parquet", "jsonl"}) {
    SCOPED_TRACE(format);
    WriteFile(d_.Path(format + ".yaml"), BasicConfig(d_, d_.Path("basic"), format));
    auto r = RunMmirage("run -q --config " + d_.Path(format + ".yaml"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(OracleOk("check-basic '" + d_.Path("out_" + format + "/shard_0") + "' " + format));
    EXPECT_TRUE(OracleOk("check-basic '" + d_.Path("out_" + format + "/merged") + "' " + format));
    EXPECT_FALSE(Exists(d_.Path("out_" + format + "/shard_0/journal.json")));
    EXPECT_EQ(Exists(d_.Path("out_" + format + "/shard_0/data.jsonl")), format == "jsonl");
  }
  // hf is the default format; errors.jsonl stays JSONL beside the data.
  WriteFile(d_.Path("default.yaml"), BasicConfig(d_, d_.Path("basic"), ""));
  auto r = RunMmirage("run -q --config " + d_.Path("default.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(OracleOk("check-basic '" + d_.Path("out_/shard_0") + "' hf"));
  EXPECT_TRUE(Exists(d_.Path("out_/shard_0/errors.jsonl")));
  EXPECT_TRUE(Exists(d_.Path("out_/shard_0/state.json")));
}

TEST_F(HfIoTest, ShardsMergeInTheirFormatAndHfMergeLinksTheShardFiles) {
  for (const std::string format : {"hf", "parquet", "jsonl"}) {
    SCOPED_TRACE(format);
    WriteFile(d_.Path(format + ".yaml"), BasicConfig(d_, d_.Path("basic"), format, 3));
    auto r = RunAllShards(d_.Path(format + ".yaml"), 3);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(OracleOk("check-basic '" + d_.Path("out_" + format + "/merged") + "' " + format));
  }
  // hf: the merged dataset lists the three shards' Arrow files, hard-linked.
  auto state = ParseJson(ReadFile(d_.Path("out_hf/merged/state.json")));
  ASSERT_TRUE(state.ok());
  ASSERT_EQ(state->Find("_data_files")->size(), 3u);
  EXPECT_EQ(Inode(d_.Path("out_hf/merged/data-00001-of-00003.arrow")),
            Inode(d_.Path("out_hf/shard_1/data-00000-of-00001.arrow")));
  // merge-dir finds the format itself.
  auto m = RunMmirage("merge-dir --input-dir " + d_.Path("out_hf") + " --output-dir " + d_.Path("md"));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_TRUE(OracleOk("check-basic '" + d_.Path("md") + "' hf"));
}

TEST_F(HfIoTest, MergeReencodesWhenShardsInferredDifferentTypes) {
  // "maybe" is null in every odd row: with 7 shards of one row, the odd shards type it null, the others string.
  WriteFile(d_.Path("hf.yaml"), BasicConfig(d_, d_.Path("basic"), "hf", 7));
  auto r = RunAllShards(d_.Path("hf.yaml"), 7);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ReadFile(d_.Path("out_hf/shard_1/dataset_info.json")).find("\"null\""), std::string::npos);
  EXPECT_TRUE(OracleOk("check-basic '" + d_.Path("out_hf/merged") + "' hf"));
  auto state = ParseJson(ReadFile(d_.Path("out_hf/merged/state.json")));
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->Find("_data_files")->size(), 1u);  // re-encoded into one file
}

TEST_F(HfIoTest, DatasetDictSplitsAreProcessedAndMergedPerSplit) {
  ASSERT_TRUE(OracleOk("make-dict '" + d_.Path("dd") + "'"));
  WriteFile(d_.Path("dd.yaml"),
            "processors: []\n"
            "loading_params:\n"
            "  datasets: [{type: loadable, path: " +
                d_.Path("dd") + ", output_dir: " + d_.Path("out") +
                "}]\n"
                "  state_dir: " +
                d_.Path("state") +
                "\n"
                "  num_shards: 2\n"
                "processing_params:\n"
                "  inputs: [{name: q, key: q}]\n"
                "  outputs: []\n"
                "  remove_columns: false\n"
                "  output_schema: {shout: \"{{ q | upper }}!\"}\n"
                "execution_params: {merge: true}\n");
  auto r = RunAllShards(d_.Path("dd.yaml"), 2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(OracleOk("check-dict '" + d_.Path("out/merged") + "' test,train"));
  // cat: one split, -n, and a whole output_dir of shards.
  auto c = RunMmirage("cat " + d_.Path("out/merged") + " --split test");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "{\"q\":\"x\",\"n\":10,\"shout\":\"X!\"}\n{\"q\":\"y\",\"n\":20,\"shout\":\"Y!\"}\n");
  auto n1 = RunMmirage("cat " + d_.Path("out/merged") + " -n 1 --split train");
  EXPECT_EQ(n1.out, "{\"q\":\"a\",\"n\":1,\"shout\":\"A!\"}\n");
  auto all = RunMmirage("cat " + d_.Path("out") + " --split train");
  EXPECT_EQ(all.out,
            "{\"q\":\"a\",\"n\":1,\"shout\":\"A!\"}\n{\"q\":\"b\",\"n\":2,\"shout\":\"B!\"}\n"
            "{\"q\":\"c\",\"n\":3,\"shout\":\"C!\"}\n");
  auto bad = RunMmirage("cat " + d_.Path("out/merged") + " --split nope");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("no split 'nope'"), std::string::npos) << bad.err;
  // A split map is not a loadable path.
  WriteFile(d_.Path("map.yaml"),
            Replace(ReadFile(d_.Path("dd.yaml")), "path: " + d_.Path("dd"), "path: {train: " + d_.Path("dd") + "}"));
  auto v = RunMmirage("validate --config " + d_.Path("map.yaml"));
  EXPECT_NE(v.exit_code, 0);
  EXPECT_NE(v.err.find("not a split map"), std::string::npos) << v.err;
}

TEST_F(HfIoTest, EveryArrowTypeMapsToValuesFromArrowAndParquet) {
  ASSERT_TRUE(OracleOk("make-exotic '" + d_.Path("ex") + "'"));
  auto a = RunMmirage("cat " + d_.Path("ex"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  WriteFile(d_.Path("a.jsonl"), a.out);
  EXPECT_TRUE(OracleOk("compare-jsonl '" + d_.Path("a.jsonl") + "' '" + d_.Path("ex/expected.jsonl") + "'"));
  auto p = RunMmirage("cat " + d_.Path("ex/exotic.parquet"));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  WriteFile(d_.Path("p.jsonl"), p.out);
  EXPECT_TRUE(OracleOk("compare-jsonl '" + d_.Path("p.jsonl") + "' '" + d_.Path("ex/expected.jsonl") + "'"));
  // The same rows through a run: type: parquet (a glob) in, jsonl out, 2 shards crossing row groups.
  WriteFile(d_.Path("pq.yaml"),
            "processors: []\n"
            "loading_params:\n"
            "  datasets: [{type: parquet, path: '" +
                d_.Path("ex/*.parquet") + "', output_dir: " + d_.Path("out") +
                ", output_format: jsonl}]\n"
                "  state_dir: " +
                d_.Path("state") +
                "\n"
                "  num_shards: 2\n"
                "processing_params:\n"
                "  inputs: [{name: d, key: dict, optional: true}]\n"
                "  outputs: []\n"
                "  remove_columns: false\n"
                "  output_schema: {}\n"
                "execution_params: {merge: true}\n");
  auto r = RunAllShards(d_.Path("pq.yaml"), 2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      OracleOk("compare-jsonl '" + d_.Path("out/merged/data.jsonl") + "' '" + d_.Path("ex/expected.jsonl") + "'"));
}

// One run that must fail with a one-line error naming `needle`, publishing nothing.
void ExpectCleanFailure(const TempDir& d, const std::string& cfg, const std::string& needle) {
  auto r = RunMmirage("run -q --config " + cfg);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  // The reason is on one line: the error line naming the file says what is wrong (a warning before it may name the
  // file too, e.g. a resume discarded because the input changed).
  size_t error_at = r.err.find("ERROR");
  size_t at = error_at == std::string::npos ? std::string::npos : r.err.find(needle, r.err.rfind('\n', error_at) + 1);
  EXPECT_NE(at, std::string::npos) << "no error line names " << needle << ": " << r.err;
  if (at != std::string::npos) {
    size_t bol = r.err.rfind('\n', at);
    size_t eol = r.err.find('\n', at);
    std::string line =
        r.err.substr(bol == std::string::npos ? 0 : bol + 1, eol - (bol == std::string::npos ? 0 : bol + 1));
    EXPECT_NE(line.find("ERROR"), std::string::npos) << "not an error line: " << line;
  }
  EXPECT_FALSE(Exists(d.Path("out_hf/shard_0"))) << r.err;
}

TEST_F(HfIoTest, BadInputsAreOneLineErrorsNamingTheFileAndPublishNothing) {
  const std::string arrow = d_.Path("basic/data-00000-of-00001.arrow");
  std::string bytes = ReadFile(arrow);
  ASSERT_GT(bytes.size(), 1000u);
  WriteFile(d_.Path("c.yaml"), BasicConfig(d_, d_.Path("basic"), "hf"));
  // Truncated.
  WriteFile(arrow, bytes.substr(0, bytes.size() / 2));
  ExpectCleanFailure(d_, d_.Path("c.yaml"), arrow);
  // Corrupt: garbage in place of the stream's first message.
  std::string corrupt = bytes;
  for (size_t i = 8; i < 200; ++i) corrupt[i] = static_cast<char>(0xA5);
  WriteFile(arrow, corrupt);
  ExpectCleanFailure(d_, d_.Path("c.yaml"), arrow);
  // state.json lists a file that is not there.
  WriteFile(arrow, bytes);
  std::string state = ReadFile(d_.Path("basic/state.json"));
  WriteFile(d_.Path("basic/state.json"), Replace(state, "data-00000-of-00001.arrow", "data-00000-of-00009.arrow"));
  ExpectCleanFailure(d_, d_.Path("c.yaml"), "data-00000-of-00009.arrow, which does not exist");
  WriteFile(d_.Path("basic/state.json"), state);
  // A directory that is not a dataset, and a file.
  WriteFile(d_.Path("plain/readme.txt"), "x");
  WriteFile(d_.Path("p.yaml"), BasicConfig(d_, d_.Path("plain"), "hf"));
  ExpectCleanFailure(d_, d_.Path("p.yaml"), d_.Path("plain") + " is not an HF save_to_disk dataset directory");
  WriteFile(d_.Path("f.yaml"), BasicConfig(d_, d_.Path("plain/readme.txt"), "hf"));
  ExpectCleanFailure(d_, d_.Path("f.yaml"), d_.Path("plain/readme.txt") + " is not an HF save_to_disk");
  // A Parquet "file" that is not one.
  WriteFile(d_.Path("q.yaml"), BasicConfig(d_, d_.Path("plain/readme.txt"), "hf", 1, "parquet"));
  ExpectCleanFailure(d_, d_.Path("q.yaml"), d_.Path("plain/readme.txt"));
  // The intact dataset still works.
  auto ok = RunMmirage("run -q --config " + d_.Path("c.yaml"));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(HfOutputTest, ConflictingColumnTypesAreAShardErrorNamingTheColumnAndTwoRows) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), "{\"v\":1}\n{\"v\":2.5}\n{\"v\":null}\n{\"v\":\"x\"}\n");
  auto cfg = [&](const std::string& format) {
    return "processors: []\n"
           "loading_params:\n"
           "  datasets: [{type: JSONL, path: " +
           d.Path("data.jsonl") + ", output_dir: " + d.Path("out_" + format) + ", output_format: " + format +
           "}]\n"
           "  state_dir: " +
           d.Path("state") +
           "\n"
           "processing_params:\n"
           "  inputs: [{name: v, key: v, optional: true}]\n"
           "  outputs: []\n"
           "  remove_columns: true\n"
           "  output_schema: {v: \"{{ v }}\", nested: [{w: \"{{ v }}\"}]}\n";
  };
  WriteFile(d.Path("hf.yaml"), cfg("hf"));
  auto r = RunMmirage("run -q --config " + d.Path("hf.yaml"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("column 'v' has values of two types: row 0 has a float, row 3 has a string"), std::string::npos)
      << r.err;
  EXPECT_FALSE(Exists(d.Path("out_hf/shard_0")));
  // JSONL has no column types: the same rows are fine.
  WriteFile(d.Path("jsonl.yaml"), cfg("jsonl"));
  auto j = RunMmirage("run -q --config " + d.Path("jsonl.yaml"));
  EXPECT_EQ(j.exit_code, 0) << j.err;
  // A bad output_format is a located config error.
  WriteFile(d.Path("bad.yaml"), cfg("arrow"));
  auto v = RunMmirage("validate --config " + d.Path("bad.yaml"));
  EXPECT_NE(v.exit_code, 0);
  EXPECT_NE(v.err.find("bad.yaml:3:"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("'arrow' is not one of hf, jsonl, parquet"), std::string::npos) << v.err;
}

// kill -9 in the middle of a loadable run, then resume: the output equals a fault-free run's, in every format.
TEST(HfResumeTest, KillNineMidRunThenResumeGivesTheFaultFreeOutputInEveryFormat) {
  TempDir d;
  const int kRows = 400000;
  ASSERT_TRUE(OracleOk("make-big '" + d.Path("big") + "' " + std::to_string(kRows)));
  for (const std::string format : {"hf", "parquet", "jsonl"}) {
    SCOPED_TRACE(format);
    auto cfg = [&](const std::string& tag) {
      return "processors: []\n"
             "loading_params:\n"
             "  datasets: [{type: loadable, path: " +
             d.Path("big") + ", output_dir: " + d.Path(tag + "_out") + ", output_format: " + format +
             "}]\n"
             "  state_dir: " +
             d.Path(tag + "_state") +
             "\n"
             "processing_params:\n"
             "  inputs: [{name: id, key: id}, {name: text, key: text}, {name: t, key: 'tags[1]'}]\n"
             "  outputs: []\n"
             "  remove_columns: true\n"
             "  output_schema: {id: \"{{ id }}\", conv: [{role: user, content: \"{{ text }} / {{ t }}\"}]}\n"
             "execution_params: {commit_every_rows: 20000}\n";
    };
    WriteFile(d.Path("ref_" + format + ".yaml"), cfg("ref_" + format));
    auto ref = RunMmirage("run -q --config " + d.Path("ref_" + format + ".yaml"));
    ASSERT_EQ(ref.exit_code, 0) << ref.err;

    const std::string tag = "kill_" + format;
    WriteFile(d.Path(tag + ".yaml"), cfg(tag));
    const std::string journal = d.Path(tag + "_out/shard_0.tmp.partial/journal.json");
    bool killed_mid_run = false;
    for (int attempt = 0; attempt < 5 && !killed_mid_run; ++attempt) {
      RunCommand("rm -rf '" + d.Path(tag + "_out") + "' '" + d.Path(tag + "_state") + "'");
      pid_t pid = ::fork();
      if (pid == 0) {
        FILE* f = std::freopen("/dev/null", "w", stderr);
        (void)f;
        std::string c = d.Path(tag + ".yaml");
        ::execl(MMIRAGE_BINARY, MMIRAGE_BINARY, "run", "-q", "--config", c.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
      }
      // Kill as soon as a commit past row 0 is durable.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (std::chrono::steady_clock::now() < deadline) {
        auto j = ParseJson(ReadFile(journal));
        if (j.ok() && j->is_object() && j->Find("splits") &&
            j->Find("splits")->as_array()[0].Find("rows_done")->as_int() > 0) {
          ::kill(pid, SIGKILL);
          break;
        }
        int status;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          pid = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
      if (pid > 0) {
        int status;
        ::waitpid(pid, &status, 0);
        killed_mid_run = WIFSIGNALED(status) && !Exists(d.Path(tag + "_out/shard_0"));
      }
    }
    ASSERT_TRUE(killed_mid_run) << "the run always finished before the first commit could be killed";
    auto j = ParseJson(ReadFile(journal));
    ASSERT_TRUE(j.ok());
    int64_t done = j->Find("splits")->as_array()[0].Find("rows_done")->as_int();
    EXPECT_GT(done, 0);
    EXPECT_LT(done, kRows);
    auto resumed = RunMmirage("run -q --config " + d.Path(tag + ".yaml"));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    auto want = RunMmirage("cat " + d.Path("ref_" + format + "_out/shard_0"));
    auto got = RunMmirage("cat " + d.Path(tag + "_out/shard_0"));
    ASSERT_EQ(got.exit_code, 0) << got.err;
    EXPECT_EQ(std::count(got.out.begin(), got.out.end(), '\n'), kRows);
    EXPECT_TRUE(got.out == want.out) << "resumed output differs from the fault-free run";
    if (format != "jsonl") {
      EXPECT_TRUE(OracleOk("load '" + d.Path(tag + "_out/shard_0") + "' " + format + " > /dev/null"));
    }
  }
}

// The original's throughput benchmark config (configs/config_benchmark_datatrove.yaml at 2972ff6, checked in under
// tests/fixtures/mmirage-2972ff6/configs/) validates and runs with only model_path changed, on a save_to_disk dataset
// with the s1K-1.1 columns built by examples/s1k/make_s1k_dataset.py. Its mode is slurm: the run is the array task's
// command
// (`run --shard-id 0`). The synthetic model ends every answer at once (EOS bias), so 1024 max_new_tokens stay cheap.
TEST(DatatroveConfigTest, TheOriginalsBenchmarkConfigRunsUnchangedButForModelPath) {
  TempDir d;
  std::string src = MMIRAGE_SOURCE_DIR;
  std::string model = d.Path("tiny.gguf");
  ASSERT_EQ(RunCommand("'" + MakeTestModelTool() + "' --out '" + model + "' --seed 3 --eos-bias 100").exit_code, 0);
  auto mk = RunCommand(
      "'" + PythonPath() + "' '" + src + "/examples/s1k/make_s1k_dataset.py' --rows 5 --out " + "data/s1K-1.1",
      d.path());
  ASSERT_EQ(mk.exit_code, 0) << mk.err;
  std::string original = ReadFile(src + "/tests/fixtures/mmirage-2972ff6/configs/config_benchmark_datatrove.yaml");
  ASSERT_NE(original.find("model_path: Qwen/Qwen3-4B"), std::string::npos);
  std::string cfg = Replace(original, "model_path: Qwen/Qwen3-4B", "model_path: " + model);
  WriteFile(d.Path("config_benchmark_datatrove.yaml"), cfg);
  auto v = RunMmirage("validate --config config_benchmark_datatrove.yaml", d.path());
  ASSERT_EQ(v.exit_code, 0) << v.err;
  auto r = RunMmirage("run -q --config config_benchmark_datatrove.yaml --shard-id 0", d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto check = RunCommand("'" + PythonPath() +
                              "' -c \"import datasets, json; "
                              "d = datasets.load_from_disk('data/benchmark_s1k/output/shard_0'); "
                              "print(json.dumps([len(d), list(d.features), d[4]['question'], d[4]['answer']]))\"",
                          d.path());
  ASSERT_EQ(check.exit_code, 0) << check.err;
  auto got = ParseJson(check.out);
  ASSERT_TRUE(got.ok()) << check.out;
  EXPECT_EQ(got->as_array()[0].as_int(), 5);
  EXPECT_EQ(ToJson(got->as_array()[1]),
            "[\"solution\",\"question\",\"cot_type\",\"source_type\",\"metadata\",\"gemini_thinking_trajectory\","
            "\"gemini_attempt\",\"deepseek_thinking_trajectory\",\"deepseek_attempt\",\"gemini_grade\","
            "\"gemini_grade_reason\",\"deepseek_grade\",\"deepseek_grade_reason\",\"answer\"]");
  EXPECT_EQ(got->as_array()[2].as_string().rfind("Problem 4:", 0), 0u);
  EXPECT_TRUE(got->as_array()[3].is_string());
}

}  // namespace
}  // namespace mmirage::testing

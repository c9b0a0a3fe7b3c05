// Issue #13 item 6: resume verifies what it resumes. A journal that does not match its files (shorter, missing,
// a flipped byte in the last committed block, garbage, out-of-range numbers) restarts the shard from scratch with
// a warning naming the file and what was wrong; never NUL bytes, never a permanent failure. A changed identity
// (input data, config, ${VAR}, format version) is named in the warning.
#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "data/json.h"
#include "pipeline/input_identity.h"
#include "pipeline/shard_writer.h"
#include "support/test_util.h"
#include "util/env.h"

namespace mmirage::pipeline {
namespace {

ShardWriterOptions Opts(const std::string& out) {
  ShardWriterOptions o{out, 0, {""}, 7};
  o.split_rows = {100};
  return o;
}

// A work directory with 3 committed rows (and 1 failed row), then bytes past the commit.
void WriteCommitted(const std::string& out) {
  auto w = ShardWriter::Open(Env::Default(), Opts(out));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->AddSerialized(0, "{\"a\":0}\n{\"a\":1}\n{\"a\":2}\n", 3).ok());
  ASSERT_TRUE((*w)->AddError(0, 3, "d.jsonl:4", RowError{Stage::kRenderOutput, "boom"}).ok());
  (*w)->Advance(0, 4);
  ASSERT_TRUE((*w)->Commit().ok());
  ASSERT_TRUE((*w)->AddSerialized(0, "{\"a\":4}\n", 1).ok());  // never committed
  (*w)->Abandon();
}

struct Reopened {
  bool resumed = false;
  uint64_t rows = 0;
  std::string log;
  std::string published;  // data.jsonl after finishing with one more row
};

Reopened ReopenAndFinish(const std::string& out) {
  Reopened r;
  ::testing::internal::CaptureStderr();
  auto w = ShardWriter::Open(Env::Default(), Opts(out));
  r.log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(w.ok()) << w.status().ToString();  // never a permanent failure
  if (!w.ok()) return r;
  r.resumed = (*w)->resumed();
  r.rows = (*w)->resume_rows(0);
  EXPECT_TRUE((*w)->AddSerialized(0, "{\"a\":9}\n", 1).ok());
  (*w)->Advance(0, 1);
  EXPECT_TRUE((*w)->Finish().ok());
  r.published = testing::ReadFile(out + "/shard_0/data.jsonl");
  EXPECT_EQ(r.published.find('\0'), std::string::npos) << "NUL bytes published";
  return r;
}

std::string Journal(const std::string& out) { return out + "/shard_0.tmp.partial/journal.json"; }
std::string Data(const std::string& out) { return out + "/shard_0.tmp.partial/data.jsonl"; }

void EditJournal(const std::string& out, const std::function<void(Value*)>& edit) {
  auto j = ParseJson(testing::ReadFile(Journal(out)));
  ASSERT_TRUE(j.ok());
  edit(&*j);
  testing::WriteFile(Journal(out), ToJson(*j) + "\n");
}

TEST(ResumeVerifyTest, AMatchingJournalResumesAndDropsTheUncommittedBytes) {
  testing::TempDir d;
  WriteCommitted(d.Path("out"));
  Reopened r = ReopenAndFinish(d.Path("out"));
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(r.rows, 4u);
  EXPECT_EQ(r.log.find("WARNING"), std::string::npos) << r.log;
  EXPECT_EQ(r.published, "{\"a\":0}\n{\"a\":1}\n{\"a\":2}\n{\"a\":9}\n");
  EXPECT_EQ(testing::ReadLines(d.Path("out/shard_0/errors.jsonl")).size(), 1u);
}

TEST(ResumeVerifyTest, AShorterDataFileRestartsFromScratchNamingIt) {
  testing::TempDir d;
  WriteCommitted(d.Path("out"));
  ASSERT_TRUE(Env::Default()->TruncateFile(Data(d.Path("out")), 10).ok());
  Reopened r = ReopenAndFinish(d.Path("out"));
  EXPECT_FALSE(r.resumed);
  EXPECT_NE(r.log.find(Data(d.Path("out")) + ": shorter (10 bytes) than committed (24)"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("restarts from scratch"), std::string::npos) << r.log;
  EXPECT_EQ(r.published, "{\"a\":9}\n");
  EXPECT_EQ(testing::ReadFile(d.Path("out/shard_0/errors.jsonl")), "");
}

TEST(ResumeVerifyTest, AMissingDataFileRestartsFromScratchNamingIt) {
  testing::TempDir d;
  WriteCommitted(d.Path("out"));
  ASSERT_TRUE(Env::Default()->RemoveFile(Data(d.Path("out"))).ok());
  Reopened r = ReopenAndFinish(d.Path("out"));
  EXPECT_FALSE(r.resumed);
  EXPECT_NE(r.log.find(Data(d.Path("out")) + ": missing"), std::string::npos) << r.log;
  EXPECT_EQ(r.published, "{\"a\":9}\n");
}

TEST(ResumeVerifyTest, AFlippedByteInTheLastCommittedBlockRestartsFromScratch) {
  testing::TempDir d;
  WriteCommitted(d.Path("out"));
  std::string data = testing::ReadFile(Data(d.Path("out")));
  data[data.find("\"a\":2") + 4] = '7';  // same size, other content
  testing::WriteFile(Data(d.Path("out")), data);
  Reopened r = ReopenAndFinish(d.Path("out"));
  EXPECT_FALSE(r.resumed);
  EXPECT_NE(r.log.find(Data(d.Path("out")) + ": the last committed block"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("does not match its checksum"), std::string::npos) << r.log;
  EXPECT_EQ(r.published, "{\"a\":9}\n");
}

TEST(ResumeVerifyTest, AFlippedByteInTheErrorsFileIsCaughtToo) {
  testing::TempDir d;
  WriteCommitted(d.Path("out"));
  std::string errors_path = d.Path("out/shard_0.tmp.partial/errors.jsonl");
  std::string e = testing::ReadFile(errors_path);
  e[e.find("boom")] = 'B';
  testing::WriteFile(errors_path, e);
  Reopened r = ReopenAndFinish(d.Path("out"));
  EXPECT_FALSE(r.resumed);
  EXPECT_NE(r.log.find(errors_path + ": the last committed block"), std::string::npos) << r.log;
}

TEST(ResumeVerifyTest, AGarbageJournalRestartsFromScratchWithAWarning) {
  testing::TempDir d;
  WriteCommitted(d.Path("out"));
  testing::WriteFile(Journal(d.Path("out")), "{\"fingerprint\": \"00000");
  Reopened r = ReopenAndFinish(d.Path("out"));
  EXPECT_FALSE(r.resumed);
  EXPECT_NE(r.log.find("the journal " + Journal(d.Path("out")) + " is unreadable (not JSON"), std::string::npos)
      << r.log;
  EXPECT_EQ(r.published, "{\"a\":9}\n");
}

TEST(ResumeVerifyTest, OutOfRangeNumbersRestartFromScratchWithAWarning) {
  struct Case {
    const char* what;
    std::function<void(Value*)> edit;
    const char* expect;
  };
  auto split = [](Value* j) -> Value* {
    for (auto& [k, v] : j->mutable_object())
      if (k == "splits") return &v.mutable_array()[0];
    return nullptr;
  };
  std::vector<Case> cases = {
      {"negative offset", [&](Value* j) { split(j)->Set("data_bytes", int64_t{-5}); }, "committed offset missing"},
      {"offset past the end", [&](Value* j) { split(j)->Set("data_bytes", int64_t{1} << 40); }, "shorter"},
      {"offset not an integer", [&](Value* j) { split(j)->Set("data_bytes", 1e300); }, "committed offset missing"},
      {"more rows than bytes", [&](Value* j) { split(j)->Set("rows_written", int64_t{1000}); }, "out of range"},
      {"rows beyond the shard", [&](Value* j) { split(j)->Set("rows_done", int64_t{1} << 62); },
       "beyond the shard's 100 rows"},
      {"negative rows", [&](Value* j) { split(j)->Set("rows_done", int64_t{-1}); }, "row counts missing, negative"},
      {"rows_failed too large", [&](Value* j) { j->Set("rows_failed", int64_t{99}); }, "rows_failed out of range"},
      {"errors offset past the end", [&](Value* j) { j->Set("errors_bytes", int64_t{999999}); },
       "errors.jsonl: shorter"},
      {"splits not an array", [&](Value* j) { j->Set("splits", "x"); }, "its splits do not match"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    testing::TempDir d;
    WriteCommitted(d.Path("out"));
    EditJournal(d.Path("out"), c.edit);
    Reopened r = ReopenAndFinish(d.Path("out"));
    EXPECT_FALSE(r.resumed);
    EXPECT_NE(r.log.find(c.expect), std::string::npos) << r.log;
    EXPECT_NE(r.log.find("restarts from scratch"), std::string::npos) << r.log;
    EXPECT_EQ(r.published, "{\"a\":9}\n");
  }
}

TEST(ResumeVerifyTest, AJournalOfAnotherIdentitySaysWhatChanged) {
  testing::TempDir d;
  WriteCommitted(d.Path("out"));
  Value before = Value::EmptyObject();
  before.Set("format_version", kShardFormatVersion);
  before.Set("config", "1");
  testing::WriteFile(d.Path("out/shard_0.tmp.partial/identity.json"), ToJson(before));
  ShardWriterOptions o = Opts(d.Path("out"));
  o.fingerprint = 8;
  Value now = before;
  now.Set("config", "2");
  o.identity = now;
  ::testing::internal::CaptureStderr();
  auto w = ShardWriter::Open(Env::Default(), o);
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE((*w)->resumed());
  EXPECT_NE(log.find("config changed since the partial output"), std::string::npos) << log;
}

// ---- identities -------------------------------------------------------------------------------------------------

config::Config LoadWith(const std::string& data, const std::string& out, std::optional<std::string> var) {
  std::string y = "processors: []\nloading_params:\n  datasets:\n    - type: JSONL\n      path: " + data +
                  "\n      output_dir: ${OUT_ROOT}" + out +
                  "\nprocessing_params:\n  inputs: [{name: a, key: a}]\n"
                  "  outputs: []\n  output_schema: {a: '{{ a }}'}\n";
  config::LoadOptions o;
  o.vars = [var](const std::string& name) -> std::optional<std::string> {
    if (name == "OUT_ROOT") return var;
    return std::nullopt;
  };
  auto c = config::LoadConfigFromString(y, "t.yaml", o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : config::Config();
}

TEST(InputIdentityTest, AChangedInputIsNamedWithItsSize) {
  testing::TempDir d;
  std::string data = d.Path("a.jsonl");
  testing::WriteFile(data, "{\"a\":1}\n");
  config::Config c = LoadWith(data, "/o", std::string(""));
  Value before = DatasetIdentity(Env::Default(), c, 0, 0);
  testing::WriteFile(data, "{\"a\":1}\n{\"a\":2}\n");
  Value now = DatasetIdentity(Env::Default(), c, 0, 0);
  EXPECT_NE(IdentityFingerprint(before), IdentityFingerprint(now));
  std::string why = DescribeIdentityChange(before, now);
  EXPECT_NE(why.find("input " + data + " changed (size 8 → 16"), std::string::npos) << why;
  EXPECT_EQ(IdentityFingerprint(now), IdentityFingerprint(DatasetIdentity(Env::Default(), c, 0, 0)));
}

TEST(InputIdentityTest, AChangeInTheLastBlockOfABigInputIsSeen) {
  testing::TempDir d;
  std::string data = d.Path("a.jsonl");
  std::string rows;
  while (rows.size() < 300 * 1024) rows += "{\"a\":12345678901234567890}\n";
  testing::WriteFile(data, rows);
  config::Config c = LoadWith(data, "/o", std::string(""));
  Value before = DatasetIdentity(Env::Default(), c, 0, 0);
  rows[rows.size() - 5] = '9';  // same size, same first 64 KiB
  testing::WriteFile(data, rows);
  Value now = DatasetIdentity(Env::Default(), c, 0, 0);
  std::string why = DescribeIdentityChange(before, now);
  EXPECT_NE(why.find("input " + data + " changed (content"), std::string::npos) << why;
}

TEST(InputIdentityTest, AVariableExpandedDifferentlyIsNamed) {
  testing::TempDir d;
  std::string data = d.Path("a.jsonl");
  testing::WriteFile(data, "{\"a\":1}\n");
  config::Config c1 = LoadWith(data, "/o", std::string("/x"));
  config::Config c2 = LoadWith(data, "/o", std::string("/y"));
  EXPECT_EQ(c1.fingerprint, c2.fingerprint);  // same YAML text
  Value a = DatasetIdentity(Env::Default(), c1, 0, 0), b = DatasetIdentity(Env::Default(), c2, 0, 0);
  EXPECT_NE(IdentityFingerprint(a), IdentityFingerprint(b));
  EXPECT_EQ(DescribeIdentityChange(a, b), "${OUT_ROOT} expanded differently");
  EXPECT_EQ(ToJson(a).find("/x"), std::string::npos) << "a variable's value is never stored";
  config::Config c3 = LoadWith(data, "/o", std::nullopt);
  EXPECT_EQ(DescribeIdentityChange(a, DatasetIdentity(Env::Default(), c3, 0, 0)),
            "${OUT_ROOT} expanded differently (now unset)");
}

TEST(InputIdentityTest, SlurmVariablesAreNotPartOfTheIdentity) {
  testing::TempDir d;
  std::string data = d.Path("a.jsonl");
  testing::WriteFile(data, "{\"a\":1}\n");
  std::string y = "processors: []\nloading_params:\n  datasets:\n    - type: JSONL\n      path: " + data +
                  "\n      output_dir: " + d.Path("o") +
                  "\n  num_shards: 4\n  shard_id: ${SLURM_ARRAY_TASK_ID}\n"
                  "processing_params:\n  inputs: [{name: a, key: a}]\n  outputs: []\n  output_schema: {a: '{{ a }}'}\n";
  auto load = [&](std::optional<std::string> task) {
    config::LoadOptions o;
    o.vars = [task](const std::string& name) { return name == "SLURM_ARRAY_TASK_ID" ? task : std::nullopt; };
    o.shard_id_override = 3;
    auto c = config::LoadConfigFromString(y, "t.yaml", o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : config::Config();
  };
  config::Config in_array = load(std::string("3")), local = load(std::nullopt);
  ASSERT_TRUE(in_array.expanded_vars.count("SLURM_ARRAY_TASK_ID"));
  // A shard started in an array job can be finished by `mmirage run --shard-id 3`.
  EXPECT_EQ(IdentityFingerprint(DatasetIdentity(Env::Default(), in_array, 0, 3)),
            IdentityFingerprint(DatasetIdentity(Env::Default(), local, 0, 3)));
}

TEST(InputIdentityTest, RayAddressesAreNotPartOfTheIdentity) {
  testing::TempDir d;
  std::string data = d.Path("a.jsonl");
  testing::WriteFile(data, "{\"a\":1}\n");
  // A config without ray.address looks the variables up in every mode; a Ray task sees other values than the shell
  // that submitted it.
  std::string y =
      "processors: []\nloading_params:\n  datasets:\n    - type: JSONL\n      path: " + data +
      "\n      output_dir: " + d.Path("o") +
      "\nprocessing_params:\n  inputs: [{name: a, key: a}]\n  outputs: []\n  output_schema: {a: '{{ a }}'}\n"
      "execution_params:\n  mode: ray\n";
  auto load = [&](std::optional<std::string> address) {
    config::LoadOptions o;
    o.vars = [address](const std::string& name) {
      return name == "RAY_ADDRESS" || name == "RAY_API_SERVER_ADDRESS" ? address : std::nullopt;
    };
    auto c = config::LoadConfigFromString(y, "t.yaml", o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : config::Config();
  };
  config::Config submitted = load(std::string("ray://head:10001")), in_task = load(std::string("10.0.0.1:6379"));
  ASSERT_GT(submitted.expanded_vars.count("RAY_API_SERVER_ADDRESS") + submitted.expanded_vars.count("RAY_ADDRESS"), 0u);
  EXPECT_EQ(IdentityFingerprint(DatasetIdentity(Env::Default(), submitted, 0, 0)),
            IdentityFingerprint(DatasetIdentity(Env::Default(), in_task, 0, 0)));
}

TEST(InputIdentityTest, ConfigLayoutAndFormatVersionChangesAreNamed) {
  testing::TempDir d;
  std::string data = d.Path("a.jsonl");
  testing::WriteFile(data, "{\"a\":1}\n");
  config::Config c = LoadWith(data, "/o", std::string(""));
  Value a = DatasetIdentity(Env::Default(), c, 0, 0);
  config::Config other = LoadWith(data, "/p", std::string(""));
  EXPECT_EQ(DescribeIdentityChange(a, DatasetIdentity(Env::Default(), other, 0, 0)), "config changed");
  Value b = a;
  b.Set("num_shards", int64_t{4});
  EXPECT_EQ(DescribeIdentityChange(a, b), "shard layout changed (num_shards 1 → 4)");
  Value old = a;
  old.Set("format_version", int64_t{1});
  EXPECT_EQ(DescribeIdentityChange(old, a), "format version changed (1 → 2)");
  EXPECT_NE(DescribeIdentityChange(Value(), a).find("older mmirage"), std::string::npos);
}

}  // namespace
}  // namespace mmirage::pipeline

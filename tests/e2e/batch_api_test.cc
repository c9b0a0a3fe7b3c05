// End-to-end: batch_api configs (OpenAI Batch, Anthropic Message Batches) against the fake provider
// (tests/support/fake_batch_provider.py, started on a free 127.0.0.1 port): the export equals the original's
// (fixtures from qchapp/MMIRAGE@2972ff6), submit → check → collect over 3 shards with text, JSON and image rows,
// two batch outputs and an output that reads another, provider failures and unparsable answers as row errors,
// --resubmit-failed, kill -9 during submission and during collection, a missing key, a 401, an oversized
// request with `reject`, injected 500/429, export refused in slurm mode.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "data/json.h"
#include "e2e/batch_e2e_util.h"
#include "e2e/e2e_util.h"
#include "util/http/event_loop.h"
#include "util/net.h"
#include "util/process/subprocess.h"

namespace mmirage::testing {
namespace {

const std::string kFixtures = std::string(MMIRAGE_SOURCE_DIR) + "/tests/fixtures/batch_export";

std::string Glob1(const std::string& pattern) {
  auto r = RunCommand("ls " + pattern);
  auto nl = r.out.find('\n');
  return r.exit_code == 0 ? r.out.substr(0, nl) : "";
}

// ---- export -------------------------------------------------------------------------------------------------

std::string MaskIds(const std::string& line) {
  static const std::regex id("\"custom_id\": \"[^\"]*\"");
  return std::regex_replace(line, id, "\"custom_id\": \"X\"");
}

TEST(BatchApiExportTest, RequestsAreByteIdenticalToTheOriginalsExport) {
  for (const char* name : {"openai_text", "openai_vision", "anthropic_vision", "anthropic_text"}) {
    TempDir d;
    ASSERT_EQ(RunCommand("cp -r '" + kFixtures + "/.' '" + d.path() + "'").exit_code, 0);
    std::string cfg = ReadFile(d.Path(std::string(name) + ".yaml"));
    cfg = std::regex_replace(cfg, std::regex("\n  batch_size"), "\n  state_dir: state\n  batch_size");
    WriteFile(d.Path("cfg.yaml"), cfg);
    // Export mode needs no key.
    auto r = Mm("env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY", "run --config cfg.yaml --export-prompts out/export.jsonl",
                d.path());
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    std::string ours = Glob1(d.Path("out/export.*.jsonl"));
    ASSERT_FALSE(ours.empty()) << r.err;
    EXPECT_NE(std::regex_search(ours, std::regex("export\\.[0-9a-f]{6}\\.jsonl$")), false) << ours;
    auto got = ReadLines(ours);
    auto want = ReadLines(kFixtures + "/expected_2972ff6/export_" + name + ".jsonl");
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(MaskIds(got[i]), MaskIds(want[i])) << name << " line " << i;
    // Our custom ids: valid for Anthropic, unique, naming the output, shard and row.
    std::set<std::string> ids;
    for (const auto& l : got) {
      auto v = ParseJson(l);
      ASSERT_TRUE(v.ok());
      std::string id = v->Find("request")->Find("custom_id")->as_string();
      EXPECT_TRUE(std::regex_match(id, std::regex("[A-Za-z0-9_-]{1,64}"))) << id;
      EXPECT_TRUE(ids.insert(id).second) << id;
    }
    // Receipts: the original's format; source indices are the dataset rows.
    static const std::map<std::string, std::string> kReceipt = {
        {"openai_text", "receipts.dry-run.text"},
        {"openai_vision", "receipts_vision.dry-run.multimodal"},
        {"anthropic_vision", "receipts_anthropic.dry-run.multimodal"},
        {"anthropic_text", "receipts_anthropic_text.dry-run.text"}};
    std::string wname = kReceipt.at(name) + ".jsonl";
    std::string receipt = Glob1(d.Path("out/" + kReceipt.at(name) + ".*.jsonl"));
    ASSERT_FALSE(receipt.empty());
    auto rg = JsonLines(receipt);
    auto rw = JsonLines(kFixtures + "/expected_2972ff6/" + wname);
    ASSERT_EQ(rg.size(), rw.size()) << name << " " << wname;
    for (size_t i = 0; i < rg.size(); ++i) {
      for (const char* k : {"provider", "chunk_id", "provider_batch_id", "status", "model_params_snapshot",
                            "submitted_request_count", "has_oversized_request", "flush_reason"}) {
        EXPECT_EQ(ToJson(*rg[i].Find(k)), ToJson(*rw[i].Find(k))) << name << " receipt " << i << " " << k;
      }
      for (const auto& [id, idx] : rg[i].Find("custom_id_to_source_index")->as_object()) {
        if (std::string(name) == "anthropic_text") continue;  // hashed ids
        EXPECT_EQ("-r" + std::to_string(idx.as_int()), id.substr(id.rfind('-'))) << id;
      }
    }
  }
}

TEST(BatchApiExportTest, ExportIsRefusedInSlurmMode) {
  TempDir d;
  ASSERT_EQ(RunCommand("cp -r '" + kFixtures + "/.' '" + d.path() + "'").exit_code, 0);
  std::string cfg = ReadFile(d.Path("openai_text.yaml")) + "execution_params:\n  mode: slurm\n  account: acct\n";
  WriteFile(d.Path("cfg.yaml"), cfg);
  auto r = Mm("", "run --config cfg.yaml --export-prompts out/x.jsonl", d.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--export-prompts is not supported in slurm mode. Run it in local mode."), std::string::npos)
      << r.err;
}

// ---- lifecycle ----------------------------------------------------------------------------------------------

// n rows; every third has no image (a text row); the others point at one of three small image files.
void WriteData(const TempDir& d, int n) {
  WriteFile(d.Path("imgs/a.png"), std::string("\x89PNG\r\n\x1a\n\x01\x02", 10));
  WriteFile(d.Path("imgs/b.jpg"), std::string("\xff\xd8\xff\xe0\x00\x10JFIF", 10));
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += "{\"id\":" + std::to_string(i) + ",\"text\":\"Fact number " + std::to_string(i) + " — über\"";
    if (i % 3 != 0) s += std::string(",\"img\":\"imgs/") + (i % 2 ? "a.png" : "b.jpg") + "\"";
    s += "}\n";
  }
  WriteFile(d.Path("data.jsonl"), s);
}

std::string LifecycleConfig(const TempDir& d, const std::string& provider, int port, const std::string& extra_proc = "",
                            int shards = 3, const std::string& extra_exec = "") {
  std::string base = provider == "openai" ? "http://127.0.0.1:" + std::to_string(port) + "/v1"
                                          : "http://127.0.0.1:" + std::to_string(port);
  return "processors:\n"
         "  - type: batch_api\n"
         "    provider: " +
         provider +
         "\n"
         "    base_url: " +
         base +
         "\n"
         "    max_requests_per_chunk: 3\n"
         "    metadata_output_path: " +
         d.Path("receipts/meta.jsonl") +
         "\n"
         "    price_per_million_input_tokens: 2.5\n"
         "    price_per_million_output_tokens: 10\n" +
         extra_proc +
         "loading_params:\n"
         "  datasets:\n"
         "    - path: " +
         d.Path("data.jsonl") +
         "\n"
         "      type: JSONL\n"
         "      output_dir: " +
         d.Path("out") +
         "\n"
         "      output_format: jsonl\n"
         "      image_base_path: " +
         d.path() +
         "\n"
         "  num_shards: " +
         std::to_string(shards) +
         "\n"
         "  state_dir: " +
         d.Path("state") +
         "\n"
         "  batch_size: 2\n"
         "processing_params:\n"
         "  inputs:\n"
         "    - name: text\n"
         "      key: text\n"
         "    - name: id\n"
         "      key: id\n"
         "    - name: picture\n"
         "      key: img\n"
         "      type: image\n"
         "      optional: true\n"
         "  outputs:\n"
         "    - name: qa\n"
         "      type: batch_api\n"
         "      output_type: JSON\n"
         "      output_schema: [question, answer]\n"
         "      prompt: \"Ask about: {{ text }}\"\n"
         "    - name: summary\n"
         "      type: batch_api\n"
         "      prompt: \"Summarise: {{ text }}\"\n"
         "    - name: followup\n"
         "      type: batch_api\n"
         "      prompt: \"Answer this: {{ qa.question }}\"\n"
         "  remove_columns: true\n"
         "  output_schema:\n"
         "    id: \"{{ id }}\"\n"
         "    question: \"{{ qa.question }}\"\n"
         "    summary: \"{{ summary }}\"\n"
         "    followup: \"{{ followup }}\"\n"
         "execution_params:\n"
         "  retry: true\n"
         "  max_failed_rows: 100\n" +
         extra_exec;
}

// Rows of every shard, by id, and the errors; checks that each of the n rows is in exactly one of them.
struct Published {
  std::map<int64_t, Value> rows;
  std::map<int64_t, std::string> errors;
};
Published ReadPublished(const TempDir& d, int n, int shards) {
  Published p;
  for (int s = 0; s < shards; ++s) {
    for (const Value& r : JsonLines(d.Path("out/shard_" + std::to_string(s) + "/data.jsonl")))
      p.rows[r.Find("id")->as_int()] = r;
    for (const Value& e : JsonLines(d.Path("out/shard_" + std::to_string(s) + "/errors.jsonl")))
      p.errors[e.Find("row_index")->as_int()] = e.Find("message")->as_string();
  }
  for (int i = 0; i < n; ++i) EXPECT_EQ(p.rows.count(i) + p.errors.count(i), 1u) << "row " << i;
  return p;
}

void RunLifecycle(const std::string& provider, const std::string& env) {
  TempDir d;
  WriteData(d, 12);
  // Batches end after 4 status reads: run (1), check (2), collect (3: in progress), collect (4: done).
  Provider prov = StartProvider(d, {"--polls", "4", "--fail-every", "6", "--bad-json-every", "9"});
  WriteFile(d.Path("cfg.yaml"), LifecycleConfig(d, provider, prov.port));
  auto r = Mm(env, "run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int s = 0; s < 3; ++s) {
    auto st = ParseJson(ReadFile(d.Path("state/shard_" + std::to_string(s) + "/status.json")));
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->Find("status")->as_string(), "submitted") << s;
    EXPECT_GT(st->Find("batch")->Find("batches_total")->as_int(), 0);
  }
  auto check = Mm(env, "check --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("------------ Batch status summary ------------"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("Provider '" + provider + "' (Total: "), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("\"submitted\": 3"), std::string::npos) << check.out;
  auto c1 = Mm(env, "collect --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(c1.exit_code, 75) << c1.err;
  // Stage 1 (qa, summary) ends; stage 2 (followup reads qa) is submitted; keep collecting until done.
  int rc = 75;
  for (int i = 0; i < 8 && rc == 75; ++i) rc = Mm(env, "collect --config " + d.Path("cfg.yaml")).exit_code;
  ASSERT_EQ(rc, 0);
  Published p = ReadPublished(d, 12, 3);
  EXPECT_GE(p.rows.size(), 6u);
  EXPECT_FALSE(p.errors.empty());  // --fail-every / --bad-json-every
  bool provider_error = false, json_error = false;
  for (const auto& [i, m] : p.errors) {
    provider_error |= m.find("provider error: fake provider failure") != std::string::npos;
    json_error |= m.find("not valid JSON") != std::string::npos;
  }
  EXPECT_TRUE(provider_error);
  for (const auto& [i, row] : p.rows) {
    EXPECT_NE(row.Find("question")->as_string().find("question about Ask about: Fact number " + std::to_string(i)),
              std::string::npos)
        << ToJson(row);
    EXPECT_NE(row.Find("followup")->as_string().find("Answer this: question about"), std::string::npos) << ToJson(row);
    EXPECT_EQ(row.Find("text"), nullptr);  // remove_columns
  }
  (void)json_error;
  // Nothing was submitted twice; usage and cost were recorded.
  for (const auto& [id, n] : CreatedIds(prov.log)) EXPECT_EQ(n, 1) << id;
  auto st = ParseJson(ReadFile(d.Path("state/shard_0/status.json")));
  EXPECT_EQ(st->Find("status")->as_string(), "success");
  EXPECT_GT(st->Find("stats")->Find("input_tokens")->as_int(), 0);
  EXPECT_GT(st->Find("stats")->Find("cost")->as_double(), 0);
  EXPECT_FALSE(ReadLines(d.Path("out/shard_0/usage.jsonl")).empty());
  // Receipts in the original's format, one file per modality and process.
  auto receipts =
      RunCommand("cat " + d.Path("receipts/meta.text.*.jsonl") + " " + d.Path("receipts/meta.multimodal.*.jsonl"));
  EXPECT_EQ(receipts.exit_code, 0);
  EXPECT_NE(receipts.out.find("\"custom_id_to_source_index\": {"), std::string::npos);
  EXPECT_EQ(receipts.out.find("test-key"), std::string::npos);
  // A second collect keeps the published shards.
  EXPECT_EQ(Mm(env, "collect --config " + d.Path("cfg.yaml")).exit_code, 0);
  // The original's merge format, from the receipts.
  auto m = Mm(env, "merge --config " + d.Path("cfg.yaml") + " --output-path " + d.Path("merged/results.jsonl"));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  auto merged = JsonLines(d.Path("merged/results.jsonl"));
  EXPECT_EQ(merged.size(), CreatedIds(prov.log).size());
  int64_t last = -1;
  size_t conversations = 0, captions = 0, errors = 0;
  for (const Value& r : merged) {
    int64_t si = r.Find("source_index")->as_int();
    EXPECT_GE(si, last);
    last = si;
    EXPECT_NE(r.Find("custom_id")->as_string().find("-r" + std::to_string(si)), std::string::npos);
    conversations += r.Find("conversations") != nullptr;
    captions += r.Find("caption") != nullptr;
    errors += r.Find("error_message") != nullptr;
  }
  EXPECT_GT(conversations, 0u);
  EXPECT_GT(captions, 0u);
  EXPECT_GT(errors, 0u);
  EXPECT_NE(m.err.find("Merged " + std::to_string(merged.size()) + " rows and saved to"), std::string::npos);
  // --resubmit-failed sends only the failed requests again, as new chunks.
  auto before = CreatedIds(prov.log);
  auto rs = Mm(env, "collect --resubmit-failed --config " + d.Path("cfg.yaml"));
  EXPECT_TRUE(rs.exit_code == 0 || rs.exit_code == 75) << rs.err;
  auto after = CreatedIds(prov.log);
  size_t again = 0;
  for (const auto& [id, n] : after) {
    EXPECT_LE(n, 2) << id;
    if (n == 2) ++again;
  }
  EXPECT_GT(again, 0u);
  EXPECT_LE(again, p.errors.size() * 3);
}

TEST(BatchApiLifecycleTest, OpenAiSubmitCheckCollectOverThreeShards) {
  RunLifecycle("openai", "OPENAI_API_KEY=test-key");
}

TEST(BatchApiLifecycleTest, AnthropicSubmitCheckCollectOverThreeShards) {
  RunLifecycle("anthropic", "ANTHROPIC_API_KEY=test-key");
}

TEST(BatchApiLifecycleTest, WaitPollsUntilDoneAndSurvivesInjectedFaults) {
  TempDir d;
  WriteData(d, 9);
  Provider prov = StartProvider(d, {"--polls", "3", "--fault-rate", "0.3"});
  WriteFile(d.Path("cfg.yaml"),
            LifecycleConfig(d, "openai", prov.port, "    wait: true\n    poll_interval_seconds: 1\n", 1, ""));
  auto r = Mm("OPENAI_API_KEY=test-key", "run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Published p = ReadPublished(d, 9, 1);
  EXPECT_EQ(p.rows.size(), 9u);
  auto log = ReadFile(prov.log);
  EXPECT_NE(log.find("\"code\": 500"), std::string::npos);
  EXPECT_NE(log.find("\"code\": 429"), std::string::npos);
  for (const auto& [id, n] : CreatedIds(prov.log)) EXPECT_EQ(n, 1) << id;
}

TEST(BatchApiLifecycleTest, KillDuringSubmissionAndCollectionLosesNothingAndSubmitsNothingTwice) {
  TempDir d;
  WriteData(d, 30);
  Provider prov = StartProvider(d, {"--polls", "2", "--create-delay", "0.4"});
  std::string cfg = LifecycleConfig(d, "openai", prov.port, "", 1);
  WriteFile(d.Path("cfg.yaml"), cfg);
  // Kill -9 at several moments of the submission (30 rows × 3 outputs, 3 requests a chunk, 0.4 s a create).
  for (int ms : {700, 1500, 2600}) {
    auto run = Start({MMIRAGE_BINARY, "run", "--config", d.Path("cfg.yaml"), "--shard-id", "0"}, d.Path("run.log"),
                     {{"OPENAI_API_KEY", "test-key"}});
    ASSERT_NE(run, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    (void)run->process->Signal(SIGKILL);
    run->process->Wait();
    run->process.reset();
  }
  int rc = 75;
  for (int i = 0; i < 20 && rc != 0; ++i) {
    auto r = Mm("OPENAI_API_KEY=test-key", "run --shard-id 0 --config " + d.Path("cfg.yaml"));
    rc = r.exit_code;
    ASSERT_TRUE(rc == 0 || rc == 75) << r.err;
    if (i == 2) {  // and once during a collection
      auto col = Start({MMIRAGE_BINARY, "collect", "--config", d.Path("cfg.yaml")}, d.Path("collect.log"),
                       {{"OPENAI_API_KEY", "test-key"}});
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      (void)col->process->Signal(SIGKILL);
      col->process->Wait();
      col->process.reset();
    }
    if (rc == 0 && !Exists(d.Path("out/shard_0/data.jsonl"))) rc = 75;  // submitted now, not yet collected
  }
  ASSERT_EQ(rc, 0) << ReadFile(d.Path("run.log"));
  Published p = ReadPublished(d, 30, 1);
  EXPECT_EQ(p.rows.size(), 30u);
  auto created = CreatedIds(prov.log);
  EXPECT_EQ(created.size(), 90u);
  for (const auto& [id, n] : created) EXPECT_EQ(n, 1) << id;
}

TEST(BatchApiLifecycleTest, InputDataChangedBetweenSubmitAndCollectIsRefusedNamingTheFileUntilRestored) {
  TempDir d;
  WriteData(d, 12);
  Provider prov = StartProvider(d, {"--polls", "2"});
  WriteFile(d.Path("cfg.yaml"), LifecycleConfig(d, "openai", prov.port, "", 1));
  const std::string env = "OPENAI_API_KEY=test-key";
  auto r = Mm(env, "run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto st = ParseJson(ReadFile(d.Path("state/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->Find("status")->as_string(), "submitted");  // not waited for
  ASSERT_EQ(RunCommand("cp -p " + d.Path("data.jsonl") + " " + d.Path("data.orig")).exit_code, 0);
  // The answers would no longer belong to the rows: the collect refuses, names the file, publishes nothing.
  WriteFile(d.Path("data.jsonl"), ReadFile(d.Path("data.orig")) + "{\"id\":12,\"text\":\"a new row\"}\n");
  auto c = Mm(env, "collect --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(c.exit_code, 1) << c.err;
  EXPECT_NE(c.err.find("the config or its input data changed since shard 0's batches were submitted"),
            std::string::npos)
      << c.err;
  EXPECT_NE(c.err.find(d.Path("data.jsonl")), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("restore them (and collect)"), std::string::npos) << c.err;
  EXPECT_FALSE(Exists(d.Path("out/shard_0/data.jsonl")));
  // Restored (content and mtime): collected as if nothing happened, nothing submitted twice.
  ASSERT_EQ(RunCommand("cp -p " + d.Path("data.orig") + " " + d.Path("data.jsonl")).exit_code, 0);
  int rc = 75;
  for (int i = 0; i < 10 && rc == 75; ++i) rc = Mm(env, "collect --config " + d.Path("cfg.yaml")).exit_code;
  ASSERT_EQ(rc, 0);
  Published p = ReadPublished(d, 12, 1);
  EXPECT_EQ(p.rows.size() + p.errors.size(), 12u);
  for (const auto& [id, n] : CreatedIds(prov.log)) EXPECT_EQ(n, 1) << id;
  // The published shard records the inputs it was made from, as a local run's does.
  auto rec = ParseJson(ReadFile(d.Path("out/shard_0/_mmirage.json")));
  ASSERT_TRUE(rec.ok());
  ASSERT_NE(rec->Find("identity"), nullptr);
  EXPECT_NE(ToJson(*rec->Find("identity")).find("data.jsonl"), std::string::npos);
}

// ---- failures -----------------------------------------------------------------------------------------------

TEST(BatchApiFailureTest, AMissingKeyFailsBeforeAnyRowIsRead) {
  TempDir d;
  WriteData(d, 3);
  Provider prov = StartProvider(d, {});
  WriteFile(d.Path("cfg.yaml"), LifecycleConfig(d, "openai", prov.port, "", 1));
  auto r = Mm("env -u OPENAI_API_KEY", "run --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Missing environment variable(s) for provider 'openai': ['OPENAI_API_KEY']"), std::string::npos)
      << r.err;
  EXPECT_TRUE(ReadFile(prov.log).empty());
}

TEST(BatchApiFailureTest, ARejectedKeyFailsTheShardWithoutShowingTheKey) {
  TempDir d;
  WriteData(d, 3);
  Provider prov = StartProvider(d, {});
  WriteFile(d.Path("cfg.yaml"), LifecycleConfig(d, "anthropic", prov.port, "", 1));
  auto r = Mm("ANTHROPIC_API_KEY=sk-wrong-secret", "run --shard-id 0 --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("authentication failed (HTTP 401"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("sk-wrong-secret"), std::string::npos);
  std::string status = ReadFile(d.Path("state/shard_0/status.json"));
  EXPECT_NE(status.find("\"failed\""), std::string::npos) << status;
  EXPECT_EQ(status.find("sk-wrong-secret"), std::string::npos);
}

TEST(BatchApiFailureTest, AnOversizedRequestWithRejectFailsTheShard) {
  TempDir d;
  WriteData(d, 3);
  Provider prov = StartProvider(d, {});
  WriteFile(d.Path("cfg.yaml"), LifecycleConfig(d, "openai", prov.port,
                                                "    max_chunk_bytes: 100\n    oversized_request_policy: reject\n", 1));
  auto r = Mm("OPENAI_API_KEY=test-key", "run --shard-id 0 --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(std::regex_search(r.err, std::regex("Encountered oversized request: [0-9]+ bytes exceeds "
                                                  "max_chunk_bytes=100")))
      << r.err;
  EXPECT_TRUE(CreatedIds(prov.log).empty());
}

}  // namespace
}  // namespace mmirage::testing

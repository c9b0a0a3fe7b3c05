#include "pipeline/row_transform.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "config/config.h"
#include "data/json.h"
#include "pipeline/row_batches.h"
#include "pipeline/shard_writer.h"
#include "support/counting_env.h"
#include "support/test_util.h"

namespace mmirage::pipeline {
namespace {

config::Config MakeConfig(const std::string& processing) {
  std::string y =
      "processors: []\nloading_params:\n  datasets: [{type: JSONL, path: d.jsonl, output_dir: o}]\n"
      "processing_params:\n" +
      processing;
  config::LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(y, "t.yaml", o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

Value Json(const std::string& s) { return *ParseJson(s); }

TEST(RowTransformTest, PlainVariablesKeepEveryJsonType) {
  auto c = MakeConfig(
      "  inputs: [{name: n, key: n}, {name: b, key: b}, {name: l, key: l}, {name: m, key: m}, "
      "{name: z, key: z, optional: true}]\n"
      "  outputs: []\n  remove_columns: true\n"
      "  output_schema: {n: '{{ n }}', b: '{{ b }}', l: '{{l}}', m: '{{ m }}', z: '{{ z }}', s: '{{ n }}!',"
      " missing: '{{ nope }}', const: 7}\n");
  RowTransform t(&c, Env::Default(), "");
  Value row = Json(R"({"n": 2.5, "b": false, "l": [1, "a"], "m": {"k": null}, "z": null})");
  auto vars = t.Extract(row);
  ASSERT_TRUE(vars.ok) << vars.error.message;
  auto out = t.RenderOutput(row, vars.value);
  ASSERT_TRUE(out.ok) << out.error.message;
  EXPECT_EQ(ToJson(out.value),
            R"({"n":2.5,"b":false,"l":[1,"a"],"m":{"k":null},"z":null,"s":"2.5!","missing":"","const":7})");
}

TEST(RowTransformTest, DirectJsonRenderingEqualsTheValuePath) {
  for (const char* remove : {"true", "false"}) {
    auto c = MakeConfig(
        std::string("  inputs: [{name: n, key: n}, {name: l, key: l}]\n  outputs: []\n") +
        "  remove_columns: " + remove + "\n" +
        "  output_schema: {n: '{{ n }}', s: 'x{{ n }}', nested: {l: '{{ l }}', c: [1, '{{ l | length }}']}}\n");
    RowTransform t(&c, Env::Default(), "");
    Value row = Json(R"({"a": "\"q\"", "n": 2.5, "l": [1, "é"]})");
    auto vars = t.Extract(row);
    ASSERT_TRUE(vars.ok);
    auto v = t.RenderOutput(row, vars.value);
    ASSERT_TRUE(v.ok);
    std::string direct = "prefix";
    ASSERT_TRUE(t.RenderOutputJson(row, vars.value, &direct).ok);
    EXPECT_EQ(direct, "prefix" + ToJson(v.value)) << remove;
  }
  auto bad = MakeConfig("  inputs: []\n  outputs: []\n  output_schema: {x: '{{ missing.attr }}'}\n");
  RowTransform t(&bad, Env::Default(), "");
  std::string out = "keep";
  EXPECT_FALSE(t.RenderOutputJson(Json("{}"), Json("{}"), &out).ok);
  EXPECT_EQ(out, "keep");
}

// A JSONL row whose columns are dropped is read straight from its text (ExtractFromJson): every row, good or bad,
// must give what parsing it whole and extracting gives — variables, output line and error.
TEST(RowTransformTest, ExtractFromJsonEqualsParsingTheWholeRow) {
  auto c = MakeConfig(
      "  inputs: [{name: q, key: q}, {name: t, key: 'a[0].t'}, {name: last, key: 'a[-1].t', optional: true},"
      " {name: lang, key: meta.lang, default: en}, {name: tags, key: meta.tags, optional: true},"
      " {name: at, key: '@', optional: true}, {name: sp, key: '\"sp ace\"', optional: true}]\n"
      "  outputs: []\n  remove_columns: true\n"
      "  output_schema: {q: '{{ q }}', n: '{{ q | length }}-{{ lang }}', t: '{{ t }}', last: '{{ last }}',"
      " tags: '{{ tags }}', sp: '{{ sp }}', at: '{{ at | length }}'}\n");
  RowTransform t(&c, Env::Default(), "");
  ASSERT_TRUE(t.ExtractsFromJson());
  const std::string rows[] = {
      R"({"q": "héllo", "a": [{"t": 1}, {"t": [2, {"x": null}]}], "meta": {"lang": "fr", "tags": ["g", 1.5]}})",
      R"({"q": "dup", "q": "last wins", "a": [{"t": "x", "t": "y"}], "meta": {"lang": null}, "sp ace": 3})",
      R"({"q": "no index", "a": {"0": {"t": 1}}, "meta": []})",  // a is not an array: a[0].t is missing
      R"({"q": "short", "a": [], "meta": {"tags": null}})",      // a[0] out of range
      R"({"a": [{"t": 1}]})",                                    // q missing: an extract error
      R"(["not", "an", "object"])",
      R"("text")",
      "3",
      "null",
      "{bad json",
      R"({"q": "ÿ"})",
      "",
  };
  for (const std::string& text : rows) {
    ProcessedBatch whole, fast;
    auto parsed = ParseJson(text);
    if (!parsed.ok()) {
      whole.failures.push_back({0, "f:1", RowError{Stage::kRead, parsed.status().message()}});
    } else {
      ProcessRowValue(t, 0, "f", 1, *parsed, &whole);
    }
    ProcessRow(t, 0, "f", 1, text, &fast);
    EXPECT_EQ(fast.lines, whole.lines) << text;
    EXPECT_EQ(fast.rows, whole.rows) << text;
    ASSERT_EQ(fast.failures.size(), whole.failures.size()) << text;
    for (size_t i = 0; i < fast.failures.size(); ++i) {
      EXPECT_EQ(fast.failures[i].error.stage, whole.failures[i].error.stage) << text;
      EXPECT_EQ(fast.failures[i].error.message, whole.failures[i].error.message) << text;
      EXPECT_EQ(fast.failures[i].source, whole.failures[i].source) << text;
    }
  }
  // Not read from the text: a key that is more than a path, an image input, or columns kept.
  for (const char* p : {"  inputs: [{name: q, key: 'length(q)'}]\n  remove_columns: true\n",
                        "  inputs: [{name: q, key: q, type: image}]\n  remove_columns: true\n",
                        "  inputs: [{name: q, key: q}]\n  remove_columns: false\n"}) {
    auto other = MakeConfig(std::string(p) + "  outputs: []\n  output_schema: {q: '{{ q }}'}\n");
    EXPECT_FALSE(RowTransform(&other, Env::Default(), "").ExtractsFromJson()) << p;
  }
}

TEST(RowTransformTest, MissingRequiredInputIsAnExtractError) {
  auto c = MakeConfig("  inputs: [{name: q, key: a.b}]\n  outputs: []\n  output_schema: {q: '{{ q }}'}\n");
  RowTransform t(&c, Env::Default(), "");
  auto vars = t.Extract(Json(R"({"a": {}})"));
  ASSERT_FALSE(vars.ok);
  EXPECT_EQ(vars.error.stage, Stage::kExtract);
  EXPECT_EQ(vars.error.message, "Input variable 'q' with key 'a.b' not found in the sample.");
}

TEST(RowTransformTest, JmespathTypeErrorIsAnExtractError) {
  auto c = MakeConfig("  inputs: [{name: q, key: 'abs(a)'}]\n  outputs: []\n  output_schema: {q: '{{ q }}'}\n");
  RowTransform t(&c, Env::Default(), "");
  auto vars = t.Extract(Json(R"({"a": "text"})"));
  ASSERT_FALSE(vars.ok);
  EXPECT_NE(vars.error.message.find("invalid-type"), std::string::npos) << vars.error.message;
}

TEST(RowTransformTest, ImageInputsResolveAgainstTheBasePath) {
  testing::TempDir d;
  testing::WriteFile(d.Path("imgs/cat.jpg"), "jpeg");
  auto c = MakeConfig(
      "  inputs: [{name: img, key: image, type: image}]\n  outputs: []\n"
      "  output_schema: {img: '{{ img }}'}\n");
  RowTransform t(&c, Env::Default(), d.Path("imgs"));
  auto ok = t.Extract(Json(R"({"image": "cat.jpg"})"));
  ASSERT_TRUE(ok.ok) << ok.error.message;
  EXPECT_EQ(ok.value.Find("img")->as_string(), d.Path("imgs/cat.jpg"));
  auto url = t.Extract(Json(R"({"image": "https://x/y.png"})"));
  ASSERT_TRUE(url.ok);
  auto missing = t.Extract(Json(R"({"image": "dog.jpg"})"));
  ASSERT_FALSE(missing.ok);
  EXPECT_NE(missing.error.message.find("does not exist (base='" + d.Path("imgs") + "', rel='dog.jpg')"),
            std::string::npos)
      << missing.error.message;
}

TEST(RowBatchesTest, OutputOrderIsInputOrderWhateverTheThreads) {
  testing::TempDir d;
  std::string text;
  for (int i = 0; i < 5000; ++i) text += i % 97 == 0 ? "oops\n" : "{\"i\":" + std::to_string(i) + "}\n";
  testing::WriteFile(d.Path("d.jsonl"), text);
  auto c = MakeConfig(
      "  inputs: [{name: i, key: i}]\n  outputs: []\n  remove_columns: true\n"
      "  output_schema: {i: '{{ i }}'}\n");
  RowTransform t(&c, Env::Default(), "");
  DatasetPart part{"", {d.Path("d.jsonl")}};
  RowStream stream(Env::Default(), part, RowRange{0, UINT64_MAX});
  std::string all;
  std::vector<uint64_t> failed;
  Status s = RunRowBatches(&stream, t, RowBatchOptions{4, 7, 3}, [&](ProcessedBatch& b) {
    all += b.lines;
    for (const auto& f : b.failures) failed.push_back(f.row_index);
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.message();
  std::string expected;
  std::vector<uint64_t> expected_failed;
  for (int i = 0; i < 5000; ++i) {
    if (i % 97 == 0) expected_failed.push_back(static_cast<uint64_t>(i));
    else expected += "{\"i\":" + std::to_string(i) + "}\n";
  }
  EXPECT_EQ(all, expected);
  EXPECT_EQ(failed, expected_failed);
}

TEST(RowBatchesTest, ASinkErrorStopsThePipeline) {
  testing::TempDir d;
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "{\"i\":1}\n";
  testing::WriteFile(d.Path("d.jsonl"), text);
  auto c = MakeConfig("  inputs: [{name: i, key: i}]\n  outputs: []\n  output_schema: {i: '{{ i }}'}\n");
  RowTransform t(&c, Env::Default(), "");
  RowStream stream(Env::Default(), DatasetPart{"", {d.Path("d.jsonl")}}, RowRange{0, UINT64_MAX});
  int calls = 0;
  Status s = RunRowBatches(&stream, t, RowBatchOptions{2, 10, 2},
                           [&](ProcessedBatch&) { return ++calls == 3 ? Status::IOError("disk full") : Status::OK(); });
  EXPECT_TRUE(s.IsIOError());
  EXPECT_EQ(calls, 3);
}

// An Env whose FileExists throws: a fault of our own code (or of the machine), not of the row being processed.
class ThrowingEnv : public testing::CountingEnv {
 public:
  bool FileExists(const std::string&) override { throw std::runtime_error("boom"); }
};

TEST(RowBatchesTest, AnExceptionFailsTheRunAsInternalInsteadOfBecomingARowError) {
  testing::TempDir d;
  testing::WriteFile(d.Path("d.jsonl"), "{\"image\":\"a.png\"}\n{\"image\":\"b.png\"}\n");
  auto c = MakeConfig(
      "  inputs: [{name: img, key: image, type: image}]\n  outputs: []\n"
      "  output_schema: {img: '{{ img }}'}\n");
  ThrowingEnv env;
  RowTransform t(&c, &env, d.path());
  RowStream stream(Env::Default(), DatasetPart{"", {d.Path("d.jsonl")}}, RowRange{0, UINT64_MAX});
  std::vector<ProcessedBatch::Failure> failures;
  Status s = RunRowBatches(&stream, t, RowBatchOptions{2, 1, 2}, [&](ProcessedBatch& b) {
    for (auto& f : b.failures) failures.push_back(f);
    return Status::OK();
  });
  EXPECT_EQ(s.code(), Status::Code::kInternal) << s.ToString();
  EXPECT_NE(s.message().find(d.Path("d.jsonl") + ":"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("boom"), std::string::npos) << s.message();
  EXPECT_TRUE(failures.empty()) << failures[0].error.message;
}

ShardWriterOptions Opts(const std::string& out, int64_t shard, std::vector<std::string> splits, uint64_t fp = 7) {
  return ShardWriterOptions{out, shard, std::move(splits), fp};
}

TEST(ShardWriterTest, FinishReplacesThePreviousShardAtomically) {
  testing::TempDir d;
  Env* env = Env::Default();
  testing::WriteFile(d.Path("out/shard_0/data.jsonl"), "{\"old\":1}\n");
  testing::WriteFile(d.Path("out/shard_0/stale.txt"), "x");
  auto w = ShardWriter::Open(env, Opts(d.Path("out"), 0, {""}));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->AddSerialized(0, "{\"new\":1}\n", 1).ok());
  (*w)->Advance(0, 1);
  // Until Finish, the old shard is what readers see.
  EXPECT_EQ(testing::ReadFile(d.Path("out/shard_0/data.jsonl")), "{\"old\":1}\n");
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ(testing::ReadFile(d.Path("out/shard_0/data.jsonl")), "{\"new\":1}\n");
  EXPECT_FALSE(testing::Exists(d.Path("out/shard_0/stale.txt")));
  EXPECT_EQ(testing::RunCommand("ls '" + d.Path("out") + "'").out, "shard_0\n");
  auto rec = ReadCompletedShard(env, d.Path("out"), 0);
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->fingerprint, 7u);
  EXPECT_EQ(rec->rows_written, 1);
}

TEST(ShardWriterTest, ResumeTruncatesToTheLastCommit) {
  testing::TempDir d;
  Env* env = Env::Default();
  {
    auto w = ShardWriter::Open(env, Opts(d.Path("out"), 2, {"train", "test"}));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->AddSerialized(0, "{\"a\":0}\n{\"a\":1}\n", 2).ok());
    ASSERT_TRUE((*w)->AddError(0, 2, "f:3", RowError{Stage::kRead, "bad"}).ok());
    (*w)->Advance(0, 3);
    ASSERT_TRUE((*w)->Commit().ok());
    ASSERT_TRUE((*w)->AddSerialized(0, "{\"a\":3}\n", 1).ok());  // never committed: lost in the "crash"
    ASSERT_TRUE((*w)->AddError(0, 4, "f:5", RowError{Stage::kRead, "lost"}).ok());
    (*w)->Advance(0, 2);
    // Crash: the writer goes away without Finish (its unsynced bytes may or may not be on disk).
  }
  auto w = ShardWriter::Open(env, Opts(d.Path("out"), 2, {"train", "test"}));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE((*w)->resumed());
  EXPECT_EQ((*w)->resume_rows(0), 3u);
  EXPECT_EQ((*w)->resume_rows(1), 0u);
  EXPECT_EQ((*w)->rows_written(), 2);
  EXPECT_EQ((*w)->rows_failed(), 1);
  ASSERT_TRUE((*w)->AddSerialized(0, "{\"a\":3}\n", 1).ok());
  ASSERT_TRUE((*w)->AddSerialized(1, "{\"b\":0}\n", 1).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ(testing::ReadFile(d.Path("out/shard_2/train/data.jsonl")), "{\"a\":0}\n{\"a\":1}\n{\"a\":3}\n");
  EXPECT_EQ(testing::ReadFile(d.Path("out/shard_2/test/data.jsonl")), "{\"b\":0}\n");
  EXPECT_EQ(testing::ReadLines(d.Path("out/shard_2/errors.jsonl")).size(), 1u);
}

TEST(ShardWriterTest, AJournalOfAnotherConfigIsNotResumed) {
  testing::TempDir d;
  {
    auto w = ShardWriter::Open(Env::Default(), Opts(d.Path("out"), 0, {""}, 1));
    ASSERT_TRUE((*w)->AddSerialized(0, "{}\n", 1).ok());
    (*w)->Advance(0, 1);
    ASSERT_TRUE((*w)->Commit().ok());
    (*w)->Abandon();
  }
  auto w = ShardWriter::Open(Env::Default(), Opts(d.Path("out"), 0, {""}, 2));
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE((*w)->resumed());
  EXPECT_EQ((*w)->resume_rows(0), 0u);
}

TEST(ShardWriterTest, TwoWritersOfOneShardExcludeEachOther) {
  testing::TempDir d;
  auto a = ShardWriter::Open(Env::Default(), Opts(d.Path("out"), 0, {""}));
  ASSERT_TRUE(a.ok());
  auto b = ShardWriter::Open(Env::Default(), Opts(d.Path("out"), 0, {""}));
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().IsUnavailable()) << b.status().ToString();
  (*a)->Discard();
  EXPECT_EQ(testing::RunCommand("ls '" + d.Path("out") + "'").out, "");
}

TEST(RowTransformTest, ImageValuesResolveAsPathsDataUrisBytesAndStructs) {
  mmirage::testing::TempDir dir;
  mmirage::testing::WriteFile(dir.Path("imgs/cat.jpg"), "\xFF\xD8\xFF");
  auto c = MakeConfig(
      "  inputs: [{name: img, key: img, type: image}]\n  outputs: []\n"
      "  remove_columns: true\n  output_schema: {img: '{{ img }}'}\n");
  RowTransform t(&c, Env::Default(), dir.Path("imgs"));
  auto ok = [&](const std::string& row) {
    auto r = t.Extract(Json(row));
    EXPECT_TRUE(r.ok) << row << ": " << r.error.message;
    return r.ok ? ToJson(*r.value.Find("img")) : std::string();
  };
  EXPECT_EQ(ok(R"({"img": "cat.jpg"})"), "\"" + dir.Path("imgs/cat.jpg") + "\"");
  EXPECT_EQ(ok(R"({"img": "data:image/jpeg;base64,/9j/"})"), R"("data:image/jpeg;base64,/9j/")");
  EXPECT_EQ(ok(R"({"img": "https://h/x.png"})"), R"("https://h/x.png")");
  EXPECT_EQ(ok(R"({"img": {"bytes": "/9j/", "path": "cat.jpg"}})"), R"({"bytes":"/9j/","path":"cat.jpg"})");
  EXPECT_EQ(ok(R"({"img": {"bytes": null, "path": "cat.jpg"}})"),
            R"({"bytes":null,"path":")" + dir.Path("imgs/cat.jpg") + "\"}");
  auto null_struct = t.Extract(Json(R"({"img": {"bytes": null, "path": null}})"));
  ASSERT_TRUE(null_struct.ok) << null_struct.error.message;
  EXPECT_TRUE(null_struct.value.Find("img")->is_null());
  for (const char* bad : {R"({"img": "missing.jpg"})", R"({"img": "data:image/png;base64,%%%"})",
                          R"({"img": {"bytes": null, "path": "gone.png"}})"}) {
    auto r = t.Extract(Json(bad));
    EXPECT_FALSE(r.ok) << bad;
    EXPECT_EQ(r.error.stage, Stage::kExtract);
    EXPECT_NE(r.error.message.find("input 'img'"), std::string::npos) << r.error.message;
  }
}

TEST(RowTransformTest, PromptsNameImagesThroughPlaceholders) {
  config::LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(
      "processors: [{type: llm, server_args: {model_path: m.gguf}}]\n"
      "loading_params:\n  datasets: [{type: JSONL, path: d.jsonl, output_dir: o}]\n"
      "processing_params:\n  inputs: [{name: img, key: img, type: image}, {name: q, key: q}]\n"
      "  outputs: [{name: a, type: llm, prompt: 'Look: {{ img }} {{ q }}'}]\n"
      "  output_schema: {a: '{{ a }}'}\n",
      "t.yaml", o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  RowTransform t(&*c, Env::Default(), "");
  auto vars = t.Extract(Json(R"({"img": "https://h/x.png", "q": "why?"})"));
  ASSERT_TRUE(vars.ok);
  auto p = t.RenderPrompt(0, vars.value);
  ASSERT_TRUE(p.ok) << p.error.message;
  EXPECT_EQ(p.value, "Look: <__mmirage_image:img__> why?");
}

}  // namespace
}  // namespace mmirage::pipeline

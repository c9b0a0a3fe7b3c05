#include "data/hf_writer.h"

#include <gtest/gtest.h>

#include "data/arrow_reader.h"
#include "data/json.h"
#include "data/output_reader.h"
#include "data/tagged_json.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

using testing::TempDir;

class VectorSource : public RowSource {
 public:
  explicit VectorSource(std::vector<Value> rows) : rows_(std::move(rows)) {}
  Status Open() override {
    pos_ = 0;
    return Status::OK();
  }
  Result<bool> Next(Value* row) override {
    if (pos_ >= rows_.size()) return false;
    *row = rows_[pos_++];
    return true;
  }

 private:
  std::vector<Value> rows_;
  size_t pos_ = 0;
};

Value J(const std::string& text) {
  auto v = ParseJson(text);
  EXPECT_TRUE(v.ok()) << text;
  return v.ok() ? *v : Value();
}

std::string Features(std::vector<Value> rows) {
  VectorSource src(std::move(rows));
  auto f = InferFeatures(&src);
  return f.ok() ? ToJson(*f) : "error: " + f.status().message();
}

TEST(TaggedJsonTest, BytesSurviveTheJournalFormAnywhereInARow) {
  Value row = J(R"({"a":"text","img":{"bytes":null,"path":"p"},"l":[1,null]})");
  row.Set("raw", Value::Bytes(std::string("\x00\xff\x10z", 4)));
  Value img = Value::EmptyObject();
  img.Set("bytes", Value::Bytes("\x89PNG"));
  row.mutable_object()[1].second = img;
  std::string line;
  AppendJsonTagged(row, &line);
  EXPECT_NE(line.find("\"\\u0000b64:iVBORw"), std::string::npos) << line;  // tagged, not bare base64
  auto back = ParseJson(line);
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(UntagBytes(&*back));
  EXPECT_EQ(*back, row);
  EXPECT_TRUE(back->Find("raw")->is_bytes());
  EXPECT_TRUE(back->Find("img")->Find("bytes")->is_bytes());
  Value plain("b64:AAAA");  // no NUL: plain text stays text
  ASSERT_TRUE(UntagBytes(&plain));
  EXPECT_TRUE(plain.is_string());
  Value bad(std::string("\0b64:A", 6));
  EXPECT_FALSE(UntagBytes(&bad));
}

TEST(HfFeaturesTest, InferenceFollowsHfRules) {
  // int and float mix; null fits anything; an all-null column is Value("null").
  EXPECT_EQ(Features({J(R"({"x":1,"n":null})"), J(R"({"x":2.5,"n":null})"), J(R"({"x":null})")}),
            R"({"x":{"dtype":"float64","_type":"Value"},"n":{"dtype":"null","_type":"Value"}})");
  // Structs merge field by field; new keys are appended; a list of structs is [{…}], of strings a Sequence.
  EXPECT_EQ(Features({J(R"({"s":{"a":1},"c":[{"r":"u"}],"t":["x"]})"), J(R"({"s":{"b":"z"},"c":[],"t":[]})")}),
            R"({"s":{"a":{"dtype":"int64","_type":"Value"},"b":{"dtype":"string","_type":"Value"}},)"
            R"("c":[{"r":{"dtype":"string","_type":"Value"}}],)"
            R"("t":{"feature":{"dtype":"string","_type":"Value"},"_type":"Sequence"}})");
  // {"bytes", "path"} structs are Images, also in lists.
  Value img = Value::EmptyObject();
  img.Set("bytes", Value::Bytes("x"));
  img.Set("path", Value());
  Value row = Value::EmptyObject();
  row.Set("img", img);
  row.Set("imgs", Value(Value::Array{img}));
  EXPECT_EQ(Features({row}), R"({"img":{"_type":"Image"},"imgs":{"feature":{"_type":"Image"},"_type":"Sequence"}})");
}

TEST(HfFeaturesTest, ConflictingTypesNameTheColumnAndBothRows) {
  EXPECT_EQ(Features({J(R"({"a":{"b":[1]}})"), J(R"({"a":null})"), J(R"({"a":{"b":[{"c":1}]}})")}),
            "error: column 'a.b[]' has values of two types: row 0 has an int, row 2 has an object");
  EXPECT_EQ(Features({J(R"({"v":"s"})"), J(R"({"v":[1]})")}),
            "error: column 'v' has values of two types: row 0 has a string, row 1 has a list");
}

TEST(HfWriterTest, HfAndParquetOutputsReadBackAsTheSameValues) {
  TempDir d;
  Env* env = Env::Default();
  std::vector<Value> rows;
  for (int i = 0; i < 2500; ++i) {  // three record batches
    Value r = J(R"({"id":0,"s":"é","l":[1,2],"o":{"k":null}})");
    r.Set("id", static_cast<int64_t>(i));
    r.Set("b", Value::Bytes(std::string(1, static_cast<char>(i % 256))));
    if (i % 7 == 0) r.Set("s", Value());
    rows.push_back(r);
  }
  for (OutputFormat f : {OutputFormat::kHf, OutputFormat::kParquet}) {
    std::string dir = d.Path(f == OutputFormat::kHf ? "hf" : "pq");
    ASSERT_TRUE(env->CreateDirs(dir).ok());
    VectorSource src(rows);
    auto n = WriteArrowOutput(env, &src, dir, f);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, 2500);
    auto parts = ResolveOutputParts(env, dir);
    ASSERT_TRUE(parts.ok()) << parts.status().ToString();
    ASSERT_EQ(parts->size(), 1u);
    auto count = CountRows(env, (*parts)[0]);
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(*count, 2500u);
    // A range crossing batch boundaries.
    RowStream stream(env, (*parts)[0], RowRange{999, 2001});
    RawRow raw;
    uint64_t expect = 999;
    while (true) {
      auto more = stream.Next(&raw);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      if (!*more) break;
      ASSERT_NE(raw.value, nullptr);
      EXPECT_EQ(raw.index, expect);
      EXPECT_EQ(*raw.value, rows[expect]) << ToJson(*raw.value);
      ++expect;
    }
    EXPECT_EQ(expect, 2001u);
  }
  auto features = ReadHfFeatures(env, d.Path("hf"));
  ASSERT_TRUE(features.ok());
  EXPECT_EQ(ToJson(*features->Find("b")), R"({"dtype":"binary","_type":"Value"})");
}

}  // namespace
}  // namespace mmirage

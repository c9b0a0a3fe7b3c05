#include "data/dataset.h"

#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include "support/test_util.h"

namespace mmirage {
namespace {

using testing::TempDir;
using testing::WriteFile;

std::string Gzip(const std::string& s) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  std::string out(compressBound(s.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  zs.avail_in = static_cast<uInt>(s.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string Zstd(const std::string& s) {
  std::string out(ZSTD_compressBound(s.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), s.data(), s.size(), 3));
  return out;
}

std::vector<std::string> ReadAll(Env* env, const DatasetPart& part, RowRange range) {
  RowStream stream(env, part, range);
  RawRow row;
  std::vector<std::string> out;
  while (true) {
    auto more = stream.Next(&row);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(std::to_string(row.index) + "@" + std::to_string(row.line) + ":" + std::string(row.text));
  }
  return out;
}

TEST(ShardRangeTest, FirstShardsGetTheRemainder) {
  // spec examples.md §4: 50 rows in 4 shards.
  EXPECT_EQ(ShardRange(50, 4, 0).begin, 0u);
  EXPECT_EQ(ShardRange(50, 4, 0).end, 13u);
  EXPECT_EQ(ShardRange(50, 4, 1).begin, 13u);
  EXPECT_EQ(ShardRange(50, 4, 1).end, 26u);
  EXPECT_EQ(ShardRange(50, 4, 2).begin, 26u);
  EXPECT_EQ(ShardRange(50, 4, 2).end, 38u);
  EXPECT_EQ(ShardRange(50, 4, 3).begin, 38u);
  EXPECT_EQ(ShardRange(50, 4, 3).end, 50u);
  EXPECT_EQ(ShardRange(2, 4, 3).size(), 0u);
}

TEST(DatasetTest, GlobSkipsBlankLinesAndKeepsLineNumbers) {
  TempDir d;
  WriteFile(d.Path("a.jsonl"), "{\"i\":0}\n\n{\"i\":1}\n");
  WriteFile(d.Path("b.jsonl"), "{\"i\":2}\n  \n{\"i\":3}");  // no trailing newline
  Env* env = Env::Default();
  auto parts = ResolveDatasetParts(env, d.Path("*.jsonl"), {});
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].files.size(), 2u);
  EXPECT_EQ(*CountRows(env, (*parts)[0]), 4u);
  auto rows = ReadAll(env, (*parts)[0], RowRange{1, 3});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], "1@3:{\"i\":1}");
  EXPECT_EQ(rows[1], "2@1:{\"i\":2}");
}

TEST(DatasetTest, CompressedFilesAreReadTransparently) {
  TempDir d;
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "{\"i\":" + std::to_string(i) + ",\"pad\":\"" + std::string(50, 'x') + "\"}\n";
  WriteFile(d.Path("a.jsonl.gz"), Gzip(text));
  WriteFile(d.Path("a.jsonl.zst"), Zstd(text));
  Env* env = Env::Default();
  for (const char* f : {"a.jsonl.gz", "a.jsonl.zst"}) {
    auto parts = ResolveDatasetParts(env, d.Path(f), {});
    ASSERT_TRUE(parts.ok());
    EXPECT_EQ(*CountRows(env, (*parts)[0]), 5000u) << f;
    auto rows = ReadAll(env, (*parts)[0], RowRange{4998, 5000});
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1].substr(0, 16), "4999@5000:{\"i\":4");
  }
}

TEST(DatasetTest, TruncatedGzipIsCorruption) {
  TempDir d;
  std::string gz = Gzip(std::string(100000, 'a') + "\n");
  WriteFile(d.Path("t.jsonl.gz"), gz.substr(0, gz.size() / 2));
  auto parts = ResolveDatasetParts(Env::Default(), d.Path("t.jsonl.gz"), {});
  ASSERT_TRUE(parts.ok());
  auto n = CountRows(Env::Default(), (*parts)[0]);
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(n.status().IsCorruption()) << n.status().ToString();
  EXPECT_NE(n.status().message().find("t.jsonl.gz"), std::string::npos);
}

TEST(DatasetTest, MissingFilesAndEmptyGlobsAreNamed) {
  TempDir d;
  auto a = ResolveDatasetParts(Env::Default(), d.Path("nope.jsonl"), {});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("nope.jsonl"), std::string::npos);
  auto b = ResolveDatasetParts(Env::Default(), "", {{"train", d.Path("*.jsonl")}});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("split 'train'"), std::string::npos);
}

}  // namespace
}  // namespace mmirage

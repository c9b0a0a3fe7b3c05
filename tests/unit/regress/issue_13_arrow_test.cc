// Regression tests for issue #13 found by fuzz/fuzz_arrow.cc: a corrupt Arrow/Parquet input is a clear error naming
// the file, never an out-of-bounds read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/arrow_reader.h"
#include "data/dataset.h"
#include "data/hf_writer.h"
#include "data/json.h"
#include "support/test_util.h"
#include "util/env.h"

namespace mmirage {
namespace {

class VectorRows : public RowSource {
 public:
  explicit VectorRows(std::vector<Value> rows) : rows_(std::move(rows)) {}
  Status Open() override {
    at_ = 0;
    return Status::OK();
  }
  Result<bool> Next(Value* row) override {
    if (at_ >= rows_.size()) return false;
    *row = rows_[at_++];
    return true;
  }

 private:
  std::vector<Value> rows_;
  size_t at_ = 0;
};

// An HF Arrow file with one string column {"hello", "world"}, written by our writer.
std::string WriteStringsArrow(const testing::TempDir& dir) {
  std::vector<Value> rows;
  for (const char* text : {R"({"text": "hello"})", R"({"text": "world"})"}) rows.push_back(*ParseJson(text));
  VectorRows source(rows);
  auto written = WriteArrowOutput(Env::Default(), &source, dir.path(), OutputFormat::kHf);
  EXPECT_TRUE(written.ok()) << written.status().ToString();
  return dir.Path("data-00000-of-00001.arrow");
}

// Reads every row; "corruption: <message>" (or "<other error>: <message>") for the first error, "" when all rows
// were read.
std::string ReadAll(const std::string& path, DataFormat format) {
  DatasetPart part;
  part.files = {path};
  part.format = format;
  ArrowRowSource source(part, RowRange{0, 100});
  Value row;
  size_t file_index;
  uint64_t row_in_file, index;
  while (true) {
    auto more = source.Next(&row, &file_index, &row_in_file, &index);
    if (!more.ok()) return (more.status().IsCorruption() ? "corruption: " : "other error: ") + more.status().message();
    if (!*more) return "";
  }
}

// Finding: a record batch whose string offsets point far past its data buffer was decoded as is (the IPC reader
// does not check offsets), reading out of bounds (SEGV in ConvertStrings). Batches are now validated in full.
TEST(Issue13Arrow, StringOffsetsPastTheDataAreACorruptionError) {
  testing::TempDir dir;
  std::string path = WriteStringsArrow(dir);
  ASSERT_EQ(ReadAll(path, DataFormat::kArrowStream), "");
  std::string bytes = testing::ReadFile(path);
  // The int32 offsets of the column, {0, 5, 10}: the last one is made huge.
  const std::string offsets("\x00\x00\x00\x00\x05\x00\x00\x00\x0a\x00\x00\x00", 12);
  size_t at = bytes.find(offsets);
  ASSERT_NE(at, std::string::npos) << "the writer's layout changed: the offsets buffer was not found";
  bytes.replace(at + 8, 4, std::string("\x00\x00\x00\x40", 4));
  testing::WriteFile(path, bytes);
  std::string err = ReadAll(path, DataFormat::kArrowStream);
  EXPECT_EQ(err.rfind("corruption: ", 0), 0u) << err;
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

// Also: offsets that decrease (a negative string length).
TEST(Issue13Arrow, DecreasingStringOffsetsAreACorruptionError) {
  testing::TempDir dir;
  std::string path = WriteStringsArrow(dir);
  std::string bytes = testing::ReadFile(path);
  const std::string offsets("\x00\x00\x00\x00\x05\x00\x00\x00\x0a\x00\x00\x00", 12);
  size_t at = bytes.find(offsets);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at + 4, 4, std::string("\xff\xff\xff\x7f", 4));
  testing::WriteFile(path, bytes);
  std::string err = ReadAll(path, DataFormat::kArrowStream);
  EXPECT_EQ(err.rfind("corruption: ", 0), 0u) << err;
}

}  // namespace
}  // namespace mmirage

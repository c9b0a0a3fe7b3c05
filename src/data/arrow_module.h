// The Arrow/Parquet half of data/ is a shared module (data/arrow/, libmmirage_arrow.so, util/module.h): Apache
// Arrow's libraries load only when a run reads or writes an HF dataset or a Parquet file. This is the module's
// interface, in our own types; data/arrow_reader.h and data/hf_writer.h keep their functions and forward to it.
// A build may link the module in instead (MMIRAGE_ARROW_MODULE_LINKED: the fuzzers).
//
// Thread-safety: LoadArrowModule may be called from several threads; the functions of the table are as thread-safe
// as the ones they implement (arrow_reader.h, hf_writer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/hf_writer.h"
#include "data/value.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage {

struct DatasetPart;
struct RowRange;

namespace arrow_module {

// Rows of one Arrow-stream or Parquet part (ArrowRowSource's work). Used by one thread.
class RowReader {
 public:
  virtual ~RowReader() = default;
  virtual Result<bool> Next(Value* row, size_t* file_index, uint64_t* row_in_file, uint64_t* index) = 0;
};

// What the module offers; each member implements the function of arrow_reader.h / hf_writer.h of the same name.
struct Api {
  int abi;              // kAbi of the build that made the module
  const char* version;  // MMIRAGE_VERSION of that build
  std::unique_ptr<RowReader> (*open_rows)(const DatasetPart& part, const RowRange& range);
  Result<uint64_t> (*count_rows)(const DatasetPart& part);
  Result<int64_t> (*write_output)(Env* env, RowSource* rows, const std::string& dir, OutputFormat format);
  Result<Value> (*infer_features)(RowSource* rows);
  Result<Env*> (*s3_env)();  // the Env of s3:// paths (object storage through Arrow's S3 file system)
};
inline constexpr int kAbi = 2;  // bump when Api or a type it passes changes

// The module's table, loaded on the first call. Errors: kNotFound, one line (util/module.h), also when the module
// found belongs to another build.
Result<const Api*> LoadArrowModule();

// Registers the module's S3 Env for s3:// paths (util/env_schemes.h): the module loads on the first such path.
// Call once from main() before other threads start.
void RegisterObjectStorage();

}  // namespace arrow_module
}  // namespace mmirage

// The module's entry point (data/arrow/arrow_module.cc).
extern "C" const mmirage::arrow_module::Api* mmirage_arrow_module_v1();

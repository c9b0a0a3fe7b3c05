// The Arrow functions of data/arrow_reader.h and data/hf_writer.h, forwarded to the Arrow module
// (data/arrow_module.h), which is loaded the first time one of them runs.
#include "data/arrow_module.h"

#include <mutex>

#include "data/arrow_reader.h"
#include "data/dataset.h"
#include "util/env_schemes.h"
#include "util/module.h"

namespace mmirage {
namespace arrow_module {

Result<const Api*> LoadArrowModule() {
  static Result<const Api*> api = Status::Internal("not loaded");
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef MMIRAGE_ARROW_MODULE_LINKED
    api = mmirage_arrow_module_v1();
#else
    api = LoadModuleApi<Api>("libmmirage_arrow.so", "Arrow/Parquet support: HF datasets and Parquet files",
                             "mmirage_arrow_module_v1", kAbi, MMIRAGE_VERSION);
#endif
  });
  return api;
}

void RegisterObjectStorage() {
  RegisterSchemeEnv("s3", []() -> Result<Env*> {
    MMIRAGE_ASSIGN_OR_RETURN(const Api* api, LoadArrowModule());
    return api->s3_env();
  });
}

}  // namespace arrow_module

struct ArrowRowSource::Impl {
  std::unique_ptr<arrow_module::RowReader> reader;
  Status error;  // the module could not be loaded
};

ArrowRowSource::ArrowRowSource(const DatasetPart& part, const RowRange& range) : impl_(std::make_unique<Impl>()) {
  Result<const arrow_module::Api*> api = arrow_module::LoadArrowModule();
  if (api.ok()) {
    impl_->reader = (*api)->open_rows(part, range);
  } else {
    impl_->error = api.status();
  }
}

ArrowRowSource::~ArrowRowSource() = default;

Result<bool> ArrowRowSource::Next(Value* row, size_t* file_index, uint64_t* row_in_file, uint64_t* index) {
  if (!impl_->error.ok()) return impl_->error;
  return impl_->reader->Next(row, file_index, row_in_file, index);
}

Result<uint64_t> CountArrowRows(const DatasetPart& part) {
  MMIRAGE_ASSIGN_OR_RETURN(const arrow_module::Api* api, arrow_module::LoadArrowModule());
  return api->count_rows(part);
}

Result<int64_t> WriteArrowOutput(Env* env, RowSource* rows, const std::string& dir, OutputFormat format) {
  MMIRAGE_ASSIGN_OR_RETURN(const arrow_module::Api* api, arrow_module::LoadArrowModule());
  return api->write_output(env, rows, dir, format);
}

Result<Value> InferFeatures(RowSource* rows) {
  MMIRAGE_ASSIGN_OR_RETURN(const arrow_module::Api* api, arrow_module::LoadArrowModule());
  return api->infer_features(rows);
}

}  // namespace mmirage

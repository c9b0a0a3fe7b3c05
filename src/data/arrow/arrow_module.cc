// The entry point of libmmirage_arrow.so (data/arrow_module.h).
#include "data/arrow/arrow_impl.h"
#include "data/arrow/s3_fs.h"

extern "C" __attribute__((visibility("default"))) const mmirage::arrow_module::Api* mmirage_arrow_module_v1() {
  namespace am = mmirage::arrow_module;
  static const am::Api api = {am::kAbi,        MMIRAGE_VERSION,   am::OpenRows, am::CountRows,
                              am::WriteOutput, am::InferFeatures, am::S3Env};
  return &api;
}

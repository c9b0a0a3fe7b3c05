// Private to the Arrow module (data/arrow/): its implementations of the data/arrow_module.h table.
#pragma once

#include <memory>
#include <string>

#include "data/arrow_module.h"

namespace mmirage::arrow_module {

std::unique_ptr<RowReader> OpenRows(const DatasetPart& part, const RowRange& range);                  // arrow_reader.cc
Result<uint64_t> CountRows(const DatasetPart& part);                                                  // arrow_reader.cc
Result<int64_t> WriteOutput(Env* env, RowSource* rows, const std::string& dir, OutputFormat format);  // hf_writer.cc
Result<Value> InferFeatures(RowSource* rows);                                                         // hf_writer.cc

}  // namespace mmirage::arrow_module

// The Arrow-free half of data/hf_writer.h: output formats, row sources, the HF directory files and ApproxBytes.
// Writing the Arrow and Parquet files themselves is the Arrow module's (data/arrow/hf_writer.cc).
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/hf_writer.h"
#include "data/json.h"
#include "data/line_reader.h"
#include "data/tagged_json.h"
#include "util/fnv.h"
#include "util/hex.h"

namespace mmirage {

int64_t ApproxBytes(const Value& v) {
  switch (v.type()) {
    case Value::Type::kString: return static_cast<int64_t>(v.as_string().size());
    case Value::Type::kBytes: return static_cast<int64_t>(v.as_bytes().size());
    case Value::Type::kArray: {
      int64_t n = 8;
      for (const auto& e : v.as_array()) n += ApproxBytes(e);
      return n;
    }
    case Value::Type::kObject: {
      int64_t n = 8;
      for (const auto& m : v.as_object()) n += ApproxBytes(m.second);
      return n;
    }
    default: return 8;
  }
}

namespace {

class JsonlSource : public RowSource {
 public:
  JsonlSource(Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  Status Open() override {
    MMIRAGE_ASSIGN_OR_RETURN(reader_, LineReader::Open(env_, path_));
    return Status::OK();
  }
  Result<bool> Next(Value* row) override {
    std::string_view line;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(bool more, reader_->Next(&line));
      if (!more) return false;
      if (!IsBlankLine(line)) break;
    }
    auto v = ParseJson(line);
    if (!v.ok())
      return Status::Corruption(path_ + ":" + std::to_string(reader_->line_number()) + ": " + v.status().message());
    if (!UntagBytes(&*v))
      return Status::Corruption(path_ + ":" + std::to_string(reader_->line_number()) + ": bad tagged bytes value");
    *row = std::move(*v);
    return true;
  }

 private:
  Env* env_;
  std::string path_;
  std::unique_ptr<LineReader> reader_;
};

class PartsSource : public RowSource {
 public:
  PartsSource(Env* env, std::vector<DatasetPart> parts) : env_(env), parts_(std::move(parts)) {}
  Status Open() override {
    index_ = 0;
    stream_.reset();
    return Status::OK();
  }
  Result<bool> Next(Value* row) override {
    while (true) {
      if (!stream_) {
        if (index_ >= parts_.size()) return false;
        stream_ = std::make_unique<RowStream>(env_, parts_[index_], RowRange{0, UINT64_MAX});
      }
      RawRow raw;
      MMIRAGE_ASSIGN_OR_RETURN(bool more, stream_->Next(&raw));
      if (!more) {
        stream_.reset();
        ++index_;
        continue;
      }
      if (raw.value != nullptr) {
        *row = std::move(*raw.value);
        return true;
      }
      auto v = ParseJson(raw.text);
      std::string where = *raw.file + ":" + std::to_string(raw.line);
      if (!v.ok()) return Status::Corruption(where + ": " + v.status().message());
      if (!UntagBytes(&*v)) return Status::Corruption(where + ": bad tagged bytes value");
      *row = std::move(*v);
      return true;
    }
  }

 private:
  Env* env_;
  std::vector<DatasetPart> parts_;
  size_t index_ = 0;
  std::unique_ptr<RowStream> stream_;
};

}  // namespace

Result<OutputFormat> ParseOutputFormat(const std::string& name) {
  if (name == "hf") return OutputFormat::kHf;
  if (name == "jsonl") return OutputFormat::kJsonl;
  if (name == "parquet") return OutputFormat::kParquet;
  return Status::InvalidArgument("output_format '" + name + "' is not one of hf, jsonl, parquet");
}

std::unique_ptr<RowSource> JsonlRowSource(Env* env, std::string path) {
  return std::make_unique<JsonlSource>(env, std::move(path));
}

std::unique_ptr<RowSource> PartsRowSource(Env* env, std::vector<DatasetPart> parts) {
  return std::make_unique<PartsSource>(env, std::move(parts));
}

Status WriteHfDatasetFiles(Env* env, const std::string& dir, const std::vector<std::string>& files,
                           const Value& features) {
  Value info = Value::EmptyObject();
  info.Set("citation", "");
  info.Set("description", "");
  info.Set("features", features);
  info.Set("homepage", "");
  info.Set("license", "");
  MMIRAGE_TRY(WriteFileAtomically(env, JoinPath(dir, "dataset_info.json"), ToJsonPretty(info, 2) + "\n"));
  Value data_files = Value::EmptyArray();
  for (const auto& f : files) {
    Value e = Value::EmptyObject();
    e.Set("filename", f);
    data_files.Push(e);
  }
  // A fingerprint derived from the content listing (HF only needs it to be a hex string).
  std::string key = ToJson(features);
  for (const auto& f : files) key += "\n" + f;
  Value state = Value::EmptyObject();
  state.Set("_data_files", data_files);
  state.Set("_fingerprint", Hex64(Fnv1a64(key)));
  state.Set("_format_columns", Value());
  state.Set("_format_kwargs", Value::EmptyObject());
  state.Set("_format_type", Value());
  state.Set("_output_all_columns", false);
  state.Set("_split", Value());
  return WriteFileAtomically(env, JoinPath(dir, "state.json"), ToJsonPretty(state, 2) + "\n");
}

Result<Value> ReadHfFeatures(Env* env, const std::string& dir) {
  std::string path = JoinPath(dir, "dataset_info.json");
  MMIRAGE_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(path));
  auto v = ParseJson(text);
  if (!v.ok()) return Status::Corruption(path + ": " + v.status().message());
  const Value* f = v->Find("features");
  if (f == nullptr) return Status::Corruption(path + ": no \"features\"");
  return *f;
}

}  // namespace mmirage

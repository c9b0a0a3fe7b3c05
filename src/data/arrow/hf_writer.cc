// Type inference (as pyarrow/HF infer from Python values): null fits any type; int and float mix to float64; lists
// merge their elements' types; structs merge field by field (a missing key is null; new keys are appended in
// first-seen order); a column that is null in every row is Arrow `null` (HF Value("null")). A struct with just
// {"bytes": binary|null, "path": string|null} is written as an HF Image feature. Types: bool, int64, float64,
// string, binary, list<…>, struct<…>, null.
//
// Features are written in the form both `datasets` 3.x and 5.x load: Value / Image / Sequence (a list of a
// non-struct) / [{…}] (a list of structs). `dataset_info.json` holds them and so does the Arrow schema metadata
// (key "huggingface", {"info": {"features": …}}), also in Parquet files, so `load_dataset("parquet", …)` restores
// them.

#include "data/hf_writer.h"

#include <arrow/api.h>
#include <arrow/io/interfaces.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/byte_size.h>
#include <arrow/util/key_value_metadata.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include "data/arrow/arrow_impl.h"
#include "data/arrow/arrow_util.h"
#include "data/dataset.h"
#include "data/json.h"

namespace mmirage {
namespace {

constexpr int64_t kBatchRows = 1000;       // HF's default writer_batch_size
constexpr int64_t kBatchBytes = 32 << 20;  // ... or fewer rows when they are big (images)

}  // namespace

namespace {

// ---- type inference ---------------------------------------------------------------------------------------------

struct TypeNode {
  enum Kind { kNull, kBool, kInt, kDouble, kString, kBytes, kList, kStruct } kind = kNull;
  int64_t row = -1;  // the row that gave this node its kind
  std::unique_ptr<TypeNode> elem;
  std::vector<std::pair<std::string, std::unique_ptr<TypeNode>>> fields;
  bool image = false;  // kStruct written as an HF Image

  TypeNode* Field(const std::string& name) {
    for (auto& [k, v] : fields)
      if (k == name) return v.get();
    return nullptr;
  }
};

const char* KindName(TypeNode::Kind k) {
  switch (k) {
    case TypeNode::kNull: return "null";
    case TypeNode::kBool: return "a bool";
    case TypeNode::kInt: return "an int";
    case TypeNode::kDouble: return "a float";
    case TypeNode::kString: return "a string";
    case TypeNode::kBytes: return "bytes";
    case TypeNode::kList: return "a list";
    case TypeNode::kStruct: return "an object";
  }
  return "?";
}

TypeNode::Kind KindOf(const Value& v) {
  switch (v.type()) {
    case Value::Type::kNull: return TypeNode::kNull;
    case Value::Type::kBool: return TypeNode::kBool;
    case Value::Type::kInt: return TypeNode::kInt;
    case Value::Type::kDouble: return TypeNode::kDouble;
    case Value::Type::kString: return TypeNode::kString;
    case Value::Type::kBytes: return TypeNode::kBytes;
    case Value::Type::kArray: return TypeNode::kList;
    case Value::Type::kObject: return TypeNode::kStruct;
  }
  return TypeNode::kNull;
}

Status Merge(TypeNode* t, const Value& v, int64_t row, const std::string& path) {
  TypeNode::Kind k = KindOf(v);
  if (k == TypeNode::kNull) return Status::OK();
  if (t->kind == TypeNode::kNull) {
    t->kind = k;
    t->row = row;
  } else if (t->kind != k) {
    if (t->kind == TypeNode::kInt && k == TypeNode::kDouble) {
      t->kind = TypeNode::kDouble;
    } else if (!(t->kind == TypeNode::kDouble && k == TypeNode::kInt)) {
      return Status::InvalidArgument("column '" + path + "' has values of two types: row " + std::to_string(t->row) +
                                     " has " + KindName(t->kind) + ", row " + std::to_string(row) + " has " +
                                     KindName(k));
    }
  }
  if (k == TypeNode::kList) {
    if (!t->elem) t->elem = std::make_unique<TypeNode>();
    for (const auto& e : v.as_array()) MMIRAGE_TRY(Merge(t->elem.get(), e, row, path + "[]"));
  } else if (k == TypeNode::kStruct) {
    for (const auto& [key, val] : v.as_object()) {
      TypeNode* f = t->Field(key);
      if (f == nullptr) {
        t->fields.emplace_back(key, std::make_unique<TypeNode>());
        f = t->fields.back().second.get();
      }
      MMIRAGE_TRY(Merge(f, val, row, path.empty() ? key : path + "." + key));
    }
  }
  return Status::OK();
}

// Marks {"bytes", "path"} structs as HF Images (bytes first, as HF's Image storage type).
void MarkImages(TypeNode* t) {
  if (t->elem) MarkImages(t->elem.get());
  for (auto& f : t->fields) MarkImages(f.second.get());
  if (t->kind != TypeNode::kStruct || t->fields.size() != 2) return;
  TypeNode* b = t->Field("bytes");
  TypeNode* p = t->Field("path");
  if (b == nullptr || p == nullptr) return;
  if ((b->kind != TypeNode::kBytes && b->kind != TypeNode::kNull) ||
      (p->kind != TypeNode::kString && p->kind != TypeNode::kNull))
    return;
  t->image = true;
  if (t->fields[0].first != "bytes") std::swap(t->fields[0], t->fields[1]);
  b->kind = TypeNode::kBytes;
  p->kind = TypeNode::kString;
}

Status Infer(RowSource* rows, TypeNode* root, int64_t* count) {
  root->kind = TypeNode::kStruct;
  MMIRAGE_TRY(rows->Open());
  Value row;
  int64_t n = 0;
  while (true) {
    MMIRAGE_ASSIGN_OR_RETURN(bool more, rows->Next(&row));
    if (!more) break;
    if (!row.is_object()) return Status::InvalidArgument("row " + std::to_string(n) + " is not an object");
    MMIRAGE_TRY(Merge(root, row, n, ""));
    ++n;
  }
  MarkImages(root);
  *count = n;
  return Status::OK();
}

std::shared_ptr<arrow::DataType> ArrowType(const TypeNode& t) {
  switch (t.kind) {
    case TypeNode::kNull: return arrow::null();
    case TypeNode::kBool: return arrow::boolean();
    case TypeNode::kInt: return arrow::int64();
    case TypeNode::kDouble: return arrow::float64();
    case TypeNode::kString: return arrow::utf8();
    case TypeNode::kBytes: return arrow::binary();
    case TypeNode::kList: return arrow::list(arrow::field("item", ArrowType(*t.elem)));
    case TypeNode::kStruct: {
      arrow::FieldVector fields;
      for (const auto& [k, v] : t.fields) fields.push_back(arrow::field(k, ArrowType(*v)));
      return arrow::struct_(fields);
    }
  }
  return arrow::null();
}

Value ValueFeature(const char* dtype) {
  Value f = Value::EmptyObject();
  f.Set("dtype", dtype);
  f.Set("_type", "Value");
  return f;
}

// HF features in the form datasets 3.x writes (and 5.x still reads).
Value Features(const TypeNode& t) {
  switch (t.kind) {
    case TypeNode::kNull: return ValueFeature("null");
    case TypeNode::kBool: return ValueFeature("bool");
    case TypeNode::kInt: return ValueFeature("int64");
    case TypeNode::kDouble: return ValueFeature("float64");
    case TypeNode::kString: return ValueFeature("string");
    case TypeNode::kBytes: return ValueFeature("binary");
    case TypeNode::kList: {
      if (t.elem->kind == TypeNode::kStruct && !t.elem->image) return Value(Value::Array{Features(*t.elem)});
      Value f = Value::EmptyObject();
      f.Set("feature", Features(*t.elem));
      f.Set("_type", "Sequence");
      return f;
    }
    case TypeNode::kStruct: {
      Value f = Value::EmptyObject();
      if (t.image) {
        f.Set("_type", "Image");
        return f;
      }
      for (const auto& [k, v] : t.fields) f.Set(k, Features(*v));
      return f;
    }
  }
  return Value();
}

// ---- building record batches ------------------------------------------------------------------------------------

arrow::Status Append(arrow::ArrayBuilder* b, const TypeNode& t, const Value* v) {
  if (v == nullptr || v->is_null()) return b->AppendNull();
  switch (t.kind) {
    case TypeNode::kNull: return b->AppendNull();
    case TypeNode::kBool: return static_cast<arrow::BooleanBuilder*>(b)->Append(v->as_bool());
    case TypeNode::kInt: return static_cast<arrow::Int64Builder*>(b)->Append(v->as_int());
    case TypeNode::kDouble: return static_cast<arrow::DoubleBuilder*>(b)->Append(v->as_number());
    case TypeNode::kString: return static_cast<arrow::StringBuilder*>(b)->Append(v->as_string());
    case TypeNode::kBytes: return static_cast<arrow::BinaryBuilder*>(b)->Append(v->as_bytes());
    case TypeNode::kList: {
      auto* lb = static_cast<arrow::ListBuilder*>(b);
      ARROW_RETURN_NOT_OK(lb->Append());
      for (const auto& e : v->as_array()) ARROW_RETURN_NOT_OK(Append(lb->value_builder(), *t.elem, &e));
      return arrow::Status::OK();
    }
    case TypeNode::kStruct: {
      auto* sb = static_cast<arrow::StructBuilder*>(b);
      ARROW_RETURN_NOT_OK(sb->Append());
      for (size_t i = 0; i < t.fields.size(); ++i)
        ARROW_RETURN_NOT_OK(
            Append(sb->field_builder(static_cast<int>(i)), *t.fields[i].second, v->Find(t.fields[i].first)));
      return arrow::Status::OK();
    }
  }
  return arrow::Status::OK();
}

// arrow::io::OutputStream over an Env WritableFile (so outputs go through Env and can be synced).
class EnvOutputStream : public arrow::io::OutputStream {
 public:
  explicit EnvOutputStream(std::unique_ptr<WritableFile> f) : f_(std::move(f)) {}
  arrow::Status Close() override {
    if (closed_) return arrow::Status::OK();
    closed_ = true;
    Status s = f_->Sync();
    if (s.ok()) s = f_->Close();
    return s.ok() ? arrow::Status::OK() : arrow::Status::IOError(s.message());
  }
  arrow::Result<int64_t> Tell() const override { return pos_; }
  bool closed() const override { return closed_; }
  arrow::Status Write(const void* data, int64_t n) override {
    Status s = f_->Append(std::string_view(static_cast<const char*>(data), static_cast<size_t>(n)));
    if (!s.ok()) return arrow::Status::IOError(s.message());
    pos_ += n;
    return arrow::Status::OK();
  }
  arrow::Status Flush() override {
    Status s = f_->Flush();
    return s.ok() ? arrow::Status::OK() : arrow::Status::IOError(s.message());
  }

 private:
  std::unique_ptr<WritableFile> f_;
  int64_t pos_ = 0;
  bool closed_ = false;
};

std::string FeaturesMetadata(const Value& features) {
  Value info = Value::EmptyObject();
  info.Set("features", features);
  Value hf = Value::EmptyObject();
  hf.Set("info", info);
  return ToJson(hf);
}

Status FromArrow(const arrow::Status& st, const std::string& path) {
  return Status::IOError(path + ": " + ArrowMessage(st));
}

}  // namespace

namespace arrow_module {

Result<Value> InferFeatures(RowSource* rows) {
  TypeNode root;
  int64_t n = 0;
  MMIRAGE_TRY(Infer(rows, &root, &n));
  return Features(root);
}

Result<int64_t> WriteOutput(Env* env, RowSource* rows, const std::string& dir, OutputFormat format) {
  TypeNode root;
  int64_t total = 0;
  MMIRAGE_TRY(Infer(rows, &root, &total));
  Value features = Features(root);
  auto type = std::static_pointer_cast<arrow::StructType>(ArrowType(root));
  auto metadata = arrow::key_value_metadata({"huggingface"}, {FeaturesMetadata(features)});
  auto schema = arrow::schema(type->fields(), metadata);

  const std::string file = format == OutputFormat::kHf ? "data-00000-of-00001.arrow" : "data.parquet";
  const std::string path = JoinPath(dir, file);
  MMIRAGE_ASSIGN_OR_RETURN(auto wf, env->NewWritableFile(path));
  auto out = std::make_shared<EnvOutputStream>(std::move(wf));

  std::shared_ptr<arrow::ipc::RecordBatchWriter> ipc;
  std::unique_ptr<parquet::arrow::FileWriter> pq;
  if (format == OutputFormat::kHf) {
    auto w = arrow::ipc::MakeStreamWriter(out, schema);
    if (!w.ok()) return FromArrow(w.status(), path);
    ipc = *w;
  } else {
    auto props = parquet::WriterProperties::Builder()
                     .compression(parquet::Compression::SNAPPY)
                     ->max_row_group_length(100 * kBatchRows)
                     ->build();
    auto aprops = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    auto w = parquet::arrow::FileWriter::Open(*schema, arrow::default_memory_pool(), out, props, aprops);
    if (!w.ok()) return FromArrow(w.status(), path);
    pq = std::move(*w);
  }

  std::unique_ptr<arrow::ArrayBuilder> builder;
  arrow::Status st = arrow::MakeBuilder(arrow::default_memory_pool(), type, &builder);
  if (!st.ok()) return FromArrow(st, path);
  auto* sb = static_cast<arrow::StructBuilder*>(builder.get());
  int64_t in_batch = 0, written = 0, row_group_bytes = 0, batch_bytes = 0;
  constexpr int64_t kRowGroupBytes = 64 << 20;
  auto flush = [&]() -> arrow::Status {
    std::shared_ptr<arrow::Array> arr;
    ARROW_RETURN_NOT_OK(sb->Finish(&arr));
    auto& s = static_cast<arrow::StructArray&>(*arr);
    std::vector<std::shared_ptr<arrow::Array>> cols;
    for (int i = 0; i < s.num_fields(); ++i) cols.push_back(s.field(i));
    auto batch = arrow::RecordBatch::Make(schema, s.length(), cols);
    in_batch = 0;
    if (ipc) return ipc->WriteRecordBatch(*batch);
    // A row group is buffered until it closes: close it at 64 MiB of Arrow data (images) or 100k rows.
    int64_t bytes = arrow::util::TotalBufferSize(*arr);
    if (row_group_bytes > 0 && row_group_bytes + bytes > kRowGroupBytes) {
      ARROW_RETURN_NOT_OK(pq->NewBufferedRowGroup());
      row_group_bytes = 0;
    }
    row_group_bytes += bytes;
    return pq->WriteRecordBatch(*batch);
  };
  MMIRAGE_TRY(rows->Open());
  Value row;
  while (true) {
    MMIRAGE_ASSIGN_OR_RETURN(bool more, rows->Next(&row));
    if (!more) break;
    st = Append(sb, root, &row);
    if (!st.ok()) return FromArrow(st, path);
    ++written;
    batch_bytes += ApproxBytes(row);
    if (++in_batch == kBatchRows || batch_bytes >= kBatchBytes) {
      batch_bytes = 0;
      st = flush();
      if (!st.ok()) return FromArrow(st, path);
    }
  }
  if (written != total) return Status::Corruption(path + ": the rows changed between the two passes");
  if (in_batch > 0 || written == 0) {
    st = flush();
    if (!st.ok()) return FromArrow(st, path);
  }
  st = ipc ? ipc->Close() : pq->Close();
  if (st.ok()) st = out->Close();
  if (!st.ok()) return FromArrow(st, path);
  if (format == OutputFormat::kHf) MMIRAGE_TRY(WriteHfDatasetFiles(env, dir, {file}, features));
  return written;
}

}  // namespace arrow_module
}  // namespace mmirage

#include "data/arrow_reader.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/ipc/reader.h>
#include <arrow/util/byte_size.h>
#include <arrow/util/float16.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/properties.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "data/arrow/arrow_impl.h"
#include "data/arrow/arrow_util.h"
#include "data/arrow/s3_fs.h"
#include "data/dataset.h"
#include "data/json.h"

namespace mmirage {
namespace {

// ---- time formatting -------------------------------------------------------------------------------------------

// Days since 1970-01-01 → civil date (H. Hinnant's algorithm).
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::string FormatDate(int64_t days) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04" PRId64 "-%02u-%02u", y, m, d);
  return buf;
}

int64_t UnitsPerSecond(arrow::TimeUnit::type u) {
  switch (u) {
    case arrow::TimeUnit::SECOND: return 1;
    case arrow::TimeUnit::MILLI: return 1000;
    case arrow::TimeUnit::MICRO: return 1000000;
    case arrow::TimeUnit::NANO: return 1000000000;
  }
  return 1;
}

// "HH:MM:SS" plus the fraction digits of the unit (Python's isoformat prints microseconds; we print the unit's).
std::string FormatTimeOfDay(int64_t units, int64_t per_sec) {
  int64_t secs = FloorDiv(units, per_sec);
  int64_t frac = units - secs * per_sec;
  char buf[48];
  int n = std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", static_cast<int>(secs / 3600),
                        static_cast<int>(secs / 60 % 60), static_cast<int>(secs % 60));
  if (frac != 0) {
    int digits = per_sec == 1000 ? 3 : per_sec == 1000000 ? 6 : 9;
    std::snprintf(buf + n, sizeof buf - n, ".%0*" PRId64, digits, frac);
  }
  return buf;
}

std::string FormatTimestamp(int64_t v, const arrow::TimestampType& t) {
  int64_t per_sec = UnitsPerSecond(t.unit());
  int64_t per_day = per_sec * 86400;
  int64_t days = FloorDiv(v, per_day);
  std::string s = FormatDate(days);
  s.push_back('T');
  s += FormatTimeOfDay(v - days * per_day, per_sec);
  if (!t.timezone().empty()) s += "+00:00";
  return s;
}

// ---- Arrow array → Values ---------------------------------------------------------------------------------------

Status Unsupported(const std::string& column, const arrow::DataType& type) {
  return Status::InvalidArgument("column '" + column + "': Arrow type " + type.ToString() + " is not supported");
}

Status Convert(const arrow::Array& arr, const std::string& column, std::vector<Value>* out);

template <typename ArrayT>
void ConvertInts(const arrow::Array& a, std::vector<Value>* out) {
  const auto& arr = static_cast<const ArrayT&>(a);
  for (int64_t i = 0; i < arr.length(); ++i) {
    if (arr.IsNull(i)) out->emplace_back();
    else out->emplace_back(static_cast<int64_t>(arr.Value(i)));
  }
}

template <typename ArrayT>
void ConvertStrings(const arrow::Array& a, bool bytes, std::vector<Value>* out) {
  const auto& arr = static_cast<const ArrayT&>(a);
  for (int64_t i = 0; i < arr.length(); ++i) {
    if (arr.IsNull(i)) {
      out->emplace_back();
    } else {
      auto v = arr.GetView(i);
      if (bytes) out->push_back(Value::Bytes(std::string(v.data(), v.size())));
      else out->emplace_back(std::string_view(v.data(), v.size()));
    }
  }
}

// Lists whose elements lie in one contiguous range of the child (list, large_list, fixed_size_list).
template <typename ArrayT>
Status ConvertList(const arrow::Array& a, const std::string& column, std::vector<Value>* out) {
  const auto& arr = static_cast<const ArrayT&>(a);
  const int64_t n = arr.length();
  if (n == 0) return Status::OK();
  int64_t start = arr.value_offset(0);
  int64_t end = arr.value_offset(n - 1) + arr.value_length(n - 1);
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(end - start));
  MMIRAGE_TRY(Convert(*arr.values()->Slice(start, end - start), column, &items));
  for (int64_t i = 0; i < n; ++i) {
    if (arr.IsNull(i)) {
      out->emplace_back();
      continue;
    }
    Value::Array elems;
    int64_t off = arr.value_offset(i) - start, len = arr.value_length(i);
    elems.reserve(static_cast<size_t>(len));
    for (int64_t j = 0; j < len; ++j) elems.push_back(std::move(items[static_cast<size_t>(off + j)]));
    out->emplace_back(std::move(elems));
  }
  return Status::OK();
}

template <typename ArrayT>
Status ConvertListView(const arrow::Array& a, const std::string& column, std::vector<Value>* out) {
  const auto& arr = static_cast<const ArrayT&>(a);
  for (int64_t i = 0; i < arr.length(); ++i) {
    if (arr.IsNull(i)) {
      out->emplace_back();
      continue;
    }
    std::vector<Value> items;
    MMIRAGE_TRY(Convert(*arr.values()->Slice(arr.value_offset(i), arr.value_length(i)), column, &items));
    out->emplace_back(Value::Array(std::move(items)));
  }
  return Status::OK();
}

// Appends f(array, i) for each element of `a` (an ArrayT), null for the null ones.
template <typename ArrayT, typename F>
void ConvertEach(const arrow::Array& a, std::vector<Value>* out, F f) {
  const auto& arr = static_cast<const ArrayT&>(a);
  for (int64_t i = 0; i < arr.length(); ++i) {
    if (arr.IsNull(i)) out->emplace_back();
    else out->push_back(f(arr, i));
  }
}

// A map: an object when its keys are strings, else a list of [key, value] pairs.
Status ConvertMap(const arrow::Array& arr, const std::string& column, std::vector<Value>* out) {
  using T = arrow::Type;
  const auto& m = static_cast<const arrow::MapArray&>(arr);
  const int64_t n = arr.length();
  if (n == 0) return Status::OK();
  int64_t start = m.value_offset(0), end = m.value_offset(n - 1) + m.value_length(n - 1);
  std::vector<Value> keys, items;
  MMIRAGE_TRY(Convert(*m.keys()->Slice(start, end - start), column, &keys));
  MMIRAGE_TRY(Convert(*m.items()->Slice(start, end - start), column, &items));
  const auto key_type = m.keys()->type_id();
  const bool string_keys = key_type == T::STRING || key_type == T::LARGE_STRING || key_type == T::STRING_VIEW;
  for (int64_t i = 0; i < n; ++i) {
    if (m.IsNull(i)) {
      out->emplace_back();
      continue;
    }
    int64_t off = m.value_offset(i) - start, len = m.value_length(i);
    if (string_keys) {
      Value obj = Value::EmptyObject();
      for (int64_t j = 0; j < len; ++j)
        obj.Set(keys[static_cast<size_t>(off + j)].as_string(), std::move(items[static_cast<size_t>(off + j)]));
      out->push_back(std::move(obj));
    } else {
      Value::Array pairs;
      for (int64_t j = 0; j < len; ++j)
        pairs.emplace_back(Value::Array{keys[static_cast<size_t>(off + j)], items[static_cast<size_t>(off + j)]});
      out->emplace_back(std::move(pairs));
    }
  }
  return Status::OK();
}

// A struct: an object with the fields in order (errors name the column as `column.field`).
Status ConvertStruct(const arrow::Array& arr, const std::string& column, std::vector<Value>* out) {
  const auto& s = static_cast<const arrow::StructArray&>(arr);
  const auto& st = static_cast<const arrow::StructType&>(*s.type());
  const int nf = st.num_fields();
  std::vector<std::vector<Value>> fields(static_cast<size_t>(nf));
  for (int f = 0; f < nf; ++f) {
    // field(f) is the field sliced to this array's offset and length.
    auto child = s.field(f);
    MMIRAGE_TRY(Convert(*child, column + "." + st.field(f)->name(), &fields[static_cast<size_t>(f)]));
  }
  for (int64_t i = 0; i < arr.length(); ++i) {
    if (s.IsNull(i)) {
      out->emplace_back();
      continue;
    }
    Value::Object obj;
    obj.reserve(static_cast<size_t>(nf));
    for (int f = 0; f < nf; ++f)
      obj.emplace_back(st.field(f)->name(), std::move(fields[static_cast<size_t>(f)][static_cast<size_t>(i)]));
    out->emplace_back(std::move(obj));
  }
  return Status::OK();
}

// A dictionary-encoded array: each element its dictionary value. Errors: an index out of range (kCorruption).
Status ConvertDictionary(const arrow::Array& arr, const std::string& column, std::vector<Value>* out) {
  const auto& d = static_cast<const arrow::DictionaryArray&>(arr);
  std::vector<Value> dict;
  MMIRAGE_TRY(Convert(*d.dictionary(), column, &dict));
  for (int64_t i = 0; i < arr.length(); ++i) {
    if (d.IsNull(i)) {
      out->emplace_back();
      continue;
    }
    int64_t k = d.GetValueIndex(i);
    if (k < 0 || static_cast<size_t>(k) >= dict.size())
      return Status::Corruption("column '" + column + "': dictionary index out of range");
    out->push_back(dict[static_cast<size_t>(k)]);
  }
  return Status::OK();
}

// Timestamps, dates and times of day: ISO 8601 strings. REQUIRES: a TIMESTAMP, DATE32/64 or TIME32/64 array.
void ConvertTemporal(const arrow::Array& arr, std::vector<Value>* out) {
  using T = arrow::Type;
  switch (arr.type_id()) {
    case T::TIMESTAMP: {
      const auto& type = static_cast<const arrow::TimestampType&>(*arr.type());
      ConvertEach<arrow::TimestampArray>(
          arr, out, [&](const auto& t, int64_t i) { return Value(FormatTimestamp(t.Value(i), type)); });
      return;
    }
    case T::DATE32:
      ConvertEach<arrow::Date32Array>(arr, out, [](const auto& t, int64_t i) { return Value(FormatDate(t.Value(i))); });
      return;
    case T::DATE64:
      ConvertEach<arrow::Date64Array>(
          arr, out, [](const auto& t, int64_t i) { return Value(FormatDate(FloorDiv(t.Value(i), 86400000))); });
      return;
    case T::TIME32: {
      int64_t per = UnitsPerSecond(static_cast<const arrow::Time32Type&>(*arr.type()).unit());
      ConvertEach<arrow::Time32Array>(
          arr, out, [per](const auto& t, int64_t i) { return Value(FormatTimeOfDay(t.Value(i), per)); });
      return;
    }
    default: {  // TIME64
      int64_t per = UnitsPerSecond(static_cast<const arrow::Time64Type&>(*arr.type()).unit());
      ConvertEach<arrow::Time64Array>(
          arr, out, [per](const auto& t, int64_t i) { return Value(FormatTimeOfDay(t.Value(i), per)); });
      return;
    }
  }
}

// Decimals: their exact decimal text. REQUIRES: a DECIMAL32/64/128/256 array.
void ConvertDecimals(const arrow::Array& arr, std::vector<Value>* out) {
  using T = arrow::Type;
  ConvertEach<arrow::FixedSizeBinaryArray>(arr, out, [&](const auto&, int64_t i) {
    if (arr.type_id() == T::DECIMAL128) return Value(static_cast<const arrow::Decimal128Array&>(arr).FormatValue(i));
    if (arr.type_id() == T::DECIMAL256) return Value(static_cast<const arrow::Decimal256Array&>(arr).FormatValue(i));
    if (arr.type_id() == T::DECIMAL64) return Value(static_cast<const arrow::Decimal64Array&>(arr).FormatValue(i));
    return Value(static_cast<const arrow::Decimal32Array&>(arr).FormatValue(i));
  });
}

Status Convert(const arrow::Array& arr, const std::string& column, std::vector<Value>* out) {
  using T = arrow::Type;
  const int64_t n = arr.length();
  out->reserve(out->size() + static_cast<size_t>(n));
  switch (arr.type_id()) {
    case T::NA:
      for (int64_t i = 0; i < n; ++i) out->emplace_back();
      return Status::OK();
    case T::BOOL:
      ConvertEach<arrow::BooleanArray>(arr, out, [](const auto& b, int64_t i) { return Value(b.Value(i)); });
      return Status::OK();
    case T::INT8: ConvertInts<arrow::Int8Array>(arr, out); return Status::OK();
    case T::INT16: ConvertInts<arrow::Int16Array>(arr, out); return Status::OK();
    case T::INT32: ConvertInts<arrow::Int32Array>(arr, out); return Status::OK();
    case T::INT64: ConvertInts<arrow::Int64Array>(arr, out); return Status::OK();
    case T::UINT8: ConvertInts<arrow::UInt8Array>(arr, out); return Status::OK();
    case T::UINT16: ConvertInts<arrow::UInt16Array>(arr, out); return Status::OK();
    case T::UINT32: ConvertInts<arrow::UInt32Array>(arr, out); return Status::OK();
    case T::DURATION: ConvertInts<arrow::DurationArray>(arr, out); return Status::OK();
    case T::UINT64:  // above INT64_MAX: a double
      ConvertEach<arrow::UInt64Array>(arr, out, [](const auto& u, int64_t i) {
        return u.Value(i) > static_cast<uint64_t>(INT64_MAX) ? Value(static_cast<double>(u.Value(i)))
                                                             : Value(static_cast<int64_t>(u.Value(i)));
      });
      return Status::OK();
    case T::HALF_FLOAT:
      ConvertEach<arrow::HalfFloatArray>(arr, out, [](const auto& h, int64_t i) {
        return Value(arrow::util::Float16::FromBits(h.Value(i)).ToDouble());
      });
      return Status::OK();
    case T::FLOAT:
      ConvertEach<arrow::FloatArray>(arr, out,
                                     [](const auto& f, int64_t i) { return Value(static_cast<double>(f.Value(i))); });
      return Status::OK();
    case T::DOUBLE:
      ConvertEach<arrow::DoubleArray>(arr, out, [](const auto& f, int64_t i) { return Value(f.Value(i)); });
      return Status::OK();
    case T::STRING: ConvertStrings<arrow::StringArray>(arr, false, out); return Status::OK();
    case T::LARGE_STRING: ConvertStrings<arrow::LargeStringArray>(arr, false, out); return Status::OK();
    case T::STRING_VIEW: ConvertStrings<arrow::StringViewArray>(arr, false, out); return Status::OK();
    case T::BINARY: ConvertStrings<arrow::BinaryArray>(arr, true, out); return Status::OK();
    case T::LARGE_BINARY: ConvertStrings<arrow::LargeBinaryArray>(arr, true, out); return Status::OK();
    case T::BINARY_VIEW: ConvertStrings<arrow::BinaryViewArray>(arr, true, out); return Status::OK();
    case T::FIXED_SIZE_BINARY: ConvertStrings<arrow::FixedSizeBinaryArray>(arr, true, out); return Status::OK();
    case T::LIST: return ConvertList<arrow::ListArray>(arr, column, out);
    case T::LARGE_LIST: return ConvertList<arrow::LargeListArray>(arr, column, out);
    case T::FIXED_SIZE_LIST: return ConvertList<arrow::FixedSizeListArray>(arr, column, out);
    case T::LIST_VIEW: return ConvertListView<arrow::ListViewArray>(arr, column, out);
    case T::LARGE_LIST_VIEW: return ConvertListView<arrow::LargeListViewArray>(arr, column, out);
    case T::MAP: return ConvertMap(arr, column, out);
    case T::STRUCT: return ConvertStruct(arr, column, out);
    case T::DICTIONARY: return ConvertDictionary(arr, column, out);
    case T::TIMESTAMP:
    case T::DATE32:
    case T::DATE64:
    case T::TIME32:
    case T::TIME64: ConvertTemporal(arr, out); return Status::OK();
    case T::DECIMAL32:
    case T::DECIMAL64:
    case T::DECIMAL128:
    case T::DECIMAL256: ConvertDecimals(arr, out); return Status::OK();
    case T::EXTENSION: return Convert(*static_cast<const arrow::ExtensionArray&>(arr).storage(), column, out);
    default: return Unsupported(column, *arr.type());
  }
}

Status BatchToRows(const arrow::RecordBatch& batch, std::vector<Value>* rows) {
  const int nc = batch.num_columns();
  const auto n = static_cast<size_t>(batch.num_rows());
  std::vector<std::vector<Value>> cols(static_cast<size_t>(nc));
  for (int c = 0; c < nc; ++c) {
    MMIRAGE_TRY(Convert(*batch.column(c), batch.schema()->field(c)->name(), &cols[static_cast<size_t>(c)]));
  }
  rows->clear();
  rows->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Value::Object obj;
    obj.reserve(static_cast<size_t>(nc));
    for (int c = 0; c < nc; ++c)
      obj.emplace_back(batch.schema()->field(c)->name(), std::move(cols[static_cast<size_t>(c)][i]));
    rows->emplace_back(std::move(obj));
  }
  return Status::OK();
}

// An IPC stream cut at a message boundary reads as a shorter stream: require the end-of-stream marker
// (0xFFFFFFFF 0x00000000) that every complete stream written by Arrow >= 0.15 ends with.
Status CheckStreamEnd(const std::string& path, arrow::io::RandomAccessFile* f) {
  auto size = f->GetSize();
  if (!size.ok()) return Status::IOError(path + ": " + ArrowMessage(size.status()));
  if (*size < 8) return Status::Corruption(path + ": not an Arrow IPC stream (file too short)");
  uint8_t tail[8];
  auto n = f->ReadAt(*size - 8, 8, tail);
  if (!n.ok() || *n != 8) return Status::IOError(path + ": cannot read the end of the file");
  static const uint8_t kEos[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  arrow::Status st = f->Seek(0);  // ReadAt leaves the implicit position undefined
  if (!st.ok()) return Status::IOError(path + ": " + ArrowMessage(st));
  if (std::memcmp(tail, kEos, 8) != 0)
    return Status::Corruption(path + ": truncated Arrow IPC stream (no end-of-stream marker)");
  return Status::OK();
}

}  // namespace

namespace arrow_module {

// ---- reading ----------------------------------------------------------------------------------------------------

// Rows [range.begin, range.end) of a part, one record batch (chunk) decoded at a time.
class ArrowPartReader final : public RowReader {
 public:
  ArrowPartReader(const DatasetPart& p, const RowRange& range) : part(p), begin(range.begin), end(range.end) {}

  DatasetPart part;
  uint64_t begin = 0, end = 0;
  size_t file_index = 0;
  bool file_open = false;
  uint64_t file_start = 0;  // part index of the current file's first row
  uint64_t next_index = 0;  // part index of the first row of the next batch the reader returns
  std::unique_ptr<parquet::arrow::FileReader> pq;
  std::shared_ptr<arrow::RecordBatchReader> reader;
  std::vector<Value> rows;  // decoded rows of the current chunk
  size_t pos = 0;
  uint64_t rows_first = 0;  // part index of rows[0]
  bool done = false;
  // The record batch being decoded, chunk by chunk (a writer may have made batches of 100k+ rows: decoding one
  // whole would hold all its rows as Values at once).
  std::shared_ptr<arrow::RecordBatch> batch;
  int64_t batch_pos = 0;
  uint64_t batch_first = 0;  // part index of batch row 0
  static constexpr int64_t kChunkRows = 1024;
  int64_t chunk_rows = kChunkRows;

  // Decodes the next chunk of `batch` into rows; false when the batch is used up.
  Result<bool> DecodeChunk() {
    if (!batch || batch_pos >= batch->num_rows()) {
      batch.reset();
      return false;
    }
    if (batch_pos == 0) {  // rows per chunk: at most 1024, fewer for big rows (about 16 MiB of Arrow data)
      int64_t bytes = 0;   // (of the whole buffers a sliced batch shares: an overestimate, which is safe)
      for (int c = 0; c < batch->num_columns(); ++c) bytes += arrow::util::TotalBufferSize(*batch->column(c));
      int64_t per_row = std::max<int64_t>(1, bytes / std::max<int64_t>(1, batch->num_rows()));
      chunk_rows = std::clamp<int64_t>((16 << 20) / per_row, 1, kChunkRows);
    }
    int64_t take = std::min<int64_t>(chunk_rows, batch->num_rows() - batch_pos);
    auto slice = (batch_pos == 0 && take == batch->num_rows()) ? batch : batch->Slice(batch_pos, take);
    Status cs = BatchToRows(*slice, &rows);
    if (!cs.ok()) return Fail(cs);
    pos = 0;
    rows_first = batch_first + static_cast<uint64_t>(batch_pos);
    batch_pos += take;
    return true;
  }

  Status Fail(const arrow::Status& st) const {
    return Status::Corruption(part.files[file_index] + ": " + ArrowMessage(st));
  }
  Status Fail(const Status& st) const { return Status::Corruption(part.files[file_index] + ": " + st.message()); }

  // Opens part.files[file_index]; next_index = file_start.
  Status OpenFile() {
    const std::string& path = part.files[file_index];
    Result<std::shared_ptr<arrow::io::RandomAccessFile>> in = OpenInputFile(path);  // local or s3://
    if (!in.ok()) return in.status();
    next_index = file_start;
    if (part.format == DataFormat::kArrowStream) {
      MMIRAGE_TRY(CheckStreamEnd(path, in->get()));
      auto r = arrow::ipc::RecordBatchStreamReader::Open(*in);
      if (!r.ok()) return Fail(r.status());
      reader = *r;
    } else {
      parquet::ReaderProperties props = parquet::default_reader_properties();
      parquet::ArrowReaderProperties aprops;
      aprops.set_batch_size(1024);
      parquet::arrow::FileReaderBuilder builder;
      arrow::Status st = builder.Open(*in, props);
      if (!st.ok()) return Fail(st);
      builder.properties(aprops);
      auto fr = builder.Build();
      if (!fr.ok()) return Fail(fr.status());
      pq = std::move(*fr);
      // Row groups wholly before `begin` are skipped without reading.
      auto md = pq->parquet_reader()->metadata();
      std::vector<int> groups;
      uint64_t at = file_start;
      bool first = true;
      for (int g = 0; g < md->num_row_groups(); ++g) {
        uint64_t rows_in = static_cast<uint64_t>(md->RowGroup(g)->num_rows());
        if (at + rows_in > begin && at < end) {
          if (first) next_index = at;
          first = false;
          groups.push_back(g);
        }
        at += rows_in;
      }
      if (groups.empty()) next_index = at;
      auto r = pq->GetRecordBatchReader(groups);
      if (!r.ok()) return Fail(r.status());
      reader = std::shared_ptr<arrow::RecordBatchReader>(std::move(*r));
    }
    file_open = true;
    return Status::OK();
  }

  // Loads the next batch with rows in range into `rows`; false when the range is exhausted.
  Result<bool> LoadBatch() {
    while (!done) {
      if (next_index >= end) {
        done = true;
        break;
      }
      if (!file_open) {
        if (file_index >= part.files.size()) {
          done = true;
          break;
        }
        MMIRAGE_TRY(OpenFile());
      }
      std::shared_ptr<arrow::RecordBatch> next;
      arrow::Status st = reader->ReadNext(&next);
      if (!st.ok()) return Fail(st);
      if (next == nullptr) {  // end of this file
        if (part.format == DataFormat::kParquet) {
          auto md = pq->parquet_reader()->metadata();
          next_index = file_start + static_cast<uint64_t>(md->num_rows());
        }
        file_start = next_index;
        reader.reset();
        pq.reset();
        file_open = false;
        ++file_index;
        continue;
      }
      uint64_t first = next_index, n = static_cast<uint64_t>(next->num_rows());
      next_index += n;
      if (first + n <= begin) continue;  // wholly before the range: not decoded
      // The IPC reader checks a batch's layout only loosely: offsets, lengths and dictionary indices of a corrupt
      // file would be read out of bounds. A batch is checked in full before any value is decoded.
      if (arrow::Status vs = next->ValidateFull(); !vs.ok()) return Fail(vs);
      uint64_t skip = begin > first ? begin - first : 0;
      uint64_t take = std::min(first + n, end) - (first + skip);
      batch = (skip == 0 && take == n) ? next : next->Slice(static_cast<int64_t>(skip), static_cast<int64_t>(take));
      batch_pos = 0;
      batch_first = first + skip;
      MMIRAGE_ASSIGN_OR_RETURN(bool got, DecodeChunk());
      if (got && !rows.empty()) return true;
    }
    return false;
  }

  Result<bool> Next(Value* row, size_t* out_file_index, uint64_t* row_in_file, uint64_t* index) override {
    while (pos >= rows.size()) {
      MMIRAGE_ASSIGN_OR_RETURN(bool chunk, DecodeChunk());
      if (chunk) continue;
      MMIRAGE_ASSIGN_OR_RETURN(bool more, LoadBatch());
      if (!more) return false;
    }
    *index = rows_first + pos;
    *out_file_index = file_index;
    *row_in_file = *index - file_start;
    *row = std::move(rows[pos++]);
    return true;
  }
};

std::unique_ptr<RowReader> OpenRows(const DatasetPart& part, const RowRange& range) {
  return std::make_unique<ArrowPartReader>(part, range);
}

Result<uint64_t> CountRows(const DatasetPart& part) {
  uint64_t total = 0;
  for (const auto& path : part.files) {
    Result<std::shared_ptr<arrow::io::RandomAccessFile>> in = OpenInputFile(path);  // local or s3://
    if (!in.ok()) return in.status();
    if (part.format == DataFormat::kParquet) {
      parquet::arrow::FileReaderBuilder builder;
      arrow::Status st = builder.Open(*in);
      if (!st.ok()) return Status::Corruption(path + ": " + ArrowMessage(st));
      total += static_cast<uint64_t>(builder.raw_reader()->metadata()->num_rows());
      continue;
    }
    MMIRAGE_TRY(CheckStreamEnd(path, in->get()));
    auto r = arrow::ipc::RecordBatchStreamReader::Open(*in);
    if (!r.ok()) return Status::Corruption(path + ": " + ArrowMessage(r.status()));
    while (true) {
      std::shared_ptr<arrow::RecordBatch> batch;
      arrow::Status st = (*r)->ReadNext(&batch);
      if (!st.ok()) return Status::Corruption(path + ": " + ArrowMessage(st));
      if (batch == nullptr) break;
      total += static_cast<uint64_t>(batch->num_rows());
    }
  }
  return total;
}

}  // namespace arrow_module
}  // namespace mmirage

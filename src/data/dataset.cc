#include "data/dataset.h"

#include <cstring>

#include "data/arrow_reader.h"

namespace mmirage {
namespace {

bool HasGlobChars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

Result<std::vector<std::string>> ExpandPattern(Env* env, const std::string& pattern, const char* what = "a JSONL") {
  if (pattern.empty()) return Status::InvalidArgument("dataset path is empty");
  if (!HasGlobChars(pattern)) {
    if (!env->FileExists(pattern)) return Status::NotFound("dataset file not found: " + pattern);
    if (env->IsDirectory(pattern)) {
      return Status::InvalidArgument(std::string("dataset path is a directory, expected ") + what +
                                     " file or glob: " + pattern);
    }
    return std::vector<std::string>{pattern};
  }
  MMIRAGE_ASSIGN_OR_RETURN(auto files, env->Glob(pattern));
  std::vector<std::string> regular;
  for (auto& f : files) {
    if (env->IsRegularFile(f)) regular.push_back(std::move(f));
  }
  if (regular.empty()) return Status::NotFound("no file matches dataset pattern '" + pattern + "'");
  return regular;
}

}  // namespace

bool IsBlankLine(std::string_view line) {
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  }
  return true;
}

Result<std::vector<DatasetPart>> ResolveDatasetParts(Env* env, const std::string& path,
                                                     const std::vector<std::pair<std::string, std::string>>& splits) {
  std::vector<DatasetPart> parts;
  if (splits.empty()) {
    MMIRAGE_ASSIGN_OR_RETURN(auto files, ExpandPattern(env, path));
    parts.push_back(DatasetPart{"", std::move(files)});
    return parts;
  }
  for (const auto& [split, pattern] : splits) {
    auto files = ExpandPattern(env, pattern);
    if (!files.ok()) return files.status().WithContext("split '" + split + "'");
    parts.push_back(DatasetPart{split, std::move(*files)});
  }
  return parts;
}

Result<std::vector<DatasetPart>> ResolveDatasetParts(Env* env, const std::string& type, const std::string& path,
                                                     const std::vector<std::pair<std::string, std::string>>& splits) {
  if (type == "loadable") {
    if (!splits.empty())
      return Status::InvalidArgument(
          "type 'loadable' takes one save_to_disk directory as path, not a split map "
          "(a DatasetDict directory is read split by split)");
    return ResolveHfDataset(env, path);
  }
  if (type != "parquet") return ResolveDatasetParts(env, path, splits);
  std::vector<DatasetPart> parts;
  auto add = [&](const std::string& split, const std::string& pattern) -> Status {
    auto files = ExpandPattern(env, pattern, "a Parquet");
    if (!files.ok()) return split.empty() ? files.status() : files.status().WithContext("split '" + split + "'");
    parts.push_back(DatasetPart{split, std::move(*files), DataFormat::kParquet});
    return Status::OK();
  };
  if (splits.empty()) {
    MMIRAGE_TRY(add("", path));
  } else {
    for (const auto& [split, pattern] : splits) MMIRAGE_TRY(add(split, pattern));
  }
  return parts;
}

Result<uint64_t> CountRows(Env* env, const DatasetPart& part) {
  if (part.format != DataFormat::kJsonl) return CountArrowRows(part);
  uint64_t n = 0;
  for (const auto& f : part.files) {
    MMIRAGE_ASSIGN_OR_RETURN(auto reader, LineReader::Open(env, f));
    std::string_view line;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
      if (!more) break;
      if (!IsBlankLine(line)) ++n;
    }
  }
  return n;
}

RowRange ShardRange(uint64_t n, uint64_t num_shards, uint64_t shard_id) {
  uint64_t q = n / num_shards, r = n % num_shards;
  RowRange range;
  range.begin = q * shard_id + (shard_id < r ? shard_id : r);
  range.end = range.begin + q + (shard_id < r ? 1 : 0);
  return range;
}

RowStream::RowStream(Env* env, DatasetPart part, RowRange range) : env_(env), part_(std::move(part)), range_(range) {
  if (part_.format != DataFormat::kJsonl) arrow_ = std::make_unique<ArrowRowSource>(part_, range_);
}

RowStream::~RowStream() = default;

Result<bool> RowStream::Next(RawRow* row) {
  if (arrow_) {
    while (true) {
      size_t file_index;
      uint64_t row_in_file, index;
      MMIRAGE_ASSIGN_OR_RETURN(bool more, arrow_->Next(&arrow_row_, &file_index, &row_in_file, &index));
      if (!more) return false;
      if (filter_ != nullptr) {
        while (filter_pos_ < filter_->size() && (*filter_)[filter_pos_] < index) ++filter_pos_;
        if (filter_pos_ >= filter_->size()) return false;  // no wanted row left
        if ((*filter_)[filter_pos_] != index) continue;
      }
      row->index = index;
      row->file = &part_.files[file_index];
      row->line = row_in_file;
      row->text = std::string_view();
      row->value = &arrow_row_;
      return true;
    }
  }
  while (next_index_ < range_.end) {
    if (!reader_) {
      if (file_index_ >= part_.files.size()) return false;
      MMIRAGE_ASSIGN_OR_RETURN(reader_, LineReader::Open(env_, part_.files[file_index_]));
    }
    std::string_view line;
    MMIRAGE_ASSIGN_OR_RETURN(bool more, reader_->Next(&line));
    if (!more) {
      reader_.reset();
      ++file_index_;
      continue;
    }
    if (IsBlankLine(line)) continue;
    uint64_t index = next_index_++;
    if (index < range_.begin) continue;
    if (filter_ != nullptr) {
      while (filter_pos_ < filter_->size() && (*filter_)[filter_pos_] < index) ++filter_pos_;
      if (filter_pos_ >= filter_->size()) return false;  // no wanted row left
      if ((*filter_)[filter_pos_] != index) continue;
    }
    row->index = index;
    row->file = &part_.files[file_index_];
    row->line = reader_->line_number();
    row->text = line;
    row->value = nullptr;
    return true;
  }
  return false;
}

}  // namespace mmirage

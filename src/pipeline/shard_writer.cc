#include "pipeline/shard_writer.h"

#include <random>

#include "data/json.h"

namespace mmirage::pipeline {
namespace {

std::string RandomHex32() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 2; ++i) {
    uint64_t x = rng();
    for (int j = 0; j < 16; ++j) s.push_back(kHex[(x >> (4 * j)) & 15]);
  }
  return s;
}

}  // namespace

Result<std::unique_ptr<ShardWriter>> ShardWriter::Open(Env* env, const std::string& output_dir, int64_t shard_id,
                                                       const std::vector<std::string>& splits) {
  std::string final_dir = JoinPath(output_dir, "shard_" + std::to_string(shard_id));
  std::string tmp = final_dir + ".tmp." + env->Hostname() + "." + std::to_string(env->Pid()) + "." + RandomHex32();
  MMIRAGE_TRY(env->CreateDirs(output_dir));
  MMIRAGE_TRY(env->RemoveAll(tmp));
  MMIRAGE_TRY(env->CreateDirs(tmp));
  std::unique_ptr<ShardWriter> w(new ShardWriter(env, final_dir, tmp));
  w->splits_ = splits;
  bool split_map = !(splits.size() == 1 && splits[0].empty());
  for (const auto& s : splits) {
    std::string dir = split_map ? JoinPath(tmp, s) : tmp;
    if (split_map) MMIRAGE_TRY(env->CreateDirs(dir));
    MMIRAGE_ASSIGN_OR_RETURN(auto f, env->NewWritableFile(JoinPath(dir, "data.jsonl")));
    w->files_.push_back(std::move(f));
  }
  if (split_map) {
    Value names = Value::EmptyArray();
    for (const auto& s : splits) names.Push(s);
    Value dd = Value::EmptyObject();
    dd.Set("splits", names);
    MMIRAGE_TRY(WriteFileAtomically(env, JoinPath(tmp, "dataset_dict.json"), ToJson(dd) + "\n"));
  }
  MMIRAGE_ASSIGN_OR_RETURN(w->errors_, env->NewWritableFile(JoinPath(tmp, "errors.jsonl")));
  return w;
}

ShardWriter::ShardWriter(Env* env, std::string final_dir, std::string tmp_dir)
    : env_(env), final_dir_(std::move(final_dir)), tmp_dir_(std::move(tmp_dir)) {}

ShardWriter::~ShardWriter() {
  if (!closed_) Abandon();
}

Status ShardWriter::Add(size_t split_index, const Value& row) {
  if (!status_.ok()) return status_;
  line_.clear();
  AppendJson(row, &line_);
  line_.push_back('\n');
  status_ = files_[split_index]->Append(line_);
  if (status_.ok()) ++rows_written_;
  return status_;
}

Status ShardWriter::AddSerialized(size_t split_index, std::string_view lines, int64_t rows) {
  if (!status_.ok()) return status_;
  status_ = files_[split_index]->Append(lines);
  if (status_.ok()) rows_written_ += rows;
  return status_;
}

Status ShardWriter::AddError(size_t split_index, uint64_t row_index, const std::string& source,
                             const RowError& error) {
  if (!status_.ok()) return status_;
  Value e = Value::EmptyObject();
  e.Set("row_index", static_cast<int64_t>(row_index));
  if (!splits_[split_index].empty()) e.Set("split", splits_[split_index]);
  e.Set("source", source);
  e.Set("stage", StageName(error.stage));
  e.Set("message", error.message);
  status_ = errors_->Append(ToJson(e) + "\n");
  if (status_.ok()) ++rows_failed_;
  return status_;
}

Status ShardWriter::Finish() {
  if (!status_.ok()) {
    Abandon();
    return status_;
  }
  for (auto& f : files_) {
    if (status_.ok()) status_ = f->Sync();
    if (status_.ok()) status_ = f->Close();
  }
  if (status_.ok()) status_ = errors_->Sync();
  if (status_.ok()) status_ = errors_->Close();
  bool split_map = !(splits_.size() == 1 && splits_[0].empty());
  if (split_map) {
    for (const auto& s : splits_) {
      if (status_.ok()) status_ = env_->SyncDir(JoinPath(tmp_dir_, s));
    }
  }
  if (status_.ok()) status_ = env_->SyncDir(tmp_dir_);
  if (status_.ok()) {
    if (env_->FileExists(final_dir_)) {
      Status ex = env_->ExchangeFiles(tmp_dir_, final_dir_);
      if (ex.ok()) {
        status_ = env_->RemoveAll(tmp_dir_);  // now holds the previous content
      } else if (ex.IsUnavailable()) {
        // No atomic exchange on this file system: move the old one aside first (brief window without a shard).
        std::string old = tmp_dir_ + ".old";
        status_ = env_->RenameFile(final_dir_, old);
        if (status_.ok()) status_ = env_->RenameFile(tmp_dir_, final_dir_);
        if (status_.ok()) status_ = env_->RemoveAll(old);
      } else {
        status_ = ex;
      }
    } else {
      status_ = env_->RenameFile(tmp_dir_, final_dir_);
    }
  }
  if (status_.ok()) status_ = env_->SyncDir(Dirname(final_dir_));
  closed_ = true;
  if (!status_.ok()) (void)env_->RemoveAll(tmp_dir_);
  return status_;
}

void ShardWriter::Abandon() {
  files_.clear();
  errors_.reset();
  (void)env_->RemoveAll(tmp_dir_);
  closed_ = true;
}

}  // namespace mmirage::pipeline

#include "pipeline/shard_writer.h"

#include <algorithm>
#include <cstdio>

#include "data/json.h"
#include "util/log.h"

namespace mmirage::pipeline {
namespace {

constexpr const char* kJournal = "journal.json";
constexpr const char* kRecord = "_mmirage.json";

std::string Hex(uint64_t x) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

int64_t GetInt(const Value& v, const char* key) {
  const Value* x = v.Find(key);
  return x != nullptr && x->is_int() ? x->as_int() : -1;
}

bool IsSplitMap(const std::vector<std::string>& splits) { return !(splits.size() == 1 && splits[0].empty()); }

// Why a journal cannot be resumed from ("" when it can): every count and offset must be a non-negative integer
// and every offset within its file, so that resuming only ever truncates (never extends a file with NUL bytes,
// never fails on every attempt).
std::string JournalProblem(Env* env, const Value& journal, const std::vector<std::string>& split_dirs,
                           const std::string& work_dir) {
  const Value::Array& splits = journal.Find("splits")->as_array();
  auto offset_ok = [&](const std::string& path, int64_t offset, bool may_be_absent) -> std::string {
    if (offset < 0) return path + ": offset missing or negative";
    auto size = env->GetFileSize(path);
    if (!size.ok()) return may_be_absent && offset == 0 ? "" : path + ": missing";
    if (static_cast<uint64_t>(offset) > *size) {
      return path + ": shorter (" + std::to_string(*size) + " bytes) than committed (" + std::to_string(offset) + ")";
    }
    return "";
  };
  for (size_t i = 0; i < split_dirs.size(); ++i) {
    const Value& js = splits[i];
    if (!js.is_object() || GetInt(js, "rows_done") < 0 || GetInt(js, "rows_written") < 0) return "bad split counts";
    if (auto p = offset_ok(JoinPath(split_dirs[i], "data.jsonl"), GetInt(js, "data_bytes"), false); !p.empty()) {
      return p;
    }
  }
  if (GetInt(journal, "rows_failed") < 0) return "bad rows_failed";
  if (auto p = offset_ok(JoinPath(work_dir, "errors.jsonl"), GetInt(journal, "errors_bytes"), false); !p.empty()) {
    return p;
  }
  int64_t usage = std::max<int64_t>(0, GetInt(journal, "usage_bytes"));
  if (auto p = offset_ok(JoinPath(work_dir, "usage.jsonl"), usage, true); !p.empty()) return p;
  return "";
}

}  // namespace

std::optional<CompletedShard> ReadCompletedShard(Env* env, const std::string& output_dir, int64_t shard_id) {
  auto text = env->ReadFileToString(JoinPath(JoinPath(output_dir, "shard_" + std::to_string(shard_id)), kRecord));
  if (!text.ok()) return std::nullopt;
  auto v = ParseJson(*text);
  if (!v.ok() || !v->is_object()) return std::nullopt;
  const Value* fp = v->Find("fingerprint");
  if (fp == nullptr || !fp->is_string()) return std::nullopt;
  CompletedShard c;
  c.fingerprint = std::strtoull(fp->as_string().c_str(), nullptr, 16);
  c.rows_written = GetInt(*v, "rows_written");
  c.rows_failed = GetInt(*v, "rows_failed");
  if (c.rows_written < 0 || c.rows_failed < 0) return std::nullopt;
  return c;
}

ShardWriter::ShardWriter(Env* env, const ShardWriterOptions& options)
    : env_(env),
      options_(options),
      final_dir_(JoinPath(options.output_dir, "shard_" + std::to_string(options.shard_id))),
      work_dir_(final_dir_ + ".tmp.partial") {}

ShardWriter::~ShardWriter() {
  if (!closed_) Abandon();
}

Result<std::unique_ptr<ShardWriter>> ShardWriter::Open(Env* env, const ShardWriterOptions& options) {
  std::unique_ptr<ShardWriter> w(new ShardWriter(env, options));
  MMIRAGE_TRY(env->CreateDirs(options.output_dir));
  auto lock = env->LockFile(JoinPath(options.output_dir, ".shard_" + std::to_string(options.shard_id) + ".lock"));
  if (!lock.ok()) {
    return lock.status().WithContext("shard " + std::to_string(options.shard_id) +
                                     " is being written by another process");
  }
  w->lock_ = std::move(*lock);
  MMIRAGE_TRY(w->Start());
  return w;
}

// Resumes the work directory when its journal matches, else starts it afresh.
Status ShardWriter::Start() {
  const bool split_map = IsSplitMap(options_.splits);
  for (const auto& s : options_.splits) {
    Split sp;
    sp.name = s;
    sp.dir = split_map ? JoinPath(work_dir_, s) : work_dir_;
    splits_.push_back(std::move(sp));
  }
  auto journal_text = env_->ReadFileToString(JoinPath(work_dir_, kJournal));
  std::optional<Value> journal;
  if (journal_text.ok()) {
    auto v = ParseJson(*journal_text);
    const Value* fp = v.ok() ? v->Find("fingerprint") : nullptr;
    const Value* sp = v.ok() ? v->Find("splits") : nullptr;
    if (fp && fp->is_string() && fp->as_string() != Hex(options_.fingerprint)) {
      LOG_WARN("shard " << options_.shard_id << ": the config or its input files changed since the partial output "
                        << "in " << work_dir_ << " was written; restarting the shard from scratch");
    }
    if (fp && fp->is_string() && fp->as_string() == Hex(options_.fingerprint) && sp && sp->is_array() &&
        sp->size() == splits_.size()) {
      std::vector<std::string> dirs;
      for (const auto& s : splits_) dirs.push_back(s.dir);
      std::string problem = JournalProblem(env_, *v, dirs, work_dir_);
      if (problem.empty()) {
        journal = *v;
      } else {
        LOG_WARN("shard " << options_.shard_id << ": the journal does not match its files (" << problem
                          << "); restarting the shard from scratch");
      }
    }
  }
  if (journal) {
    // Truncate every file to its committed size: bytes written after the last commit are not trusted.
    for (size_t i = 0; i < splits_.size(); ++i) {
      const Value& js = journal->Find("splits")->as_array()[i];
      Split& s = splits_[i];
      s.rows_done = static_cast<uint64_t>(GetInt(js, "rows_done"));
      s.data_bytes = static_cast<uint64_t>(GetInt(js, "data_bytes"));
      s.rows_written = GetInt(js, "rows_written");
      rows_written_ += s.rows_written;
      MMIRAGE_TRY(env_->TruncateFile(JoinPath(s.dir, "data.jsonl"), s.data_bytes));
    }
    errors_bytes_ = static_cast<uint64_t>(GetInt(*journal, "errors_bytes"));
    rows_failed_ = GetInt(*journal, "rows_failed");
    MMIRAGE_TRY(env_->TruncateFile(JoinPath(work_dir_, "errors.jsonl"), errors_bytes_));
    usage_bytes_ = static_cast<uint64_t>(std::max<int64_t>(0, GetInt(*journal, "usage_bytes")));
    if (env_->FileExists(JoinPath(work_dir_, "usage.jsonl")))
      MMIRAGE_TRY(env_->TruncateFile(JoinPath(work_dir_, "usage.jsonl"), usage_bytes_));
    resumed_ = true;
  } else {
    MMIRAGE_TRY(env_->RemoveAll(work_dir_));
    MMIRAGE_TRY(env_->CreateDirs(work_dir_));
    for (const auto& s : splits_) MMIRAGE_TRY(env_->CreateDirs(s.dir));
    if (split_map) {
      Value names = Value::EmptyArray();
      for (const auto& s : splits_) names.Push(s.name);
      Value dd = Value::EmptyObject();
      dd.Set("splits", names);
      MMIRAGE_TRY(WriteFileAtomically(env_, JoinPath(work_dir_, "dataset_dict.json"), ToJson(dd) + "\n"));
    }
  }
  for (auto& s : splits_) {
    MMIRAGE_ASSIGN_OR_RETURN(s.file, env_->NewWritableFile(JoinPath(s.dir, "data.jsonl"), /*append=*/resumed_));
  }
  MMIRAGE_ASSIGN_OR_RETURN(errors_, env_->NewWritableFile(JoinPath(work_dir_, "errors.jsonl"), resumed_));
  if (!resumed_) MMIRAGE_TRY(WriteJournal());  // a fresh work dir is resumable (from row 0) at once
  return Status::OK();
}

Status ShardWriter::AddSerialized(size_t split_index, std::string_view lines, int64_t rows) {
  if (!status_.ok()) return status_;
  Split& s = splits_[split_index];
  status_ = s.file->Append(lines);
  if (status_.ok()) {
    s.data_bytes += lines.size();
    s.rows_written += rows;
    rows_written_ += rows;
  }
  return status_;
}

Status ShardWriter::AddUsage(std::string_view lines) {
  if (!status_.ok() || lines.empty()) return status_;
  if (!usage_) {  // created on first use: model-free shards have none
    auto f = env_->NewWritableFile(JoinPath(work_dir_, "usage.jsonl"), /*append=*/true);
    if (!f.ok()) return status_ = f.status();
    usage_ = std::move(*f);
  }
  status_ = usage_->Append(lines);
  if (status_.ok()) usage_bytes_ += lines.size();
  return status_;
}

Status ShardWriter::AddError(size_t split_index, uint64_t row_index, const std::string& source,
                             const RowError& error) {
  if (!status_.ok()) return status_;
  Value e = Value::EmptyObject();
  e.Set("row_index", static_cast<int64_t>(row_index));
  if (!splits_[split_index].name.empty()) e.Set("split", splits_[split_index].name);
  e.Set("source", source);
  e.Set("stage", StageName(error.stage));
  e.Set("message", error.message);
  line_.clear();
  AppendJson(e, &line_);
  line_.push_back('\n');
  status_ = errors_->Append(line_);
  if (status_.ok()) {
    errors_bytes_ += line_.size();
    ++rows_failed_;
  }
  return status_;
}

Status ShardWriter::AddWarning(size_t split_index, uint64_t row_index, const std::string& source,
                               const RowError& warning) {
  if (!status_.ok()) return status_;
  Value e = Value::EmptyObject();
  e.Set("row_index", static_cast<int64_t>(row_index));
  if (!splits_[split_index].name.empty()) e.Set("split", splits_[split_index].name);
  e.Set("source", source);
  e.Set("stage", StageName(warning.stage));
  e.Set("level", "warning");
  e.Set("message", warning.message);
  line_.clear();
  AppendJson(e, &line_);
  line_.push_back('\n');
  return AddWarningLine(line_);
}

Status ShardWriter::AddWarningLine(std::string_view line) {
  if (!status_.ok()) return status_;
  std::string l(line);
  if (l.empty() || l.back() != '\n') l.push_back('\n');
  status_ = errors_->Append(l);
  if (status_.ok()) errors_bytes_ += l.size();
  return status_;
}

Status ShardWriter::WriteJournal() {
  Value splits = Value::EmptyArray();
  for (const auto& s : splits_) {
    Value js = Value::EmptyObject();
    js.Set("name", s.name);
    js.Set("rows_done", static_cast<int64_t>(s.rows_done));
    js.Set("data_bytes", static_cast<int64_t>(s.data_bytes));
    js.Set("rows_written", s.rows_written);
    splits.Push(js);
  }
  Value j = Value::EmptyObject();
  j.Set("fingerprint", Hex(options_.fingerprint));
  j.Set("splits", splits);
  j.Set("errors_bytes", static_cast<int64_t>(errors_bytes_));
  j.Set("usage_bytes", static_cast<int64_t>(usage_bytes_));
  j.Set("rows_failed", rows_failed_);
  return WriteFileAtomically(env_, JoinPath(work_dir_, kJournal), ToJson(j) + "\n");
}

Status ShardWriter::Commit() {
  if (!status_.ok()) return status_;
  // Data first, journal last: the journal never points past bytes that are not on disk.
  for (auto& s : splits_) {
    status_ = s.file->Sync();
    if (!status_.ok()) return status_;
  }
  status_ = errors_->Sync();
  if (status_.ok() && usage_) status_ = usage_->Sync();
  if (status_.ok()) status_ = WriteJournal();
  return status_;
}

Status ShardWriter::Finish() {
  if (status_.ok()) status_ = Commit();
  for (auto& s : splits_) {
    if (status_.ok()) status_ = s.file->Close();
  }
  if (status_.ok()) status_ = errors_->Close();
  if (status_.ok() && usage_) status_ = usage_->Close();
  if (status_.ok() && options_.output_format != OutputFormat::kJsonl) {
    // Convert the journaled JSONL into the output format; a failure (e.g. a column with conflicting types) leaves
    // the work directory as it was, unpublished.
    for (const auto& s : splits_) {
      std::string jsonl = JoinPath(s.dir, "data.jsonl");
      auto rows = JsonlRowSource(env_, jsonl);
      auto written = WriteArrowOutput(env_, rows.get(), s.dir, options_.output_format);
      if (!written.ok()) {
        status_ = written.status().WithContext(s.name.empty() ? "converting the shard's rows"
                                                               : "converting split '" + s.name + "'");
        break;
      }
    }
  }
  if (status_.ok()) {
    Value rec = Value::EmptyObject();
    rec.Set("fingerprint", Hex(options_.fingerprint));
    rec.Set("rows_written", rows_written_);
    rec.Set("rows_failed", rows_failed_);
    status_ = WriteFileAtomically(env_, JoinPath(work_dir_, kRecord), ToJson(rec) + "\n");
  }
  if (status_.ok()) status_ = env_->RemoveFile(JoinPath(work_dir_, kJournal));
  // The journaled JSONL goes once the journal does (a crash before this resumes; after it, starts afresh).
  if (options_.output_format != OutputFormat::kJsonl) {
    for (const auto& s : splits_)
      if (status_.ok()) status_ = env_->RemoveFile(JoinPath(s.dir, "data.jsonl"));
  }
  if (status_.ok()) {
    for (const auto& s : splits_)
      if (status_.ok() && s.dir != work_dir_) status_ = env_->SyncDir(s.dir);
  }
  if (status_.ok()) status_ = env_->SyncDir(work_dir_);
  if (status_.ok()) {
    if (env_->FileExists(final_dir_)) {
      Status ex = env_->ExchangeFiles(work_dir_, final_dir_);
      if (ex.ok()) {
        status_ = env_->RemoveAll(work_dir_);  // now holds the previous content
      } else if (ex.IsUnavailable()) {
        // No atomic exchange on this file system: move the old one aside first (brief window without a shard).
        std::string old = work_dir_ + ".old";
        status_ = env_->RenameFile(final_dir_, old);
        if (status_.ok()) status_ = env_->RenameFile(work_dir_, final_dir_);
        if (status_.ok()) status_ = env_->RemoveAll(old);
      } else {
        status_ = ex;
      }
    } else {
      status_ = env_->RenameFile(work_dir_, final_dir_);
    }
  }
  if (status_.ok()) status_ = env_->SyncDir(Dirname(final_dir_));
  splits_.clear();
  errors_.reset();
  usage_.reset();
  closed_ = true;
  lock_.reset();
  return status_;
}

void ShardWriter::Abandon() {
  // Unsynced bytes past the last commit are dropped at the next Open (the journal decides).
  splits_.clear();
  errors_.reset();
  usage_.reset();
  closed_ = true;
  lock_.reset();
}

void ShardWriter::Discard() {
  splits_.clear();
  errors_.reset();
  usage_.reset();
  (void)env_->RemoveAll(work_dir_);
  closed_ = true;
  lock_.reset();
}

}  // namespace mmirage::pipeline

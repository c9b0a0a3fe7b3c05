// Work directory: `<output_dir>/shard_<id>.tmp.partial/` with `data.jsonl` (or `<split>/data.jsonl` per split, plus
// `dataset_dict.json`), `errors.jsonl`, `usage.jsonl` (per-row tokens, model outputs only) and `journal.json`. Commit()
// fsyncs the files and then replaces the journal (counts, byte offsets and a checksum of the last block of everything
// committed). Open() on a work directory whose journal has the same fingerprint and matches its files truncates the
// files to the committed offsets and resumes: resume_rows() tells the caller how many input rows of each split are
// already handled (written or recorded as failed), so a crash — kill -9 included — loses at most the rows since the
// last commit. Finish() commits, converts each split's data.jsonl to the output format (hf: data-00000-of-00001.arrow +
// state.json + dataset_info.json; parquet: data.parquet), writes `_mmirage.json` (fingerprint, counts) and swaps the
// directory into `<output_dir>/shard_<id>` with one atomic exchange (renameat2), so a reader sees the old complete
// shard or the new complete shard, never a partial one; the parent is synced before the old shard is deleted, and the
// journal is removed only once the new shard is published. An exclusive lock (`.shard_<id>.lock`, hidden) keeps two
// processes off the same shard. Readers (merge) ignore `*.tmp.*`. Not thread-safe: one writer thread.

#include "pipeline/shard_writer.h"

#include <algorithm>

#include "data/json.h"
#include "pipeline/input_identity.h"
#include "util/fnv.h"
#include "util/hex.h"
#include "util/log.h"
#include "util/parse_int.h"

namespace mmirage::pipeline {
namespace {

constexpr const char* kJournal = "journal.json";
constexpr const char* kRecord = "_mmirage.json";
constexpr const char* kIdentity = "identity.json";  // what the fingerprint was computed from, written once

int64_t GetInt(const Value& v, const char* key) {
  const Value* x = v.is_object() ? v.Find(key) : nullptr;
  return x != nullptr && x->is_int() ? x->as_int() : -1;
}

std::string GetString(const Value& v, const char* key) {
  const Value* x = v.is_object() ? v.Find(key) : nullptr;
  return x != nullptr && x->is_string() ? x->as_string() : "";
}

bool IsSplitMap(const std::vector<std::string>& splits) { return !(splits.size() == 1 && splits[0].empty()); }

// The check of a file's last committed block: hash of the last min(kCheckBytes, size) bytes of `tail`.
std::string TailCheck(const std::string& tail) {
  size_t n = std::min<size_t>(tail.size(), ShardWriter::kCheckBytes);
  return Hex64(Fnv1a64(std::string_view(tail).substr(tail.size() - n)));
}

// Why `path` cannot be resumed at `offset` with check `check` ("" when it can; then *tail holds the bytes the
// check covers). An absent file is fine for offset 0 when `may_be_absent`.
std::string FileProblem(Env* env, const std::string& path, int64_t offset, const std::string& check, bool may_be_absent,
                        std::string* tail) {
  tail->clear();
  if (offset < 0) return path + ": committed offset missing, negative or not an integer";
  auto size = env->GetFileSize(path);
  if (!size.ok()) return may_be_absent && offset == 0 ? "" : path + ": missing";
  if (static_cast<uint64_t>(offset) > *size) {
    return path + ": shorter (" + std::to_string(*size) + " bytes) than committed (" + std::to_string(offset) + ")";
  }
  uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(offset), ShardWriter::kCheckBytes);
  auto file = env->NewSequentialFile(path);
  if (!file.ok()) return path + ": unreadable (" + file.status().message() + ")";
  if (!(*file)->Skip(static_cast<uint64_t>(offset) - n).ok()) return path + ": unreadable";
  tail->resize(n);
  size_t got = 0;
  while (got < n) {
    auto k = (*file)->Read(n - got, tail->data() + got);
    if (!k.ok() || *k == 0) return path + ": unreadable before the committed offset";
    got += *k;
  }
  if (TailCheck(*tail) != check) {
    return path + ": the last committed block (" + std::to_string(n) + " bytes before offset " +
           std::to_string(offset) + ") does not match its checksum";
  }
  return "";
}

// Removes the journal from the shard directory `dir`, and the journaled data.jsonl from each of its tables (the
// directory or a split's) that holds hf or parquet files; syncs what changed.
// `durable` = false leaves the removals unsynced: a published shard's leftover journal is tidied on the next run
// (TidyPublished), so Finish need not wait for one more directory sync.
Status RemoveJournal(Env* env, const std::string& dir, bool durable = true) {
  std::vector<std::string> tables = {dir};
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<std::string> children, env->GetChildren(dir));
  for (const auto& c : children)
    if (env->IsDirectory(JoinPath(dir, c))) tables.push_back(JoinPath(dir, c));
  for (const auto& t : tables) {
    std::string jsonl = JoinPath(t, "data.jsonl");
    if ((env->IsRegularFile(JoinPath(t, "state.json")) || env->IsRegularFile(JoinPath(t, "data.parquet"))) &&
        env->FileExists(jsonl)) {
      MMIRAGE_TRY(env->RemoveFile(jsonl));
      if (t != dir && durable) MMIRAGE_TRY(env->SyncDir(t));
    }
  }
  // identity.json goes too: the published shard keeps the identity in _mmirage.json.
  if (env->FileExists(JoinPath(dir, kIdentity))) MMIRAGE_TRY(env->RemoveFile(JoinPath(dir, kIdentity)));
  if (env->FileExists(JoinPath(dir, kJournal))) MMIRAGE_TRY(env->RemoveFile(JoinPath(dir, kJournal)));
  return durable ? env->SyncDir(dir) : Status::OK();
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
  c.fingerprint = ParseUint64(fp->as_string(), 16).value_or(0);  // 0: matches no config
  c.rows_written = GetInt(*v, "rows_written");
  c.rows_failed = GetInt(*v, "rows_failed");
  if (const Value* id = v->Find("identity")) c.identity = *id;
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
  MMIRAGE_TRY(CreateDirsDurably(env, options.output_dir));
  auto lock = env->LockFile(JoinPath(options.output_dir, ".shard_" + std::to_string(options.shard_id) + ".lock"));
  if (!lock.ok()) {
    return lock.status().WithContext("shard " + std::to_string(options.shard_id) +
                                     " is being written by another process");
  }
  w->lock_ = std::move(*lock);
  MMIRAGE_TRY(w->Start());
  return w;
}

Status ShardWriter::TidyPublished(Env* env, const std::string& output_dir, int64_t shard_id) {
  const std::string dir = JoinPath(output_dir, "shard_" + std::to_string(shard_id));
  if (!env->FileExists(JoinPath(dir, kJournal))) return Status::OK();
  auto lock = env->LockFile(JoinPath(output_dir, ".shard_" + std::to_string(shard_id) + ".lock"));
  if (!lock.ok()) return lock.status();
  return RemoveJournal(env, dir);
}

std::string ShardWriter::JournalProblem(const Value& journal) {
  const Value* sp = journal.Find("splits");
  if (sp == nullptr || !sp->is_array() || sp->size() != splits_.size()) return "its splits do not match the config";
  int64_t rows_done = 0;
  for (size_t i = 0; i < splits_.size(); ++i) {
    const Value& js = sp->as_array()[i];
    Split& s = splits_[i];
    int64_t done = GetInt(js, "rows_done"), written = GetInt(js, "rows_written"), bytes = GetInt(js, "data_bytes");
    std::string what = s.name.empty() ? "" : " of split '" + s.name + "'";
    if (!js.is_object() || GetString(js, "name") != s.name)
      return "split " + std::to_string(i) + " is not '" + s.name + "'";
    if (done < 0 || written < 0) return "row counts" + what + " missing, negative or not integers";
    if (bytes < 0) { return JoinPath(s.dir, "data.jsonl") + ": committed offset missing, negative or not an integer"; }
    // Each row is at least "{}\n": more rows than bytes, or than rows handled, cannot be.
    if (written > done || written > bytes || (written == 0) != (bytes == 0)) {
      return "row counts" + what + " out of range (rows_done " + std::to_string(done) + ", rows_written " +
             std::to_string(written) + ", data_bytes " + std::to_string(bytes) + ")";
    }
    if (i < options_.split_rows.size() && static_cast<uint64_t>(done) > options_.split_rows[i]) {
      return "rows_done" + what + " (" + std::to_string(done) + ") beyond the shard's " +
             std::to_string(options_.split_rows[i]) + " rows";
    }
    rows_done += done;
    std::string p =
        FileProblem(env_, JoinPath(s.dir, "data.jsonl"), bytes, GetString(js, "data_check"), false, &s.data_tail);
    if (!p.empty()) return p;
  }
  int64_t failed = GetInt(journal, "rows_failed");
  if (failed < 0 || failed > rows_done) return "rows_failed out of range (" + std::to_string(failed) + ")";
  std::string p = FileProblem(env_, JoinPath(work_dir_, "errors.jsonl"), GetInt(journal, "errors_bytes"),
                              GetString(journal, "errors_check"), false, &errors_tail_);
  if (!p.empty()) return p;
  return FileProblem(env_, JoinPath(work_dir_, "usage.jsonl"), GetInt(journal, "usage_bytes"),
                     GetString(journal, "usage_check"), true, &usage_tail_);
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
  const std::string journal_path = JoinPath(work_dir_, kJournal);
  const std::string who = "shard " + std::to_string(options_.shard_id) + " of " + options_.output_dir + ": ";
  std::optional<Value> journal;
  if (env_->FileExists(journal_path)) {
    auto text = env_->ReadFileToString(journal_path);
    auto v = text.ok() ? ParseJson(*text) : Result<Value>(text.status());
    const Value* fp = v.ok() && v->is_object() ? v->Find("fingerprint") : nullptr;
    if (fp == nullptr || !fp->is_string()) {
      LOG_WARN(who << "the journal " << journal_path << " is unreadable ("
                   << (!text.ok() ? text.status().message()
                       : !v.ok()  ? "not JSON: " + v.status().message()
                                  : std::string("no fingerprint"))
                   << "); the partial output is discarded and the shard restarts from scratch");
    } else if (fp->as_string() != Hex64(options_.fingerprint)) {
      Value old_id;
      if (auto t = env_->ReadFileToString(JoinPath(work_dir_, kIdentity)); t.ok()) {
        if (auto parsed = ParseJson(*t); parsed.ok()) old_id = std::move(*parsed);
      }
      std::string why = options_.identity.is_object() ? DescribeIdentityChange(old_id, options_.identity)
                                                      : "the config or its input files changed";
      LOG_WARN(who << why << " since the partial output in " << work_dir_
                   << " was written; it is discarded and the shard restarts from scratch");
    } else if (std::string problem = JournalProblem(*v); !problem.empty()) {
      LOG_WARN(who << "the journal " << journal_path << " does not match its files (" << problem
                   << "); the partial output is discarded and the shard restarts from scratch");
    } else {
      journal = std::move(*v);
    }
  }
  if (!journal) return StartFresh();
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
  usage_bytes_ = static_cast<uint64_t>(GetInt(*journal, "usage_bytes"));
  if (env_->FileExists(JoinPath(work_dir_, "usage.jsonl")))
    MMIRAGE_TRY(env_->TruncateFile(JoinPath(work_dir_, "usage.jsonl"), usage_bytes_));
  resumed_ = true;
  for (auto& s : splits_) {
    MMIRAGE_ASSIGN_OR_RETURN(s.file, env_->NewWritableFile(JoinPath(s.dir, "data.jsonl"), /*append=*/true));
  }
  MMIRAGE_ASSIGN_OR_RETURN(errors_, env_->NewWritableFile(JoinPath(work_dir_, "errors.jsonl"), /*append=*/true));
  return Status::OK();
}

Status ShardWriter::StartFresh() {
  for (auto& s : splits_) s.data_tail.clear();
  errors_tail_.clear();
  usage_tail_.clear();
  MMIRAGE_TRY(env_->RemoveAll(work_dir_));
  MMIRAGE_TRY(env_->CreateDirs(work_dir_));
  for (const auto& s : splits_) MMIRAGE_TRY(env_->CreateDirs(s.dir));
  if (IsSplitMap(options_.splits)) {
    Value names = Value::EmptyArray();
    for (const auto& s : splits_) names.Push(s.name);
    Value dd = Value::EmptyObject();
    dd.Set("splits", names);
    MMIRAGE_TRY(WriteFileAtomically(env_, JoinPath(work_dir_, "dataset_dict.json"), ToJson(dd) + "\n"));
  }
  for (auto& s : splits_) {
    MMIRAGE_ASSIGN_OR_RETURN(s.file, env_->NewWritableFile(JoinPath(s.dir, "data.jsonl")));
    MMIRAGE_TRY(s.file->Sync());  // the journal below names it: it must exist after a crash
  }
  MMIRAGE_ASSIGN_OR_RETURN(errors_, env_->NewWritableFile(JoinPath(work_dir_, "errors.jsonl")));
  MMIRAGE_TRY(errors_->Sync());
  if (!options_.identity.is_null()) {
    MMIRAGE_TRY(WriteFileAtomicallyUnsyncedDir(env_, JoinPath(work_dir_, kIdentity), ToJson(options_.identity) + "\n"));
  }
  // A fresh work dir is resumable (from row 0) at once. Its entries become durable with the directory syncs below,
  // one per directory; a journal that outlives a crash without the files it names is a mismatch, and the shard
  // restarts from scratch (Start).
  MMIRAGE_TRY(WriteJournal(/*sync_dir=*/false));
  for (const auto& s : splits_)
    if (s.dir != work_dir_) MMIRAGE_TRY(env_->SyncDir(s.dir));
  MMIRAGE_TRY(env_->SyncDir(work_dir_));
  return env_->SyncDir(options_.output_dir);
}

Status ShardWriter::Append(WritableFile* file, std::string* tail, uint64_t* bytes, std::string_view data) {
  status_ = file->Append(data);
  if (!status_.ok()) return status_;
  *bytes += data.size();
  tail->append(data);
  if (tail->size() > 2 * kCheckBytes) tail->erase(0, tail->size() - kCheckBytes);
  return status_;
}

Status ShardWriter::AddSerialized(size_t split_index, std::string_view lines, int64_t rows) {
  if (!status_.ok()) return status_;
  Split& s = splits_[split_index];
  if (Append(s.file.get(), &s.data_tail, &s.data_bytes, lines).ok()) {
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
  return Append(usage_.get(), &usage_tail_, &usage_bytes_, lines);
}

Status ShardWriter::AddError(size_t split_index, uint64_t row_index, const std::string& source, const RowError& error) {
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
  if (Append(errors_.get(), &errors_tail_, &errors_bytes_, line_).ok()) ++rows_failed_;
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
  return Append(errors_.get(), &errors_tail_, &errors_bytes_, l);
}

Status ShardWriter::WriteJournal(bool sync_dir) {
  Value splits = Value::EmptyArray();
  for (const auto& s : splits_) {
    Value js = Value::EmptyObject();
    js.Set("name", s.name);
    js.Set("rows_done", static_cast<int64_t>(s.rows_done));
    js.Set("data_bytes", static_cast<int64_t>(s.data_bytes));
    js.Set("data_check", TailCheck(s.data_tail));
    js.Set("rows_written", s.rows_written);
    splits.Push(js);
  }
  Value j = Value::EmptyObject();
  j.Set("format_version", kShardFormatVersion);
  j.Set("fingerprint", Hex64(options_.fingerprint));
  j.Set("splits", splits);
  j.Set("errors_bytes", static_cast<int64_t>(errors_bytes_));
  j.Set("errors_check", TailCheck(errors_tail_));
  j.Set("usage_bytes", static_cast<int64_t>(usage_bytes_));
  j.Set("usage_check", TailCheck(usage_tail_));
  j.Set("rows_failed", rows_failed_);
  const std::string path = JoinPath(work_dir_, kJournal);
  return sync_dir ? WriteFileAtomically(env_, path, ToJson(j) + "\n")
                  : WriteFileAtomicallyUnsyncedDir(env_, path, ToJson(j) + "\n");
}

Status ShardWriter::Commit() {
  if (status_.ok()) status_ = CommitUnsyncedDir();
  if (status_.ok()) status_ = env_->SyncDir(work_dir_);
  return status_;
}

Status ShardWriter::CommitUnsyncedDir() {
  if (!status_.ok()) return status_;
  // Data first, journal last: the journal never points past bytes that are not on disk.
  for (auto& s : splits_) {
    status_ = s.file->Sync();
    if (!status_.ok()) return status_;
  }
  status_ = errors_->Sync();
  if (status_.ok() && usage_) status_ = usage_->Sync();
  if (status_.ok()) status_ = WriteJournal(/*sync_dir=*/false);
  return status_;
}

// Durability order (LevelDB-style): everything in the work directory is durable (files and directories synced,
// journal still present) before it is swapped in; the parent directory is synced after the swap and before the
// previous shard (now in the work directory) is deleted; the journal goes only once the new shard is published.
// A crash at any point leaves either a resumable work directory or a published shard (whose leftover journal
// TidyPublished removes).
Status ShardWriter::Finish() {
  // The last commit's journal and the record below are made durable by one sync of the work directory (each
  // directory sync is a disk cache flush); until then a crash resumes from the commit before.
  if (status_.ok()) status_ = CommitUnsyncedDir();
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
        (void)env_->SyncDir(work_dir_);  // the last commit stays resumable
        break;
      }
    }
  }
  if (status_.ok()) {
    Value rec = Value::EmptyObject();
    rec.Set("fingerprint", Hex64(options_.fingerprint));
    rec.Set("rows_written", rows_written_);
    rec.Set("rows_failed", rows_failed_);
    if (!options_.identity.is_null()) rec.Set("identity", options_.identity);
    status_ = WriteFileAtomicallyUnsyncedDir(env_, JoinPath(work_dir_, kRecord), ToJson(rec) + "\n");
  }
  if (status_.ok()) {
    for (const auto& s : splits_)
      if (status_.ok() && s.dir != work_dir_) status_ = env_->SyncDir(s.dir);
  }
  if (status_.ok()) status_ = env_->SyncDir(work_dir_);  // the journal, the record and every file: before publishing
  if (status_.ok()) status_ = Publish();
  // Published: the journal (and the journaled JSONL of hf/parquet) go from the published directory.
  if (status_.ok()) status_ = RemoveJournal(env_, final_dir_, /*durable=*/false);
  splits_.clear();
  errors_.reset();
  usage_.reset();
  closed_ = true;
  lock_.reset();
  return status_;
}

Status ShardWriter::Publish() {
  const std::string parent = Dirname(final_dir_);
  // A leftover of an earlier crash in the fallback below: the shard it held was superseded.
  const std::string old = work_dir_ + ".old";
  if (env_->FileExists(old)) MMIRAGE_TRY(env_->RemoveAll(old));
  if (!env_->FileExists(final_dir_)) {
    MMIRAGE_TRY(env_->RenameFile(work_dir_, final_dir_));
    return env_->SyncDir(parent);
  }
  Status ex = env_->ExchangeFiles(work_dir_, final_dir_);
  if (ex.ok()) {
    MMIRAGE_TRY(env_->SyncDir(parent));       // the exchange is durable before the previous shard goes
    MMIRAGE_TRY(env_->RemoveAll(work_dir_));  // now holds the previous content
    return env_->SyncDir(parent);
  }
  if (!ex.IsUnavailable()) return ex;
  // No atomic exchange on this file system: move the old one aside first (brief window without a shard; a crash
  // there leaves the new shard resumable in the work directory and the old one in `.old`, removed above).
  MMIRAGE_TRY(env_->RenameFile(final_dir_, old));
  MMIRAGE_TRY(env_->RenameFile(work_dir_, final_dir_));
  MMIRAGE_TRY(env_->SyncDir(parent));
  MMIRAGE_TRY(env_->RemoveAll(old));
  return env_->SyncDir(parent);
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

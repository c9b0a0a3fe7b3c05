// ShardWriter: writes one dataset's output for one shard, durably and resumably, and publishes it atomically
// (model: LevelDB's TableBuilder — sticky status, ends in Finish(), Abandon() or Discard()). Rows go to a work
// directory `<output_dir>/shard_<id>.tmp.partial/`; Commit() makes them durable, so a crash (kill -9 included) loses
// at most the rows since the last commit and Open() resumes at the committed rows. Finish() converts to the output
// format and swaps the result into `<output_dir>/shard_<id>` atomically: a reader sees the old or the new complete
// shard, never a partial one. An exclusive lock (`.shard_<id>.lock`) keeps two processes off the same shard;
// readers (merge) ignore `*.tmp.*`. Errors: sticky status() (I/O). Not thread-safe: one writer thread.
// Details of the work directory and the commit protocol: shard_writer.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/hf_writer.h"
#include "data/value.h"
#include "pipeline/row_transform.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::pipeline {

struct ShardWriterOptions {
  std::string output_dir;
  int64_t shard_id = 0;
  std::vector<std::string> splits;  // split names ("" alone for a single table)
  uint64_t fingerprint = 0;         // identifies config + shard: a journal of another fingerprint is discarded
  // What the fingerprint was computed from (pipeline/input_identity.h), kept in the journal and _mmirage.json so
  // that a later mismatch can say what changed; null when the caller has none.
  Value identity;
  // Input rows of each split this shard covers (UINT64_MAX or absent: unknown): a journal claiming more is corrupt.
  std::vector<uint64_t> split_rows;
  // What Finish() publishes. The journal is JSONL whatever the format (bytes tagged, data/tagged_json.h, for
  // hf/parquet); hf and parquet are converted from it when the shard is published (data/hf_writer.h), so resume
  // works the same for every format.
  OutputFormat output_format = OutputFormat::kJsonl;
};

// A published shard output and what it holds (from its `_mmirage.json`).
struct CompletedShard {
  uint64_t fingerprint = 0;
  int64_t rows_written = 0;
  int64_t rows_failed = 0;
  Value identity;  // null when the record predates identities
};

// The published `<output_dir>/shard_<id>`'s record, or nullopt when there is none (or it predates this format).
std::optional<CompletedShard> ReadCompletedShard(Env* env, const std::string& output_dir, int64_t shard_id);

class ShardWriter {
 public:
  // Journal format (journal.json, docs/state_format.md; the identity is in identity.json, written once):
  // {"format_version", "fingerprint", "splits": [{"name", "rows_done", "data_bytes", "data_check", "rows_written"}],
  // "errors_bytes", "errors_check", "usage_bytes", "usage_check", "rows_failed"}. A `*_check` is the hash (16 hex) of
  // the last min(kCheckBytes, offset) bytes before the committed offset. Open() resumes only when every offset is
  // within its file and every check matches; otherwise (or for an unreadable journal, out-of-range numbers, a missing
  // file) it warns naming the file and what was wrong and starts the shard from scratch — it never extends a file and
  // never fails because of what it found.
  static constexpr uint64_t kCheckBytes = 4096;

  // After a crash between publishing and removing the journal, the published shard still holds journal.json (and,
  // for hf/parquet, the journaled data.jsonl): removes them. Takes the shard's lock; kUnavailable when another
  // process holds it.
  static Status TidyPublished(Env* env, const std::string& output_dir, int64_t shard_id);

  // Errors: kUnavailable when another process holds the shard's lock; I/O errors.
  static Result<std::unique_ptr<ShardWriter>> Open(Env* env, const ShardWriterOptions& options);
  ~ShardWriter();  // like Abandon() when neither Finish, Abandon nor Discard was called
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  bool resumed() const { return resumed_; }
  // Input rows of split `i` handled by earlier attempts (0 when starting fresh).
  uint64_t resume_rows(size_t split_index) const { return splits_[split_index].rows_done; }

  // Appends `rows` serialised rows (one JSON object per line, each ending in '\n') to the split's file.
  Status AddSerialized(size_t split_index, std::string_view lines, int64_t rows);
  // Appends one failed row to errors.jsonl: {"row_index", "split", "source", "stage", "message"}.
  Status AddError(size_t split_index, uint64_t row_index, const std::string& source, const RowError& error);
  // Appends a warning about a row that was written (e.g. a custom function's fallback_value) to errors.jsonl:
  // the same keys plus "level": "warning". Not counted in rows_failed; `retry` does not redo such rows.
  Status AddWarning(size_t split_index, uint64_t row_index, const std::string& source, const RowError& warning);
  // Appends an errors.jsonl line verbatim (a warning line of an earlier attempt, kept on retry).
  Status AddWarningLine(std::string_view line);
  // Appends per-row token usage lines (ProcessedBatch::usage) to usage.jsonl.
  Status AddUsage(std::string_view lines);
  // Records that `rows` more input rows of the split were handled (what Commit makes durable).
  void Advance(size_t split_index, uint64_t rows) { splits_[split_index].rows_done += rows; }
  // Makes everything added so far durable and resumable.
  Status Commit();

  // Commit, then publish atomically. After Finish the writer is closed.
  Status Finish();
  // Closes without publishing; the work directory stays so that the next attempt resumes from the last commit.
  void Abandon();
  // Closes and removes the work directory.
  void Discard();

  int64_t rows_written() const { return rows_written_; }
  int64_t rows_failed() const { return rows_failed_; }
  const std::string& final_dir() const { return final_dir_; }
  Status status() const { return status_; }

 private:
  struct Split {
    std::string name;
    std::string dir;  // where its data.jsonl lives
    std::unique_ptr<WritableFile> file;
    uint64_t rows_done = 0;   // input rows handled
    uint64_t data_bytes = 0;  // bytes appended to data.jsonl
    std::string data_tail;    // its last bytes (at least min(kCheckBytes, data_bytes))
    int64_t rows_written = 0;
  };
  ShardWriter(Env* env, const ShardWriterOptions& options);
  Status Start();
  // Why the parsed journal cannot be resumed from ("" when it can); fills the tails on success.
  std::string JournalProblem(const Value& journal);
  Status StartFresh();
  Status Append(WritableFile* file, std::string* tail, uint64_t* bytes, std::string_view data);
  // Replaces the journal durably; with sync_dir = false the caller syncs work_dir_ (Finish: with the record).
  Status WriteJournal(bool sync_dir = true);
  // Commit's data syncs and journal, the latter's directory sync left to the caller.
  Status CommitUnsyncedDir();
  Status Publish();

  Env* env_;
  ShardWriterOptions options_;
  std::string final_dir_;
  std::string work_dir_;
  std::unique_ptr<Env::FileLock> lock_;
  std::vector<Split> splits_;
  std::unique_ptr<WritableFile> errors_;
  uint64_t errors_bytes_ = 0;
  std::string errors_tail_;
  std::unique_ptr<WritableFile> usage_;
  uint64_t usage_bytes_ = 0;
  std::string usage_tail_;
  std::string line_;  // reused serialisation buffer
  int64_t rows_written_ = 0;
  int64_t rows_failed_ = 0;
  bool resumed_ = false;
  bool closed_ = false;
  Status status_;
};

}  // namespace mmirage::pipeline

// Failed rows, reported so that a user can act on them without opening errors.jsonl.
// FirstFailures: the first few failed rows of a shard, read back from its errors.jsonl files, as lines
// ("data.jsonl:17 [render_prompt] line 1: 'x' is undefined") for stderr; the rest stay in the files.
// SummarizeFailures: the same over every shard of a config, for the end of a multi-shard run (local workers,
// SLURM), whose workers' own lines went to other logs.
// Thread-safety: pure functions of the files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/env.h"

namespace mmirage::pipeline {

// Up to `max_rows` lines "<source FILE:LINE> [<stage>] <message>" from the errors.jsonl files in order, followed by
// "... and N more in <file>" when there are more. Warnings about rows that were written ("level": "warning") are
// not failed rows and are skipped. Unreadable files or lines are skipped (this is a report).
std::vector<std::string> FirstFailures(Env* env, const std::vector<std::string>& error_files, size_t max_rows = 5);

// Logs FirstFailures' lines as warnings: "failed row: <line>" (the closing "... and N more" line as it is).
void LogFailedRows(const std::vector<std::string>& lines);

struct FailureSummary {
  int64_t rows_failed = 0;         // failed rows (not warnings) over all files
  std::vector<std::string> files;  // errors.jsonl files holding failed rows, dataset then shard order
  std::vector<std::string> first;  // FirstFailures over `files`
  // "6 row(s) failed in 2 shard(s); see out/shard_0/errors.jsonl, out/shard_1/errors.jsonl" (at most 3 paths,
  // then "and N more"); empty when no row failed.
  std::string Headline() const;
};

// The failed rows recorded in the published shards `<output_dir>/shard_<id>/errors.jsonl` of every dataset of
// `config`, shards 0 … num_shards-1.
FailureSummary SummarizeFailures(Env* env, const config::Config& config, size_t max_rows = 5);

// Logs SummarizeFailures as warnings: the headline, then "failed row: <line>" for the first rows. Nothing when no
// row failed. Returns the number of failed rows.
int64_t LogFailureSummary(Env* env, const config::Config& config);

}  // namespace mmirage::pipeline

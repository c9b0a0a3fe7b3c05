// FirstFailures: the first few failed rows of a shard, read back from its errors.jsonl files, as lines a user can
// act on ("data.jsonl:17 [render_prompt] line 1: 'x' is undefined"), for stderr; the rest stay in the files.
// Thread-safety: a pure function of the files.
#pragma once

#include <string>
#include <vector>

#include "util/env.h"

namespace mmirage::pipeline {

// Up to `max_rows` lines "<source FILE:LINE> [<stage>] <message>" from the errors.jsonl files in order, followed by
// "... and N more in <file>" when there are more. Unreadable files or lines are skipped (this is a report).
std::vector<std::string> FirstFailures(Env* env, const std::vector<std::string>& error_files, size_t max_rows = 5);

}  // namespace mmirage::pipeline

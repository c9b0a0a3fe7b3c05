#include "pipeline/failure_report.h"

#include "data/json.h"
#include "util/log.h"

namespace mmirage::pipeline {
namespace {

bool IsWarning(const Value& v) {
  const Value* level = v.Find("level");
  return level != nullptr && level->is_string() && level->as_string() == "warning";
}

// Calls f(line, parsed) for every non-empty line of `path` that is a failed row (unparsable lines count as
// failed rows with no details: they are in the file for a reason).
template <typename F>
void ForEachFailedRow(Env* env, const std::string& path, F f) {
  auto text = env->ReadFileToString(path);
  if (!text.ok()) return;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos) end = text->size();
    std::string_view line(text->data() + pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto v = ParseJson(line);
    if (v.ok() && v->is_object() && IsWarning(*v)) continue;
    f(v.ok() && v->is_object() ? &*v : nullptr);
  }
}

}  // namespace

std::vector<std::string> FirstFailures(Env* env, const std::vector<std::string>& error_files, size_t max_rows) {
  std::vector<std::string> out;
  size_t more = 0;
  std::vector<std::string> more_files;
  for (const auto& f : error_files) {
    ForEachFailedRow(env, f, [&](const Value* v) {
      if (out.size() >= max_rows) {
        ++more;
        if (more_files.empty() || more_files.back() != f) more_files.push_back(f);
        return;
      }
      if (v == nullptr) return;
      auto str = [&](const char* k) {
        const Value* x = v->Find(k);
        return x != nullptr && x->is_string() ? x->as_string() : std::string("?");
      };
      std::string msg = str("message");
      if (msg.size() > 300) msg = msg.substr(0, 300) + "...";
      out.push_back(str("source") + " [" + str("stage") + "] " + msg);
    });
  }
  if (more > 0) {
    std::string line = "... and " + std::to_string(more) + " more in " + more_files[0];
    if (more_files.size() > 1) line += " and " + std::to_string(more_files.size() - 1) + " other file(s)";
    out.push_back(line);
  }
  return out;
}

std::string FailureSummary::Headline() const {
  if (rows_failed == 0) return "";
  std::string s =
      std::to_string(rows_failed) + " row(s) failed in " + std::to_string(files.size()) + " shard output(s); see ";
  for (size_t i = 0; i < files.size() && i < 3; ++i) s += (i ? ", " : "") + files[i];
  if (files.size() > 3) s += " and " + std::to_string(files.size() - 3) + " more";
  return s;
}

FailureSummary SummarizeFailures(Env* env, const config::Config& config, size_t max_rows) {
  FailureSummary sum;
  for (const auto& dc : config.loading.datasets) {
    for (int64_t id = 0; id < config.loading.num_shards; ++id) {
      std::string f = JoinPath(JoinPath(dc.output_dir, "shard_" + std::to_string(id)), "errors.jsonl");
      if (!env->FileExists(f)) continue;
      int64_t n = 0;
      ForEachFailedRow(env, f, [&](const Value*) { ++n; });
      if (n == 0) continue;
      sum.rows_failed += n;
      sum.files.push_back(f);
    }
  }
  sum.first = FirstFailures(env, sum.files, max_rows);
  return sum;
}

void LogFailedRows(const std::vector<std::string>& lines) {
  for (const auto& line : lines) LOG_WARN((line.rfind("... ", 0) == 0 ? "" : "failed row: ") << line);
}

int64_t LogFailureSummary(Env* env, const config::Config& config) {
  FailureSummary sum = SummarizeFailures(env, config);
  if (sum.rows_failed == 0) return 0;
  LOG_WARN(sum.Headline());
  LogFailedRows(sum.first);
  return sum.rows_failed;
}

}  // namespace mmirage::pipeline

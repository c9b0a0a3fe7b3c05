#include "pipeline/failure_report.h"

#include "data/json.h"

namespace mmirage::pipeline {

std::vector<std::string> FirstFailures(Env* env, const std::vector<std::string>& error_files, size_t max_rows) {
  std::vector<std::string> out;
  size_t more = 0;
  std::string more_file;
  for (const auto& f : error_files) {
    auto text = env->ReadFileToString(f);
    if (!text.ok()) continue;
    size_t pos = 0;
    while (pos < text->size()) {
      size_t end = text->find('\n', pos);
      if (end == std::string::npos) end = text->size();
      std::string_view line(text->data() + pos, end - pos);
      pos = end + 1;
      if (line.empty()) continue;
      if (out.size() >= max_rows) {
        ++more;
        if (more_file.empty()) more_file = f;
        continue;
      }
      auto v = ParseJson(line);
      if (!v.ok() || !v->is_object()) continue;
      auto str = [&](const char* k) {
        const Value* x = v->Find(k);
        return x != nullptr && x->is_string() ? x->as_string() : std::string("?");
      };
      std::string msg = str("message");
      if (msg.size() > 300) msg = msg.substr(0, 300) + "...";
      out.push_back(str("source") + " [" + str("stage") + "] " + msg);
    }
  }
  if (more > 0) out.push_back("... and " + std::to_string(more) + " more in " + more_file);
  return out;
}

}  // namespace mmirage::pipeline

#include "cli/common.h"

#include <iostream>

#include "util/log.h"

namespace mmirage::cli {

void AddCommonOptions(CLI::App* cmd, CommonOptions* opts, bool require_config) {
  if (require_config) { cmd->add_option("--config,-c", opts->config_path, "MMIRAGE YAML config file")->required(); }
  cmd->add_option("--log-level", opts->log_level, "DEBUG, INFO, WARNING or ERROR")
      ->check(CLI::IsMember({"DEBUG", "INFO", "WARNING", "ERROR"}, CLI::ignore_case));
}

bool ApplyLogLevel(const CommonOptions& opts) {
  LogLevel level;
  if (!ParseLogLevel(opts.log_level, &level)) {
    std::cerr << "error: invalid --log-level '" << opts.log_level << "'\n";
    return false;
  }
  SetLogLevel(level);
  return true;
}

void ReportError(const Status& s) {
  std::string msg = s.message();
  size_t start = 0;
  while (start <= msg.size()) {
    size_t nl = msg.find('\n', start);
    std::string line = msg.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (line.rfind("warning: ", 0) == 0) std::cerr << line << "\n";
    else if (!line.empty()) std::cerr << "error: " << line << "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
}

std::optional<config::Config> LoadConfigOrReport(const std::string& path, std::optional<int64_t> shard_override) {
  config::LoadOptions lo;
  lo.shard_id_override = shard_override;
  auto c = config::LoadConfig(path, lo);
  if (!c.ok()) {
    ReportError(c.status());
    return std::nullopt;
  }
  for (const auto& w : c->warnings) std::cerr << "warning: " << w << "\n";
  return std::move(*c);
}

}  // namespace mmirage::cli

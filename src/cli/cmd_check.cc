// `mmirage check`: per-shard status from the state directory; `--retry` re-runs the retryable failed shards
// (locally; SLURM resubmission comes with the SLURM executor).
#include <algorithm>
#include <cctype>
#include <iostream>
#include <memory>

#include "cli/shard_commands.h"
#include "exec/local_executor.h"
#include "cli/slurm_cli.h"
#include "data/json.h"
#include "util/log.h"
#include "util/process.h"

namespace mmirage::cli {
namespace {

std::string JoinIds(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

struct CheckOptions {
  CommonOptions common;
  bool retry = false;
  bool yes = false;
  bool json = false;
  bool stats = false;
  std::vector<std::string> metadata_paths;
};

int Check(const CheckOptions& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path);
  if (!config) return kExitFailure;
  if (config->FindProcessor("batch_api")) {
    std::cerr << "error: checking batch_api jobs is not available in this build yet\n";
    return kExitFailure;
  }
  Env* env = Env::Default();
  exec::ClassifyOptions co = exec::ClassifyOptionsFromConfig(env, *config);
  exec::Classification c = exec::ClassifyShards(co);
  PrintClassification(c, o.json);
  if (!o.retry || c.failed.empty()) return c.AllSucceeded() ? kExitOk : kExitFailure;
  return RetryShards(*config, co, c, RetryRequest{o.yes, o.json, o.stats, o.common.log_level});
}

}  // namespace

void PrintClassification(const exec::Classification& c, bool json) {
  for (const auto& d : c.shards) {
    if (!d.stale_reason.empty()) {
      LOG_WARN("Shard " << d.shard_id << " is recorded as running but " << d.stale_reason << "; counted as failed");
    }
    if (d.shard_class == exec::ShardClass::kExhausted) {
      LOG_WARN("Shard " << d.shard_id << " exceeded retry budget (attempts=" << d.attempts
                        << ", max_allowed_attempts=" << c.max_retries + 1 << ")");
    }
  }
  if (json) {
    std::cout << ToJsonPretty(c.ToValue(), 2) << "\n";
  } else {
    std::cout << exec::FormatShardTable(c);
    if (!c.exhausted.empty()) {
      std::cout << "Exhausted shards (" << c.max_retries + 1 << " attempts used): " << JoinIds(c.exhausted) << "\n";
    }
    std::cout << ToJsonPretty(c.SummaryValue(), 2) << "\n";
  }
  std::cout.flush();
}

bool ConfirmRetry(size_t n, bool yes, bool prompt_on_stderr) {
  if (yes) return true;
  if (!StdinIsTerminal()) {
    LOG_ERROR("Interactive confirmation requested but stdin is not a TTY; use --yes");
    return false;
  }
  std::ostream& prompt = prompt_on_stderr ? std::cerr : std::cout;
  prompt << "Retry " << n << " shard(s)? (y/N) " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  auto not_space = [](unsigned char ch) { return !std::isspace(ch); };
  answer.erase(answer.begin(), std::find_if(answer.begin(), answer.end(), not_space));
  answer.erase(std::find_if(answer.rbegin(), answer.rend(), not_space).base(), answer.end());
  for (char& ch : answer) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return answer == "y" || answer == "yes";
}

int RetryShards(const config::Config& config, const exec::ClassifyOptions& co, const exec::Classification& c,
                const RetryRequest& request) {
  if (!ConfirmRetry(c.failed.size(), request.yes, request.json)) return kExitFailure;
  if (config.execution.mode == "slurm") {  // one array job of exactly the retryable shards (--array=1,5,9)
    Status submitted = SubmitSlurmShards(config, c.failed, request.stats);
    if (!submitted.ok()) ReportError(submitted);
    return submitted.ok() ? kExitOk : kExitFailure;
  }
  auto self = SelfExecutablePath();
  if (!self.ok()) {
    ReportError(self.status().WithContext("cannot find the mmirage binary"));
    return kExitFailure;
  }
  LOG_INFO("Retrying failed shards locally: " << JoinIds(c.failed));
  exec::LocalRunOptions lo;
  lo.config_path = Env::Default()->AbsolutePath(config.path);
  lo.binary = *self;
  lo.log_level = request.log_level;
  lo.collect_stats = request.stats;
  lo.shard_ids = c.failed;
  lo.stdout_to_stderr = true;
  (void)exec::RunAllShardsLocally(Env::Default(), config, lo);
  exec::Classification after = exec::ClassifyShards(co);
  PrintClassification(after, request.json);
  return after.AllSucceeded() ? kExitOk : kExitFailure;
}

Runner RegisterCheck(CLI::App* app) {
  auto o = std::make_shared<CheckOptions>();
  auto* cmd = app->add_subcommand("check", "Show per-shard status from the state directory");
  AddCommonOptions(cmd, &o->common);
  cmd->add_flag("--retry", o->retry, "Re-run the retryable failed shards (after confirmation)");
  cmd->add_flag("-y,--yes", o->yes, "Do not ask for confirmation");
  cmd->add_flag("--json", o->json, "Print one JSON object {\"summary\", \"shards\"} instead of the table");
  cmd->add_flag("--stats", o->stats, "Re-run shards with GPU utilisation sampling");
  cmd->add_option("--metadata-path", o->metadata_paths, "batch_api: receipt files (ignored otherwise)");
  return [o]() { return Check(*o); };
}

}  // namespace mmirage::cli

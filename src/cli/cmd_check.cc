// `mmirage check`: per-shard status from the state directory; `--retry` re-runs the retryable failed shards
// (locally; SLURM resubmission comes with the SLURM executor).
#include <algorithm>
#include <cctype>
#include <iostream>
#include <memory>

#include "cli/shard_commands.h"
#include "exec/local_executor.h"
#include "cli/ray_cli.h"
#include "cli/slurm_cli.h"
#include "data/json.h"
#include "batch/shard.h"
#include "batch/provider.h"
#include "util/log.h"
#include "util/process/process_info.h"

namespace mmirage::cli {
namespace {

std::string JoinIds(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

// batch_api configs: the shards (submitted ones with their batches' progress), then MMIRAGE's provider
// status summary, asked of the provider for every batch the journals hold.
int CheckBatches(Env* env, const config::Config& config, bool json) {
  exec::ClassifyOptions co = exec::ClassifyOptionsFromConfig(env, config);
  exec::Classification c = exec::ClassifyShards(co);
  PrintClassification(c, json);
  for (const auto& d : c.shards) {
    if (d.batch.is_null()) continue;
    auto n = [&](const char* k) {
      const Value* v = d.batch.Find(k);
      return v && v->is_int() ? v->as_int() : 0;
    };
    std::cerr << "shard " << d.shard_id << ": batches " << n("batches_completed") << " completed, "
              << n("batches_in_progress") << " in progress, " << n("batches_failed") << " failed; requests "
              << n("requests_done") << "/" << n("requests_total") << " done\n";
  }
  auto batches = batch::ListSubmittedBatches(env, config);
  if (!batches.ok()) {
    ReportError(batches.status());
    return kExitFailure;
  }
  if (batches->empty()) {
    LOG_INFO("No submitted batches found in the state directory " << config.loading.state_dir);
    return c.failed.empty() && c.exhausted.empty() ? kExitOk : kExitFailure;
  }
  const config::Processor* p = config.FindProcessor("batch_api");
  auto provider = batch::BatchProvider::Create(p->batch_api, config::ProcessVarLookup(), env);
  if (!provider.ok()) {
    ReportError(provider.status());
    return kExitFailure;
  }
  std::vector<std::pair<std::string, int64_t>> counts;  // status → count, first-seen order
  bool bad = false;
  for (const auto& b : *batches) {
    auto st = (*provider)->GetStatus(b.batch_id);
    std::string s = st.ok() ? st->status : "lookup_failed";
    if (!st.ok()) LOG_WARN("batch " << b.batch_id << " (shard " << b.shard_id << "): " << st.status().message());
    if (s == "failed" || s == "lookup_failed") bad = true;
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& x) { return x.first == s; });
    if (it == counts.end()) counts.push_back({s, 1});
    else ++it->second;
  }
  std::ostream& out = json ? std::cerr : std::cout;
  out << "\n------------ Batch status summary ------------\n";
  out << "Provider '" << p->batch_api.provider << "' (Total: " << batches->size() << "):\n";
  for (const auto& [s, k] : counts) out << "  - " << s << ": " << k << "/" << batches->size() << "\n";
  out.flush();
  return bad || !c.failed.empty() || !c.exhausted.empty() ? kExitFailure : kExitOk;
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
  Env* env = Env::Default();
  if (batch::IsBatchConfig(*config)) {
    if (o.retry || o.stats) LOG_WARN("--retry and --stats are ignored for batch_api configs.");
    return CheckBatches(env, *config, o.json);
  }
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

// `-y` skips the prompt; without a terminal on stdin → a message and false; otherwise asks
// "Retry <n> shard(s)? (y/N) " (on stderr when `prompt_on_stderr`, so that stdout stays JSON) and accepts "y" and
// "yes" (trimmed, any case).
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
  if (config.execution.mode == "ray") {  // one Ray job of exactly the retryable shards, waited for
    Status ran = RunRayShards(config, c.failed, request.stats);
    if (!ran.ok()) ReportError(ran);
    exec::Classification after = exec::ClassifyShards(co);
    PrintClassification(after, request.json);
    return ran.ok() && after.AllSucceeded() ? kExitOk : kExitFailure;
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

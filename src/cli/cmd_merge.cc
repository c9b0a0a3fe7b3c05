// `mmirage merge` (datasets of a config, consulting the state directory) and `mmirage merge-dir` (any directory
// of shard_* folders).
#include <iostream>
#include <map>
#include <memory>

#include "cli/common.h"
#include "cli/merge_common.h"
#include "exec/batch_merge.h"
#include "exec/merge.h"
#include "state/shard_state.h"
#include "util/log.h"

namespace mmirage::cli {
namespace {

std::string NormalizedBasename(Env* env, const std::string& p) { return Basename(env->AbsolutePath(p)); }

}  // namespace

int MergeAllDatasets(Env* env, const config::Config& config, const MergeTarget& target, bool allow_partial) {
  // Which shards may be merged: the state directory decides.
  std::vector<int64_t> ids, bad;
  std::string bad_desc;
  for (int64_t i = 0; i < config.loading.num_shards; ++i) {
    ShardRecord r = ShardState(env, config.loading.state_dir, i).Read();
    if (r.status == ShardStatus::kSuccess) {
      ids.push_back(i);
    } else {
      bad.push_back(i);
      bad_desc += (bad_desc.empty() ? "" : ", ") + std::to_string(i) + " (" + ShardStatusName(r.status) + ")";
    }
  }
  if (!bad.empty()) {
    if (!allow_partial) {
      LOG_ERROR("Refusing to merge: shard(s) not successful: " << bad_desc
                                                               << ". Run them first, or pass --allow-partial.");
      return kExitFailure;
    }
    LOG_WARN("Merging a partial result; shard(s) not successful: " << bad_desc);
  }
  exec::MergeOptions mo;
  if (!allow_partial) mo.shard_ids = ids;
  else mo.num_shards = config.loading.num_shards;  // never a stale shard_<n> of an earlier, larger run
  // Destination names: duplicates get _<index>.
  std::map<std::string, int> name_count;
  for (const auto& d : config.loading.datasets) name_count[NormalizedBasename(env, d.output_dir)]++;
  for (size_t i = 0; i < config.loading.datasets.size(); ++i) {
    const auto& d = config.loading.datasets[i];
    std::string out;
    if (target.output_root.empty()) {
      out = JoinPath(d.output_dir, "merged");
    } else {
      std::string name = NormalizedBasename(env, d.output_dir);
      if (name.empty() || name == "." || name == "/") name = "dataset_" + std::to_string(i);
      if (name_count[NormalizedBasename(env, d.output_dir)] > 1) name += "_" + std::to_string(i);
      out = JoinPath(target.output_root, name);
    }
    auto rep = exec::MergeDatasetDir(env, d.output_dir, out, mo);
    if (!rep.ok()) {
      LOG_ERROR("Error: " << rep.status().message());
      return kExitFailure;
    }
    LOG_INFO(rep->Summary());
  }
  return kExitOk;
}

Runner RegisterMerge(CLI::App* app) {
  struct Opts {
    CommonOptions common;
    std::string output_root;
    bool allow_partial = false;
    std::string output_path;
    std::vector<std::string> metadata_paths;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app->add_subcommand("merge", "Merge the shard outputs of every dataset of a config");
  AddCommonOptions(cmd, &o->common);
  cmd->add_option("--output-dir,--output-root", o->output_root,
                  "Write <root>/<dataset name> instead of "
                  "<output_dir>/merged");
  cmd->add_flag("--allow-partial", o->allow_partial, "Merge even if some shards are missing or failed");
  cmd->add_option("--output-path", o->output_path, "batch_api: collected results file");
  cmd->add_option("--metadata-path", o->metadata_paths, "batch_api: receipt files");
  return [o]() {
    if (!ApplyLogLevel(o->common)) return kExitUsage;
    auto config = LoadConfigOrReport(o->common.config_path);
    if (!config) return kExitFailure;
    // batch_api: --output-path gives MMIRAGE's results file; without it the published shards (normal
    // datasets once collected) are merged like any other config's.
    if (config->FindProcessor("batch_api") && !o->output_path.empty()) {
      auto merged = exec::MergeBatchResults(Env::Default(), *config, o->output_path, o->metadata_paths);
      if (!merged.ok()) {
        LOG_ERROR(merged.status().message());
        return kExitFailure;
      }
      LOG_INFO("Merged " << merged->rows << " rows and saved to " << o->output_path);
      if (merged->input_tokens || merged->output_tokens)
        LOG_INFO("Provider usage: " << merged->input_tokens << " input tokens, " << merged->output_tokens
                                    << " output tokens");
      return kExitOk;
    }
    return MergeAllDatasets(Env::Default(), *config, MergeTarget{o->output_root}, o->allow_partial);
  };
}

Runner RegisterMergeDir(CLI::App* app) {
  struct Opts {
    CommonOptions common;
    std::string input_dir, output_dir;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app->add_subcommand("merge-dir", "Merge shard_* folders found under a directory (no config)");
  AddCommonOptions(cmd, &o->common, /*require_config=*/false);
  cmd->add_option("--input-dir", o->input_dir, "Directory with shard_* folders, or with datasets that have them")
      ->required();
  cmd->add_option("--output-dir", o->output_dir, "Where merged datasets go")->required();
  return [o]() {
    if (!ApplyLogLevel(o->common)) return kExitUsage;
    Env* env = Env::Default();
    std::string in = env->AbsolutePath(o->input_dir);
    if (!env->IsDirectory(in)) {
      LOG_ERROR("Error: input_dir does not exist or is not a directory: " << in);
      return kExitFailure;
    }
    std::vector<std::pair<std::string, std::string>> jobs;  // input → output
    if (exec::HasShardDirs(env, in)) {
      jobs.emplace_back(in, o->output_dir);
    } else {
      auto children = env->GetChildren(in);
      if (children.ok()) {
        for (const auto& c : *children) {
          std::string sub = JoinPath(in, c);
          if (env->IsDirectory(sub) && exec::HasShardDirs(env, sub)) jobs.emplace_back(sub, JoinPath(o->output_dir, c));
        }
      }
    }
    if (jobs.empty()) {
      LOG_ERROR("Error: No dataset directories with shard_* folders found in " << in << ".");
      return kExitFailure;
    }
    for (const auto& [from, to] : jobs) {
      auto rep = exec::MergeDatasetDir(env, from, to);
      if (!rep.ok()) {
        LOG_ERROR("Error: " << rep.status().message());
        return kExitFailure;
      }
      LOG_INFO(rep->Summary());
    }
    return kExitOk;
  };
}

}  // namespace mmirage::cli

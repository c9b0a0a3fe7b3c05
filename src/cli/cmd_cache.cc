// `mmirage cache stats|clear`: what the generation cache of a config holds, and emptying it.
#include <iostream>
#include <memory>

#include "cache/generation_cache.h"
#include "cli/cache_commands.h"
#include "data/json.h"
#include "util/env.h"
#include "util/process/process_info.h"

namespace mmirage::cli {
namespace {

struct CacheCliOptions {
  CommonOptions common;
  std::string cache_dir;
  std::string format = "table";
  bool yes = false;
};

// --cache-dir, else the config's execution_params.cache_dir. "" after printing an error.
std::string ResolveDir(const CacheCliOptions& o) {
  if (!o.cache_dir.empty()) return o.cache_dir;
  if (o.common.config_path.empty()) {
    std::cerr << "error: give --config or --cache-dir\n";
    return "";
  }
  auto config = LoadConfigOrReport(o.common.config_path);
  return config ? config->execution.cache_dir : "";
}

int Stats(const CacheCliOptions& o) {
  std::string dir = ResolveDir(o);
  if (dir.empty()) return kExitFailure;
  auto info = cache::InspectCacheDir(Env::Default(), dir);
  if (!info.ok()) {
    ReportError(info.status());
    return kExitFailure;
  }
  if (o.format == "json") {
    Value v = Value::EmptyObject();
    v.Set("cache_dir", dir);
    v.Set("sealed_files", info->sealed_files);
    v.Set("open_files", info->open_files);
    v.Set("corrupt_files", info->corrupt_files);
    v.Set("entries", info->entries);
    v.Set("distinct_entries", info->distinct_entries);
    v.Set("bytes", static_cast<int64_t>(info->bytes));
    v.Set("oldest_seal_age_seconds", info->oldest_seal_age_seconds);
    Value notes = Value::EmptyArray();
    for (const auto& n : info->notes) notes.Push(Value(n));
    v.Set("notes", notes);
    std::cout << ToJson(v) << "\n";
    return kExitOk;
  }
  std::cout << "cache_dir         " << dir << "\n"
            << "entries           " << info->distinct_entries << " distinct (" << info->entries << " stored)\n"
            << "size              " << FormatDouble(static_cast<double>(info->bytes) / 1e6) << " MB\n"
            << "files             " << info->sealed_files << " sealed, " << info->open_files << " being written, "
            << info->corrupt_files << " damaged\n"
            << "oldest file       " << FormatDouble(info->oldest_seal_age_seconds / 3600.0) << " h\n";
  for (const auto& n : info->notes) std::cout << "note: " << n << "\n";
  return kExitOk;
}

int Clear(const CacheCliOptions& o) {
  std::string dir = ResolveDir(o);
  if (dir.empty()) return kExitFailure;
  if (!o.yes) {
    if (!StdinIsTerminal()) {
      std::cerr << "error: not clearing " << dir << " without confirmation (stdin is not a terminal); pass -y\n";
      return kExitFailure;
    }
    std::cerr << "Delete every generation cached in " << dir << "? (y/N) ";
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") return kExitFailure;
  }
  auto n = cache::ClearCacheDir(Env::Default(), dir);
  if (!n.ok()) {
    ReportError(n.status());
    return kExitFailure;
  }
  std::cout << "removed " << *n << " cache file(s) from " << dir << "\n";
  return kExitOk;
}

}  // namespace

Runner RegisterCache(CLI::App* app) {
  auto o = std::make_shared<CacheCliOptions>();
  auto* cmd = app->add_subcommand("cache", "The generation cache: stats | clear");
  cmd->require_subcommand(1);
  auto* stats = cmd->add_subcommand("stats", "Entries, size and files of the cache");
  auto* clear = cmd->add_subcommand("clear", "Delete the cache's files (a live writer's file is kept)");
  for (auto* sub : {stats, clear}) {
    sub->add_option("--config,-c", o->common.config_path, "MMIRAGE YAML config file (its cache_dir)");
    AddCommonOptions(sub, &o->common, /*require_config=*/false);
    sub->add_option("--cache-dir", o->cache_dir, "The cache directory (default: the config's cache_dir)");
  }
  stats->add_option("--format", o->format, "table | json")->check(CLI::IsMember({"table", "json"}));
  clear->add_flag("-y,--yes", o->yes, "Do not ask for confirmation");
  return [o, stats]() {
    if (!ApplyLogLevel(o->common)) return kExitUsage;
    return stats->parsed() ? Stats(*o) : Clear(*o);
  };
}

}  // namespace mmirage::cli

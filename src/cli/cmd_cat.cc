// `mmirage cat PATH [-n N] [--split S]`: prints the rows of any output as JSON lines (bytes as base64 strings) — a
// shard directory, a merged directory, an output_dir holding shard_<id> directories (shards in id order), an HF
// save_to_disk Dataset or DatasetDict, or a .parquet, .arrow or JSONL file — so results can be read without Python.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/common.h"
#include "data/output_reader.h"
#include "util/env.h"
#include "util/parse_int.h"

namespace mmirage::cli {
namespace {

// The shard_<id> directories of an output_dir, in id order (work directories `*.tmp.*` are skipped).
std::vector<std::string> ShardDirs(Env* env, const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> shards;
  auto children = env->GetChildren(dir);
  if (!children.ok()) return {};
  for (const auto& c : *children) {
    if (c.rfind("shard_", 0) != 0) continue;
    std::optional<int64_t> id = ParseNonNegativeInt64(std::string_view(c).substr(6));  // nullopt beyond int64
    if (!id || !env->IsDirectory(JoinPath(dir, c))) continue;
    shards.emplace_back(*id, JoinPath(dir, c));
  }
  std::sort(shards.begin(), shards.end());
  std::vector<std::string> out;
  for (auto& s : shards) out.push_back(std::move(s.second));
  return out;
}

}  // namespace

Runner RegisterCat(CLI::App* app) {
  struct Opts {
    std::string path;
    int64_t rows = -1;
    std::string split;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app->add_subcommand("cat",
                                  "Print the rows of an output (shard or merged dir, HF dataset, Parquet or "
                                  "JSONL file) as JSON lines");
  cmd->add_option("path", o->path, "Output directory or file")->required();
  cmd->add_option("-n,--rows", o->rows, "Print at most N rows")->check(CLI::NonNegativeNumber);
  cmd->add_option("--split", o->split, "Only this split of a DatasetDict");
  return [o]() {
    Env* env = Env::Default();
    std::vector<DatasetPart> parts;
    auto resolved = ResolveOutputParts(env, o->path);
    if (resolved.ok()) {
      parts = std::move(*resolved);
    } else {
      auto shards = env->IsDirectory(o->path) ? ShardDirs(env, o->path) : std::vector<std::string>{};
      if (shards.empty()) {
        ReportError(resolved.status());
        return kExitFailure;
      }
      for (const auto& s : shards) {
        auto p = ResolveOutputParts(env, s);
        if (!p.ok()) {
          ReportError(p.status());
          return kExitFailure;
        }
        for (auto& x : *p) parts.push_back(std::move(x));
      }
    }
    if (!o->split.empty()) {
      std::vector<DatasetPart> keep;
      std::string names;
      for (auto& p : parts) {
        if (p.split == o->split) keep.push_back(p);
        if (names.find("'" + p.split + "'") == std::string::npos)
          names += (names.empty() ? "'" : ", '") + p.split + "'";
      }
      if (keep.empty()) {
        ReportError(Status::NotFound(o->path + ": no split '" + o->split +
                                     "' (splits: " + (names == "''" ? std::string("none") : names) + ")"));
        return kExitFailure;
      }
      parts = std::move(keep);
    }
    int64_t printed = 0;
    std::string buf;
    for (auto& part : parts) {
      OutputRows rows(env, part);
      while (o->rows < 0 || printed < o->rows) {
        buf.clear();
        auto more = rows.NextJson(&buf);
        if (!more.ok()) {
          std::fflush(stdout);
          ReportError(more.status());
          return kExitFailure;
        }
        if (!*more) break;
        std::fwrite(buf.data(), 1, buf.size(), stdout);
        ++printed;
      }
    }
    std::fflush(stdout);
    return kExitOk;
  };
}

}  // namespace mmirage::cli

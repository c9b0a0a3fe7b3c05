// `mmirage preview`: options and exit code; the preview itself is exec/preview.h.
#include <iostream>
#include <memory>

#include "cli/common.h"
#include "cli/engine_line.h"
#include "exec/preview.h"
#include "util/env.h"

namespace mmirage::cli {
namespace {

struct Opts {
  CommonOptions common;
  int64_t rows = 3;
  std::optional<int64_t> shard_id;
  std::string format = "text";
};

int RunPreview(const Opts& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path, o.shard_id);
  if (!config) return kExitFailure;
  PrintEngineChoices(*config, std::cerr);  // stdout holds the rows (one JSON object each with --format json)
  auto failures = exec::Preview(Env::Default(), *config, exec::PreviewOptions{o.rows, o.format == "json"}, std::cout);
  if (!failures.ok()) {
    ReportError(failures.status());
    return kExitFailure;
  }
  return *failures == 0 ? kExitOk : kExitFailure;
}

}  // namespace

Runner RegisterPreview(CLI::App* app) {
  auto o = std::make_shared<Opts>();
  auto* cmd = app->add_subcommand("preview",
                                  "Show variables, rendered prompts and output rows of the first rows "
                                  "(no model)");
  AddCommonOptions(cmd, &o->common);
  cmd->add_option("-n,--rows", o->rows, "Rows to show per dataset split (default 3)")->check(CLI::PositiveNumber);
  cmd->add_option("--shard-id", o->shard_id, "Preview this shard's rows")->check(CLI::NonNegativeNumber);
  cmd->add_option("--format", o->format, "text or json (one JSON object per row)")
      ->check(CLI::IsMember({"text", "json"}));
  return [o]() { return RunPreview(*o); };
}

}  // namespace mmirage::cli

// mmirage: turn datasets into new datasets with (vision-)language models, from an MMIRAGE YAML config.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>

#include "cli/cache_commands.h"
#include "cli/common.h"
#include "cli/slurm_cli.h"
#include "cli/shard_commands.h"
#include "data/arrow_module.h"

int main(int argc, char** argv) {
  using namespace mmirage::cli;
  mmirage::arrow_module::RegisterObjectStorage();  // s3:// paths; the Arrow module loads on the first one
  CLI::App app{"mmirage — dataset rewriting with language models, driven by an MMIRAGE YAML config"};
  app.set_version_flag("--version", std::string("mmirage ") + MMIRAGE_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, Runner> runners;
  auto reg = [&](Runner r, const char* name) { runners[app.get_subcommand(name)] = std::move(r); };
  reg(RegisterRun(&app), "run");
  reg(RegisterSubmit(&app), "submit");
  reg(RegisterCheck(&app), "check");
  reg(RegisterRetry(&app), "retry");
  reg(RegisterMerge(&app), "merge");
  reg(RegisterMergeDir(&app), "merge-dir");
  reg(RegisterStats(&app), "stats");
  reg(RegisterValidate(&app), "validate");
  reg(RegisterPreview(&app), "preview");
  reg(RegisterQuery(&app), "query");
  reg(RegisterEstimate(&app), "estimate");
  reg(RegisterCache(&app), "cache");
  reg(RegisterCat(&app), "cat");
  reg(RegisterCollect(&app), "collect");
  reg(RegisterTune(&app), "tune");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) { return app.exit(e); } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  for (auto* sub : app.get_subcommands()) {
    auto it = runners.find(sub);
    if (it != runners.end()) return it->second();
  }
  std::cerr << app.help();
  return kExitUsage;
}

// `mmirage validate`: load and check a config without reading any row. Exit 0 when valid.
#include <iostream>
#include <memory>

#include "cli/common.h"
#include "cli/engine_line.h"

namespace mmirage::cli {

Runner RegisterValidate(CLI::App* app) {
  auto o = std::make_shared<CommonOptions>();
  auto* cmd = app->add_subcommand("validate", "Check a config (every error at once, with file:line:col)");
  AddCommonOptions(cmd, o.get());
  return [o]() {
    if (!ApplyLogLevel(*o)) return kExitUsage;
    auto config = LoadConfigOrReport(o->config_path);
    if (!config) return kExitFailure;
    std::cout << o->config_path << ": OK (" << config->processors.size() << " processor(s), "
              << config->processing.inputs.size() << " input(s), " << config->processing.outputs.size()
              << " output(s), " << config->loading.datasets.size()
              << " dataset(s), num_shards=" << config->loading.num_shards << ", " << config->warnings.size()
              << " warning(s))\n";
    PrintEngineChoices(*config, std::cout);
    return kExitOk;
  };
}

}  // namespace mmirage::cli

#include "cli/engine_line.h"

#include "process/llm/engine_choice.h"
#include "util/env.h"

namespace mmirage::cli {

void PrintEngineChoices(const config::Config& config, std::ostream& out) {
  for (const auto& p : config.processors) {
    if (p.type != "llm") continue;
    auto c = process::llm::ChooseEngine(Env::Default(), p, process::llm::SystemEngineProbes(), nullptr);
    if (c.ok()) {
      out << "engine: " << c->backend << " (" << c->reason << ")\n";
    } else {
      out << "engine: none available here (" << c.status().message() << ")\n";
    }
  }
}

}  // namespace mmirage::cli

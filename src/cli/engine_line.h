// One line per llm processor saying which engine a run would use here and why (process/llm/engine_choice.h),
// for `validate` and `preview`. When no engine is available the line says so with the remedies; the config is still
// valid (another machine may have the engine). Thread-compatible.
#pragma once

#include <ostream>

#include "config/config.h"

namespace mmirage::cli {

void PrintEngineChoices(const config::Config& config, std::ostream& out);

}  // namespace mmirage::cli

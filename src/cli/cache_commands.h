// `mmirage cache stats|clear` and `mmirage estimate`: each Register* adds the subcommand and returns its runner,
// which reports errors on stderr and returns the exit code. One command per process, on the main thread.
#pragma once

#include "cli/common.h"

namespace mmirage::cli {

Runner RegisterCache(CLI::App* app);
Runner RegisterEstimate(CLI::App* app);

}  // namespace mmirage::cli

// `mmirage cache stats|clear` and `mmirage estimate`.
#pragma once

#include "cli/common.h"

namespace mmirage::cli {

Runner RegisterCache(CLI::App* app);
Runner RegisterEstimate(CLI::App* app);

}  // namespace mmirage::cli

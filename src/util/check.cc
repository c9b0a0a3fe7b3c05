#include <cstdio>
#include <cstdlib>

#include "util/status.h"

namespace mmirage::internal {

void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: internal check failed: %s\n", file, line, cond);
  std::abort();
}

}  // namespace mmirage::internal

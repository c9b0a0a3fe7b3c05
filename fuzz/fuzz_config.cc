// The YAML config loader (YAML parse, env expansion, validation, JMESPath/Jinja compilation) on fuzzed text.
// The environment is fixed and file access goes nowhere real (relative paths under a scratch directory).
#include <cstdint>
#include <string>

#include "config/config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string yaml(reinterpret_cast<const char*>(data), size);
  mmirage::config::LoadOptions opts;
  opts.vars = [](const std::string& name) -> std::optional<std::string> {
    if (name == "HOME") return mmirage::fuzz::ScratchDir();
    if (name == "X") return std::string("value");
    return std::nullopt;
  };
  (void)mmirage::config::LoadConfigFromString(yaml, "fuzz.yaml", opts);
  return 0;
}

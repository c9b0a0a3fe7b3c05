// Which engine runs an llm processor whose `backend:` is not written. A GGUF file or an hf://…gguf reference runs
// on the embedded engine; a Hugging Face model id (`owner/name`) or a local model directory (config.json or
// *.safetensors) runs on a managed server: SGLang when `<python> -c "import sglang"` succeeds (python: $MMIRAGE_PYTHON,
// else python3), else vLLM when `vllm` is on PATH, else nothing — an error naming the three remedies.
// A written `backend:` is always kept. The probes are injectable (tests); SystemEngineProbes runs them once per
// process and interpreter. Thread-safe.
#pragma once

#include <functional>
#include <string>

#include "config/config.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::process::llm {

struct EngineProbes {
  std::function<bool(const std::string& python)> python_imports_sglang;
  std::function<bool()> vllm_on_path;
};
// The real probes: `<python> -c "import sglang"` (exit 0 within 120 s), and a PATH lookup of `vllm`. Memoised.
EngineProbes SystemEngineProbes();

struct EngineChoice {
  std::string backend;  // llama | openai | sglang | vllm | llama-server
  std::string python;   // sglang: the interpreter that runs `-m sglang.launch_server`
  std::string reason;   // one line: why this engine
};

// True when model_path names a Hugging Face model repository rather than a GGUF: `owner/name` (letters, digits,
// '-', '_', '.'; not an existing file, not ending in .gguf) or an existing directory holding config.json or a
// *.safetensors file.
bool IsHubModel(Env* env, const std::string& model_path);

// The engine `processor` (type llm) will use here, and why. vars supplies MMIRAGE_PYTHON.
// Errors: kNotFound, located at the processor, when a Hub model has neither SGLang nor vLLM here.
Result<EngineChoice> ChooseEngine(Env* env, const config::Processor& processor, const EngineProbes& probes,
                                  const config::VarLookup& vars);

// `processor` with `backend` set to the choice (unchanged when the backend was written), and the interpreter
// for sglang. Errors: those of ChooseEngine.
Result<config::Processor> WithChosenEngine(Env* env, const config::Processor& processor, const EngineProbes& probes,
                                           const config::VarLookup& vars, std::string* python);

}  // namespace mmirage::process::llm

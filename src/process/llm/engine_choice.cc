#include "process/llm/engine_choice.h"

#include <cctype>
#include <map>
#include <mutex>

#include "process/llm/model_ref.h"
#include "util/process/spawn.h"
#include "util/process/subprocess.h"

namespace mmirage::process::llm {
namespace {

constexpr double kProbeTimeoutSeconds = 120;  // importing sglang loads torch: seconds, sometimes tens

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsHubIdPart(const std::string& part) {
  if (part.empty() || part == "." || part == "..") return false;
  for (unsigned char c : part)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

bool HoldsModelFiles(Env* env, const std::string& dir) {
  if (env->IsRegularFile(dir + "/config.json")) return true;
  auto children = env->GetChildren(dir);
  if (!children.ok()) return false;
  for (const auto& name : *children)
    if (EndsWith(name, ".safetensors")) return true;
  return false;
}

std::string PythonFor(const config::VarLookup& vars, const std::string& fallback) {
  config::VarLookup lookup = vars ? vars : config::ProcessVarLookup();
  std::optional<std::string> p = lookup("MMIRAGE_PYTHON");
  return p && !p->empty() ? *p : fallback;
}

std::string NoEngineMessage(const config::Processor& p, const std::string& python) {
  const std::string& m = p.llm.model_path;
  return p.loc.ToString() + ": server_args.model_path '" + m +
         "' is a Hugging Face model, which runs on SGLang or vLLM, and neither is here (" + python +
         " cannot import sglang; no vllm on PATH). Either install one (pip install sglang, or pip install vllm; "
         "MMIRAGE_PYTHON names the interpreter to probe), or write `backend: openai` with an endpoint (or "
         "`backend: llama-server` with a server_command), or use a GGUF model on the embedded engine: "
         "model_path: hf://<owner>/<repo>/<file>.gguf (e.g. hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF/"
         "qwen2.5-0.5b-instruct-q4_k_m.gguf) or a local .gguf file";
}

}  // namespace

EngineProbes SystemEngineProbes() {
  EngineProbes probes;
  probes.python_imports_sglang = [](const std::string& python) {
    static std::mutex mu;
    static std::map<std::string, bool> seen;
    std::lock_guard<std::mutex> lock(mu);
    auto it = seen.find(python);
    if (it != seen.end()) return it->second;
    auto r = RunCommandCapture({python, "-c", "import sglang"}, kProbeTimeoutSeconds);
    return seen[python] = r.ok() && r->exit_code == 0;
  };
  probes.vllm_on_path = [] { return !ResolveProgram("vllm").empty(); };
  return probes;
}

bool IsHubModel(Env* env, const std::string& model_path) {
  if (model_path.empty() || IsHfModelRef(model_path) || EndsWith(model_path, ".gguf")) return false;
  if (env->IsDirectory(model_path)) return HoldsModelFiles(env, model_path);
  if (env->FileExists(model_path)) return false;
  size_t slash = model_path.find('/');
  if (slash == std::string::npos || model_path.find('/', slash + 1) != std::string::npos) return false;
  return IsHubIdPart(model_path.substr(0, slash)) && IsHubIdPart(model_path.substr(slash + 1));
}

Result<EngineChoice> ChooseEngine(Env* env, const config::Processor& p, const EngineProbes& probes,
                                  const config::VarLookup& vars) {
  EngineChoice c;
  c.backend = p.llm.backend;
  c.python = PythonFor(vars, "python");
  if (p.llm.backend_set) {
    c.reason = "backend: " + p.llm.backend + " is written in the config";
    return c;
  }
  if (!IsHubModel(env, p.llm.model_path)) {
    c.reason = "model_path is a GGUF model (a file or an hf:// reference): the embedded llama.cpp engine";
    return c;
  }
  c.python = PythonFor(vars, "python3");
  std::string what = env->IsDirectory(p.llm.model_path) ? "a local model directory" : "a Hugging Face model id";
  if (probes.python_imports_sglang && probes.python_imports_sglang(c.python)) {
    c.backend = "sglang";
    c.reason = "model_path is " + what + " and " + c.python + " can import sglang: a managed SGLang server";
    return c;
  }
  if (probes.vllm_on_path && probes.vllm_on_path()) {
    c.backend = "vllm";
    c.reason = "model_path is " + what + ", sglang is not importable and vllm is on PATH: a managed vLLM server";
    return c;
  }
  return Status::NotFound(NoEngineMessage(p, c.python));
}

Result<config::Processor> WithChosenEngine(Env* env, const config::Processor& processor, const EngineProbes& probes,
                                           const config::VarLookup& vars, std::string* python) {
  MMIRAGE_ASSIGN_OR_RETURN(EngineChoice c, ChooseEngine(env, processor, probes, vars));
  config::Processor out = processor;
  out.llm.backend = c.backend;
  if (python != nullptr) *python = c.python;
  return out;
}

}  // namespace mmirage::process::llm

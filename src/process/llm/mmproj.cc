#include "process/llm/mmproj.h"

#include "process/llm/image_inputs.h"
#include "process/llm/model_ref.h"

namespace mmirage::process::llm {

Result<std::string> ResolveMmprojPath(Env* env, const std::string& model_file, const std::string& setting,
                                      const config::VarLookup& vars) {
  if (setting.empty()) return std::string();
  if (setting != kMmprojAuto) {
    MMIRAGE_ASSIGN_OR_RETURN(std::string local, ResolveModelPath(env, setting, vars));
    if (!env->IsRegularFile(local)) {
      return Status::NotFound("server_args.mmproj_path: file not found: '" + local + "'");
    }
    return local;
  }
  const std::string dir = Dirname(model_file);
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<std::string> found, env->Glob(JoinPath(dir, "mmproj*.gguf")));
  if (found.size() == 1) return found[0];
  if (found.empty()) {
    return Status::NotFound("the config has image inputs but no vision projector: no mmproj*.gguf in '" + dir +
                            "' (the model's folder); set server_args.mmproj_path");
  }
  std::string list;
  for (const auto& f : found) list += (list.empty() ? "" : ", ") + Basename(f);
  return Status::InvalidArgument("several vision projectors in '" + dir + "' (" + list +
                                 "); set server_args.mmproj_path to one of them");
}

bool ConfigHasImageInputs(const config::Config& config) {
  // image inputs and image_gen outputs (a later llm output sees the generated images) alike
  return !ImageVariableNames(config).empty();
}

}  // namespace mmirage::process::llm

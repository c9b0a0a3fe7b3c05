// The vision projector (mmproj GGUF) of an `llm` processor: `server_args.mmproj_path`, or found next to the model.
//
//  - a path or an hf:// reference (process/llm/model_ref.h): that file, which must exist (hf://: downloaded first);
//  - "auto" (also what a config with image inputs and no mmproj_path gets): exactly one `mmproj*.gguf` in the model
//    file's folder; none or several is an error that names the folder and the files it found;
//  - "": none (text only).
//
// Thread-safety: as ResolveModelPath.
#pragma once

#include <string>

#include "config/config.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::process::llm {

inline constexpr char kMmprojAuto[] = "auto";

// The local projector file for `setting` beside `model_file` (a local path), or "" when setting is "". Errors:
// kNotFound (a named file that does not exist, or "auto" finding none), kInvalidArgument ("auto" finding several).
Result<std::string> ResolveMmprojPath(Env* env, const std::string& model_file, const std::string& setting,
                                      const config::VarLookup& vars);

// True when the config has image variables — image inputs or image_gen outputs (then an llm processor without
// mmproj_path looks for one: "auto").
bool ConfigHasImageInputs(const config::Config& config);

}  // namespace mmirage::process::llm

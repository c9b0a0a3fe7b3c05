// HF save_to_disk directories: which Arrow files make up each split (data/arrow_reader.h). JSON only, no Arrow.
#include <string>
#include <vector>

#include "data/arrow_reader.h"
#include "data/dataset.h"
#include "data/json.h"
#include "util/path_safety.h"

namespace mmirage {
namespace {

std::string ListedFile(const Value& entry) {
  const Value* f = entry.Find("filename");
  return f != nullptr && f->is_string() ? f->as_string() : "";
}

Result<DatasetPart> ResolveHfDatasetDir(Env* env, const std::string& dir, const std::string& split) {
  std::string state_path = JoinPath(dir, "state.json");
  if (!env->IsRegularFile(state_path)) {
    return Status::InvalidArgument(dir +
                                   " is not an HF save_to_disk dataset directory (no state.json or "
                                   "dataset_dict.json)");
  }
  MMIRAGE_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(state_path));
  auto state = ParseJson(text);
  if (!state.ok()) return Status::Corruption(state_path + ": " + state.status().message());
  const Value* files = state->Find("_data_files");
  if (files == nullptr || !files->is_array() || files->size() == 0)
    return Status::Corruption(state_path + ": expected a non-empty \"_data_files\" list");
  DatasetPart part;
  part.split = split;
  part.format = DataFormat::kArrowStream;
  for (const auto& f : files->as_array()) {
    std::string name = ListedFile(f);
    if (std::string why = UnsafePathComponent(name); !why.empty())
      return Status::Corruption(state_path + ": bad \"_data_files\" entry " + ToJson(f) + " (" + why + ")");
    std::string path = JoinPath(dir, name);
    if (!env->IsRegularFile(path)) return Status::NotFound(state_path + " lists " + name + ", which does not exist");
    part.files.push_back(std::move(path));
  }
  return part;
}

}  // namespace

Result<std::vector<DatasetPart>> ResolveHfDataset(Env* env, const std::string& dir) {
  if (!env->FileExists(dir)) return Status::NotFound("dataset directory not found: " + dir);
  if (!env->IsDirectory(dir))
    return Status::InvalidArgument(dir + " is not an HF save_to_disk dataset directory (not a directory)");
  std::vector<DatasetPart> parts;
  std::string dd_path = JoinPath(dir, "dataset_dict.json");
  if (env->IsRegularFile(dd_path)) {
    MMIRAGE_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(dd_path));
    auto dd = ParseJson(text);
    const Value* splits = dd.ok() ? dd->Find("splits") : nullptr;
    if (splits == nullptr || !splits->is_array() || splits->size() == 0)
      return Status::Corruption(dd_path + ": expected {\"splits\": [names...]}");
    for (const auto& s : splits->as_array()) {
      std::string why = s.is_string() ? UnsafePathComponent(s.as_string()) : "is not a string";
      if (!why.empty())  // a split name is a folder of this directory: it must not lead out of it
        return Status::Corruption(dd_path + ": bad split name " + ToJson(s) + " (" + why + ")");
      MMIRAGE_ASSIGN_OR_RETURN(auto part, ResolveHfDatasetDir(env, JoinPath(dir, s.as_string()), s.as_string()));
      parts.push_back(std::move(part));
    }
    return parts;
  }
  MMIRAGE_ASSIGN_OR_RETURN(auto part, ResolveHfDatasetDir(env, dir, ""));
  parts.push_back(std::move(part));
  return parts;
}

}  // namespace mmirage

#include "data/output_reader.h"

#include <cstdint>

#include "data/arrow_reader.h"
#include "data/json.h"
#include "data/tagged_json.h"
#include "util/path_safety.h"

namespace mmirage {
namespace {

bool EndsWith(const std::string& s, const char* suffix) {
  std::string_view x(suffix);
  return s.size() >= x.size() && std::string_view(s).substr(s.size() - x.size()) == x;
}

Result<std::vector<DatasetPart>> ResolveDir(Env* env, const std::string& dir, const std::string& split, int depth) {
  std::vector<DatasetPart> parts;
  std::string dd = JoinPath(dir, "dataset_dict.json");
  if (env->IsRegularFile(dd)) {
    if (depth > 0) return Status::InvalidArgument(dir + ": a DatasetDict inside a DatasetDict");
    MMIRAGE_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(dd));
    auto v = ParseJson(text);
    const Value* splits = v.ok() ? v->Find("splits") : nullptr;
    if (splits == nullptr || !splits->is_array() || splits->size() == 0)
      return Status::Corruption(dd + ": expected {\"splits\": [names...]}");
    for (const auto& s : splits->as_array()) {
      std::string why = s.is_string() ? UnsafePathComponent(s.as_string()) : "is not a string";
      if (!why.empty())  // a split name is a folder of this directory: it must not lead out of it
        return Status::Corruption(dd + ": bad split name " + ToJson(s) + " (" + why + ")");
      MMIRAGE_ASSIGN_OR_RETURN(auto sub, ResolveDir(env, JoinPath(dir, s.as_string()), s.as_string(), depth + 1));
      for (auto& p : sub) parts.push_back(std::move(p));
    }
    return parts;
  }
  if (env->IsRegularFile(JoinPath(dir, "state.json"))) {
    MMIRAGE_ASSIGN_OR_RETURN(auto hf, ResolveHfDataset(env, dir));
    for (auto& p : hf) {
      p.split = split;
      parts.push_back(std::move(p));
    }
    return parts;
  }
  if (env->IsRegularFile(JoinPath(dir, "data.parquet"))) {
    parts.push_back(DatasetPart{split, {JoinPath(dir, "data.parquet")}, DataFormat::kParquet});
    return parts;
  }
  if (env->IsRegularFile(JoinPath(dir, "data.jsonl"))) {
    parts.push_back(DatasetPart{split, {JoinPath(dir, "data.jsonl")}, DataFormat::kJsonl});
    return parts;
  }
  return Status::InvalidArgument(dir +
                                 " holds no dataset (no dataset_dict.json, state.json, data.parquet or "
                                 "data.jsonl)");
}

}  // namespace

Result<std::vector<DatasetPart>> ResolveOutputParts(Env* env, const std::string& path) {
  if (!env->FileExists(path)) return Status::NotFound("not found: " + path);
  if (env->IsDirectory(path)) return ResolveDir(env, path, "", 0);
  DatasetPart part;
  part.files = {path};
  if (EndsWith(path, ".parquet")) part.format = DataFormat::kParquet;
  else if (EndsWith(path, ".arrow")) part.format = DataFormat::kArrowStream;
  return std::vector<DatasetPart>{part};
}

OutputRows::OutputRows(Env* env, DatasetPart part)
    : part_(part), stream_(env, std::move(part), RowRange{0, UINT64_MAX}) {}

Result<bool> OutputRows::Next(std::string* out, bool tagged) {
  RawRow raw;
  MMIRAGE_ASSIGN_OR_RETURN(bool more, stream_.Next(&raw));
  if (!more) return false;
  if (raw.value != nullptr) {
    if (tagged) AppendJsonTagged(*raw.value, out);
    else AppendJson(*raw.value, out);
  } else {
    std::string_view t = raw.text;
    while (!t.empty() && (t.back() == '\r' || t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    out->append(t);
  }
  out->push_back('\n');
  return true;
}

Result<bool> OutputRows::NextJson(std::string* out) { return Next(out, false); }
Result<bool> OutputRows::NextJournalLine(std::string* out) { return Next(out, true); }

Result<std::unique_ptr<OutputRows>> OpenOutputRows(Env* env, const std::string& dir) {
  MMIRAGE_ASSIGN_OR_RETURN(auto parts, ResolveOutputParts(env, dir));
  if (parts.size() != 1 || !parts[0].split.empty())
    return Status::InvalidArgument(dir + ": expected a single table, found a DatasetDict");
  return std::make_unique<OutputRows>(env, std::move(parts[0]));
}

}  // namespace mmirage

#include "process/llm/model_ref.h"

#include <optional>
#include <vector>

#include "util/hex.h"
#include "util/http/download.h"

namespace mmirage::process::llm {
namespace {

constexpr std::string_view kScheme = "hf://";
constexpr const char* kDefaultEndpoint = "https://huggingface.co";

Status Invalid(const std::string& ref, const std::string& why) {
  return Status::InvalidArgument("invalid model reference '" + ref + "': " + why +
                                 " (expected hf://<owner>/<repo>[@<revision>]/<path to file>)");
}

// Hub names: owner, repository and revision become directory names of the cache, so they are restricted.
bool IsHubName(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string_view> SplitSlash(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t p = s.find('/', start);
    parts.push_back(s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) return parts;
    start = p + 1;
  }
}

// Percent-encodes everything but RFC 3986 unreserved characters and (when keep_slash) '/'.
std::string UrlEncode(std::string_view s, bool keep_slash) {
  std::string out;
  for (unsigned char c : s) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                       c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      AppendHexDigits(c, 2, &out, HexCase::kUpper);
    }
  }
  return out;
}

std::optional<std::string> Lookup(const config::VarLookup& vars, const std::string& name) {
  if (!vars) return std::nullopt;
  std::optional<std::string> v = vars(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

}  // namespace

bool IsHfModelRef(std::string_view model_path) { return model_path.substr(0, kScheme.size()) == kScheme; }

Result<HfModelRef> ParseHfModelRef(const std::string& model_path) {
  if (!IsHfModelRef(model_path)) return Invalid(model_path, "not an hf:// reference");
  const std::string_view rest = std::string_view(model_path).substr(kScheme.size());
  const size_t owner_end = rest.find('/');
  if (owner_end == std::string_view::npos) return Invalid(model_path, "missing repository and file");
  const size_t repo_end = rest.find('/', owner_end + 1);
  if (repo_end == std::string_view::npos) return Invalid(model_path, "missing file path");

  HfModelRef ref;
  ref.owner = std::string(rest.substr(0, owner_end));
  std::string_view repo = rest.substr(owner_end + 1, repo_end - owner_end - 1);
  if (size_t at = repo.find('@'); at != std::string_view::npos) {
    ref.revision = std::string(repo.substr(at + 1));
    repo = repo.substr(0, at);
    if (!IsHubName(ref.revision)) return Invalid(model_path, "bad revision '" + ref.revision + "'");
  }
  ref.repo = std::string(repo);
  ref.path = std::string(rest.substr(repo_end + 1));
  if (!IsHubName(ref.owner)) return Invalid(model_path, "bad owner '" + ref.owner + "'");
  if (!IsHubName(ref.repo)) return Invalid(model_path, "bad repository '" + ref.repo + "'");
  if (ref.path.empty()) return Invalid(model_path, "missing file path");
  for (std::string_view seg : SplitSlash(ref.path)) {
    if (seg.empty() || seg == "." || seg == "..") return Invalid(model_path, "bad file path '" + ref.path + "'");
    for (char c : seg) {
      if (static_cast<unsigned char>(c) < 0x20) return Invalid(model_path, "control character in the file path");
    }
  }
  return ref;
}

Result<std::string> ResolveModelPath(Env* env, const std::string& model_path, const config::VarLookup& vars) {
  if (!IsHfModelRef(model_path)) return model_path;
  MMIRAGE_ASSIGN_OR_RETURN(HfModelRef ref, ParseHfModelRef(model_path));

  std::string cache_root;
  if (auto c = Lookup(vars, "MMIRAGE_CACHE")) {
    cache_root = *c;
  } else if (auto home = Lookup(vars, "HOME")) {
    cache_root = JoinPath(*home, ".cache/mmirage");
  } else {
    return Status::InvalidArgument("cannot resolve " + model_path + ": neither MMIRAGE_CACHE nor HOME is set");
  }
  const std::string dest =
      env->AbsolutePath(JoinPath(cache_root, "hf/" + ref.owner + "/" + ref.repo + "/" + ref.revision + "/" + ref.path));
  if (env->IsRegularFile(dest)) return dest;  // cached: no network
  if (env->FileExists(dest)) return Status::IOError(dest + " (cache of " + model_path + ") is not a file");

  std::string endpoint = Lookup(vars, "HF_ENDPOINT").value_or(kDefaultEndpoint);
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  const std::string url = endpoint + "/" + ref.owner + "/" + ref.repo + "/resolve/" + UrlEncode(ref.revision, false) +
                          "/" + UrlEncode(ref.path, true);
  std::vector<std::string> headers;
  const std::optional<std::string> token = Lookup(vars, "HF_TOKEN");
  if (token) headers.push_back("Authorization: Bearer " + *token);

  const std::string context = "cannot download " + model_path + " (" + url + ")";
  MMIRAGE_TRY(env->CreateDirs(Dirname(dest)).WithContext(context));
  DownloadProgress progress;
  progress.label = model_path;
  Status s = DownloadFile(env, url, headers, dest, progress);
  if (s.ok()) return dest;
  s = s.WithContext(context);
  if (s.IsUnavailable()) {
    return Status::Unavailable(s.message() + "; if this machine cannot reach " + endpoint +
                               ", download the file by hand and set server_args.model_path to it (or put it at " +
                               dest + ")");
  }
  if (s.IsInvalidArgument() && !token) {
    return Status::InvalidArgument(s.message() + "; a gated or private repository needs HF_TOKEN");
  }
  return s;
}

}  // namespace mmirage::process::llm

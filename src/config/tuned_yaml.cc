#include "config/tuned_yaml.h"

#include <yaml-cpp/yaml.h>

#include <map>

namespace mmirage::config {
namespace {

using Comments = std::map<std::string, std::string>;  // joined path → comment

std::string Join(const std::vector<std::string>& path) {
  std::string s;
  for (const auto& p : path) s += "/" + p;
  return s;
}

void Emit(YAML::Emitter* out, const YAML::Node& node, std::vector<std::string>* path, const Comments& comments) {
  if (node.IsMap()) {
    *out << YAML::BeginMap;
    for (const auto& kv : node) {
      std::string key = kv.first.as<std::string>();
      *out << YAML::Key << key << YAML::Value;
      path->push_back(key);
      Emit(out, kv.second, path, comments);
      if (auto it = comments.find(Join(*path)); it != comments.end()) *out << YAML::Comment(it->second);
      path->pop_back();
    }
    *out << YAML::EndMap;
  } else if (node.IsSequence()) {
    *out << YAML::BeginSeq;
    for (size_t i = 0; i < node.size(); ++i) {
      path->push_back("[" + std::to_string(i) + "]");
      Emit(out, node[i], path, comments);
      path->pop_back();
    }
    *out << YAML::EndSeq;
  } else if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    // A quoted scalar ("!" tag) stays a string; a multi-line one keeps its lines.
    if (s.find('\n') != std::string::npos) *out << YAML::Literal << s;
    else if (node.Tag() == "!") *out << YAML::DoubleQuoted << s;
    else *out << s;
  } else {
    *out << YAML::Null;
  }
}

// The node at `path` under `root`, maps created on the way. Error text when the path cannot be followed.
Result<YAML::Node> Descend(YAML::Node root, const std::vector<std::string>& path, const std::string& name) {
  YAML::Node cur = root;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const std::string& p = path[i];
    if (!p.empty() && p[0] == '[') {
      size_t idx = 0;
      for (size_t k = 1; k < p.size() && p[k] >= '0' && p[k] <= '9'; ++k)
        idx = idx * 10 + static_cast<size_t>(p[k] - '0');
      if (!cur.IsSequence() || idx >= cur.size())
        return Status::InvalidArgument(name + ": no item " + p + " at " + Join({path.begin(), path.begin() + i}));
      cur.reset(cur[idx]);
      continue;
    }
    if (!cur.IsMap() && !cur.IsNull()) return Status::InvalidArgument(name + ": " + Join(path) + ": not a map");
    YAML::Node next = cur[p];
    if (!next.IsDefined() || next.IsNull()) cur[p] = YAML::Node(YAML::NodeType::Map);
    cur.reset(cur[p]);
  }
  return cur;
}

}  // namespace

Result<std::string> RewriteTunedYaml(const std::string& yaml, const std::string& name,
                                     const std::vector<YamlEdit>& edits, const std::string& tuned_by,
                                     const std::string& header) {
  try {
    YAML::Node root = YAML::Load(yaml);
    if (!root.IsMap()) return Status::InvalidArgument(name + ": the config must be a YAML map");
    Comments comments;
    for (const YamlEdit& e : edits) {
      if (e.path.empty()) continue;
      MMIRAGE_ASSIGN_OR_RETURN(YAML::Node parent, Descend(root, e.path, name));
      if (!parent.IsMap() && !parent.IsNull())
        return Status::InvalidArgument(name + ": " + Join(e.path) + ": the parent is not a map");
      parent[e.path.back()] = YAML::Load(e.value);
      if (!e.comment.empty()) comments[Join(e.path)] = e.comment;
    }
    root["tuned_by"] = tuned_by;
    YAML::Emitter out;
    out.SetIndent(2);
    std::vector<std::string> path;
    Emit(&out, root, &path, comments);
    if (!out.good()) return Status::Internal(name + ": cannot write the tuned YAML: " + out.GetLastError());
    std::string text;
    for (size_t at = 0, nl; at < header.size(); at = nl + 1) {
      nl = header.find('\n', at);
      if (nl == std::string::npos) nl = header.size();
      text += "# " + header.substr(at, nl - at) + "\n";
    }
    return text + out.c_str() + "\n";
  } catch (const YAML::Exception& e) { return Status::InvalidArgument(name + ": invalid YAML: " + e.what()); }
}

}  // namespace mmirage::config

// ${ENV} expansion with Python os.path.expandvars semantics, and "~" expansion.
// ProcessVarLookup (here) reads the process environment; the config readers take a VarLookup, so tests can
// pass their own.
#include <cstdlib>

#include "config/config.h"

namespace mmirage::config {
namespace {
bool IsVarChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}
}  // namespace

VarLookup ProcessVarLookup() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::string ExpandEnvVars(const std::string& s, const VarLookup& vars) {
  if (s.find('$') == std::string::npos) return s;
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '$') {
      out.push_back(s[i++]);
      continue;
    }
    size_t start = i;
    std::string name;
    size_t end;
    if (i + 1 < s.size() && s[i + 1] == '{') {
      size_t close = s.find('}', i + 2);
      if (close == std::string::npos) {  // no closing brace: left verbatim
        out.append(s, i, std::string::npos);
        break;
      }
      name = s.substr(i + 2, close - i - 2);
      end = close + 1;
    } else {
      size_t j = i + 1;
      while (j < s.size() && IsVarChar(s[j])) ++j;
      name = s.substr(i + 1, j - i - 1);
      end = j;
    }
    if (name.empty()) {
      out.push_back('$');
      i = start + 1;
      continue;
    }
    auto v = vars(name);
    if (v) out += *v;
    else out.append(s, start, end - start);
    i = end;
  }
  return out;
}

std::string ExpandUser(const std::string& s, const VarLookup& vars) {
  if (s.empty() || s[0] != '~' || (s.size() > 1 && s[1] != '/')) return s;
  auto home = vars("HOME");
  if (!home) return s;
  return *home + s.substr(1);
}

}  // namespace mmirage::config

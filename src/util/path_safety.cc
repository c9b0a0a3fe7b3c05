#include "util/path_safety.h"

namespace mmirage {

std::string UnsafePathComponent(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (name == "." || name == "..") return "is '" + std::string(name) + "'";
  if (name.front() == '/') return "is an absolute path";
  if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos)
    return "contains a path separator";
  return "";
}

}  // namespace mmirage

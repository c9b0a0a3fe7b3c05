// Names that become one file or folder name inside an output folder (split names from a config or a
// dataset_dict.json, job_name, shard folders) must not escape it. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace mmirage {

// Why `name` cannot be one path component inside a folder, as a phrase to follow the name in a message ("is
// empty", "is '..'", "contains a path separator", "contains a NUL byte", "is an absolute path"); "" when it can.
std::string UnsafePathComponent(std::string_view name);

}  // namespace mmirage

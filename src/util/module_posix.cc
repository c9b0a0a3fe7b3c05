// POSIX implementation of util/module.h: dlopen(3) of a file found next to the executable.
#include <dlfcn.h>
#include <sys/stat.h>

#include <mutex>
#include <string>
#include <vector>

#include "util/module.h"
#include "util/process/process_info.h"

namespace mmirage {
namespace {

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

Result<void*> LoadModule(const std::string& file_name, const std::string& purpose) {
  static std::mutex mu;  // dlerror() is read right after its dlopen: one load at a time
  std::lock_guard<std::mutex> lock(mu);
  const std::string what = "cannot load " + file_name + " (" + purpose + ")";
  Result<std::string> exe = SelfExecutablePath();
  if (!exe.ok()) return Status::NotFound(what + ": " + exe.status().message());
  const std::string dir = ParentDir(*exe);
  const std::vector<std::string> dirs = {dir + "/lib", ParentDir(dir) + "/lib"};
  for (const std::string& d : dirs) {
    const std::string path = d + "/" + file_name;
    if (!IsFile(path)) continue;
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = ::dlerror();
      return Status::NotFound(what + ": " + (err != nullptr ? err : path));
    }
    return handle;
  }
  return Status::NotFound(what + ": not found in " + dirs[0] + ", " + dirs[1]);
}

void* ModuleSymbol(void* module, const char* symbol) { return module == nullptr ? nullptr : ::dlsym(module, symbol); }

Status ForeignModuleError(const std::string& file_name, const std::string& purpose) {
  return Status::NotFound("cannot load " + file_name + " (" + purpose +
                          "): it belongs to another build of mmirage (reinstall mmirage)");
}

}  // namespace mmirage

// Shared modules: parts of mmirage built as separate shared libraries (libmmirage_<name>.so: the Arrow/Parquet
// readers and writers, the embedded llama.cpp engine, the HTTP client's libcurl) and loaded the first time a run
// needs them, so that a command that never reads Parquet or runs a model never pays for loading those libraries.
//
// A module is looked for in <dir>/lib/ then <dir>/../lib/, <dir> being the directory of the running executable
// (the build tree keeps modules in build/lib/, an install bundle in <prefix>/lib/). Modules are never unloaded.
// Thread-safety: LoadModuleSymbol may be called from several threads (the loader serialises loads).
#pragma once

#include <cstring>
#include <string>

#include "util/status.h"

namespace mmirage {

// Loads `file_name` (e.g. "libmmirage_arrow.so") as described above and returns its handle (loading it again
// returns the same handle). A module loads with every symbol bound (RTLD_NOW): a missing dependency fails here,
// never later. Errors: kNotFound, one line naming the module, what it is for (`purpose`), the directories looked
// in or the loader's reason, e.g. "cannot load libmmirage_arrow.so (Arrow/Parquet support): not found in
// /opt/m/bin/lib, /opt/m/lib".
Result<void*> LoadModule(const std::string& file_name, const std::string& purpose);

// The address of `symbol` in a loaded module or in the libraries it depends on; nullptr when there is none.
void* ModuleSymbol(void* module, const char* symbol);

// kNotFound: "cannot load <file_name> (<purpose>): it belongs to another build of mmirage (reinstall mmirage)".
Status ForeignModuleError(const std::string& file_name, const std::string& purpose);

// Loads `file_name` and returns the function table its entry point `entry` (a `const Api* ()`) hands out, checked
// against this build: `Api` has `int abi` and `const char* version`, which must equal `abi` and `version`.
// Errors: as LoadModule; ForeignModuleError when the entry point is missing, returns nothing or does not match.
template <typename Api>
Result<const Api*> LoadModuleApi(const std::string& file_name, const std::string& purpose, const char* entry, int abi,
                                 const char* version) {
  MMIRAGE_ASSIGN_OR_RETURN(void* module, LoadModule(file_name, purpose));
  auto entry_fn = reinterpret_cast<const Api* (*)()>(ModuleSymbol(module, entry));
  const Api* api = entry_fn != nullptr ? entry_fn() : nullptr;
  if (api == nullptr || api->abi != abi || std::strcmp(api->version, version) != 0) {
    return ForeignModuleError(file_name, purpose);
  }
  return api;
}

}  // namespace mmirage

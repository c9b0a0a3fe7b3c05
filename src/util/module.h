// Shared modules: parts of mmirage built as separate shared libraries (libmmirage_<name>.so: the Arrow/Parquet
// readers and writers, the embedded llama.cpp engine, the HTTP client's libcurl) and loaded the first time a run
// needs them, so that a command that never reads Parquet or runs a model never pays for loading those libraries.
//
// A module is looked for in <dir>/lib/ then <dir>/../lib/, <dir> being the directory of the running executable
// (the build tree keeps modules in build/lib/, an install bundle in <prefix>/lib/). Modules are never unloaded.
// Thread-safety: LoadModuleSymbol may be called from several threads (the loader serialises loads).
#pragma once

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

}  // namespace mmirage

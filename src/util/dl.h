// Where the running program's code lives on disk, for components that find files next to their shared libraries
// (llama.cpp's per-CPU-family backends sit beside libggml; a relocatable install keeps them in its lib/).
// Thread-safe; no state.
#pragma once

#include <string>

namespace mmirage {

// The directory of the shared object (or executable) that contains `symbol`, e.g. "/opt/mmirage/lib".
// Empty when the loader cannot tell (a symbol in no mapped object).
std::string DirectoryOfSymbol(const void* symbol);

}  // namespace mmirage

// llama-server built against llama.cpp's prebuilt shared libraries (tools/llama_server/CMakeLists.txt): loads the
// CPU backend the embedded engine would load (engine/llama_backends.h: the one built for this CPU, else the best
// prebuilt libggml-cpu-<family>.so beside libggml, wherever the install was moved to), then runs the server's own
// entry point. ggml's default search (the executable's directory, the working directory) finds no backend there.
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "engine/llama/llama_backends.h"

int llama_server(int argc, char** argv);  // tools/server/server.cpp of the pinned llama.cpp

int main(int argc, char** argv) {
  Dl_info info{};
  std::string dir;
  if (dladdr(reinterpret_cast<const void*>(&ggml_backend_load_all_from_path), &info) != 0 && info.dli_fname) {
    dir = info.dli_fname;
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash);
  }
  const std::string which = mmirage_llama::LoadLlamaBackends(dir);
  if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
    std::fprintf(stderr, "llama-server: no llama.cpp CPU backend (libggml-cpu-*.so) found in %s\n", dir.c_str());
    return 1;
  }
  std::fprintf(stderr, "llama-server: %s\n", which.c_str());
  return llama_server(argc, argv);
}

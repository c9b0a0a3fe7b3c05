// Loading llama.cpp's backends in its shared (prebuilt) build, MMIRAGE_LLAMA_DYNAMIC_BACKENDS. Header only, with no
// mmirage dependency, so the raw benchmark baselines (linked against llama.cpp alone) load exactly what the engine
// loads.
// LoadLlamaBackends(dir), dir = the directory of libggml (empty: ggml's default search path), loads a CPU backend
// built for this machine when there is one and this CPU has every flag it was compiled for, else the best prebuilt
// libggml-cpu-<family>.so variant (rules below). Returns one line saying which CPU backend was loaded and why (for
// the log); the caller checks that a CPU device exists. Called once per process, before llama_backend_init.
#pragma once

#ifdef MMIRAGE_LLAMA_DYNAMIC_BACKENDS
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ggml-backend.h"

namespace mmirage_llama {

// The whitespace-separated words of a file's first line starting with `prefix` (the text up to ':' dropped when
// `after_colon`); with an empty prefix, of every line.
inline std::set<std::string> ReadFlagWords(const std::string& path, const std::string& prefix, bool after_colon) {
  std::set<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    if (after_colon) {
      const auto colon = line.find(':');
      line = colon == std::string::npos ? std::string() : line.substr(colon + 1);
    }
    std::istringstream words(line);
    for (std::string w; words >> w;) out.insert(w);
    if (!prefix.empty()) break;
  }
  return out;
}

//   1. A CPU backend built for this machine (scripts/setup.sh: libggml-cpu.so and cpu-flags, the build machine's
//      /proc/cpuinfo flags) is looked for in <dir>/cpu-native/ (an install bundle), or when that is absent in
//      MMIRAGE_LLAMA_NATIVE_CPU_DIR (the build tree's cache dir, compiled in). It is used only when this CPU has
//      every flag listed in cpu-flags (it is compiled with -march=native), and ggml accepts it.
//   2. Otherwise (none, another CPU, MMIRAGE_LLAMA_CPU=prebuilt in the environment, or it fails to load) the
//      prebuilt libggml-cpu-<family>.so variants in dir, the best one for this CPU chosen by ggml.
inline std::string LoadLlamaBackends(const std::string& dir) {
  std::string why;
  const char* force = std::getenv("MMIRAGE_LLAMA_CPU");
  if (force != nullptr && std::string(force) == "prebuilt") {
    why = "MMIRAGE_LLAMA_CPU=prebuilt";
  } else {
    // An install bundle's own (when it has one) is the only candidate: a bundle never leans on the build machine.
    std::vector<std::string> candidates;
    if (!dir.empty() && std::ifstream(dir + "/cpu-native/cpu-flags").good()) candidates.push_back(dir + "/cpu-native");
#ifdef MMIRAGE_LLAMA_NATIVE_CPU_DIR
    if (candidates.empty()) candidates.push_back(MMIRAGE_LLAMA_NATIVE_CPU_DIR);
#endif
    const std::set<std::string> have = ReadFlagWords("/proc/cpuinfo", "flags", /*after_colon=*/true);
    for (const std::string& c : candidates) {
      const std::string lib = c + "/libggml-cpu.so";
      if (!std::ifstream(lib).good()) continue;
      const std::set<std::string> need = ReadFlagWords(c + "/cpu-flags", "", /*after_colon=*/false);
      std::string missing;
      for (const std::string& f : need)
        if (have.count(f) == 0) missing = f;
      if (need.empty()) {
        why = c + "/cpu-flags is missing or empty";
        continue;
      }
      if (!missing.empty()) {
        why = lib + " was built for another CPU (this one lacks '" + missing + "')";
        continue;
      }
      if (ggml_backend_load(lib.c_str()) != nullptr && ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) {
        return "llama.cpp CPU backend built for this CPU: " + lib;
      }
      why = "ggml did not load " + lib;
    }
    if (why.empty()) why = "none built for this machine";
  }
  ggml_backend_load_all_from_path(dir.empty() ? nullptr : dir.c_str());
  return "llama.cpp prebuilt CPU backend (" + why + ") from " +
         (dir.empty() ? std::string("ggml's default path") : dir);
}

}  // namespace mmirage_llama
#endif

// The entry point of libmmirage_llama.so (engine/llama_module.h).
#include "engine/llama/llama_module_impl.h"

extern "C" __attribute__((visibility("default"))) const mmirage::engine::llama_module::Api* mmirage_llama_module_v1() {
  namespace lm = mmirage::engine::llama_module;
  static const lm::Api api = {lm::kAbi, MMIRAGE_VERSION, lm::CreateEngine, lm::CountersOf, lm::CreateTokenizer};
  return &api;
}

#include "pipeline/input_identity.h"

#include <string>
#include <vector>

#include "data/dataset.h"

namespace mmirage::pipeline {
namespace {

constexpr uint64_t kFnvPrime = 1099511628211ull;
constexpr size_t kHeadBytes = 64 * 1024;

void Mix(uint64_t* h, std::string_view bytes) {
  for (unsigned char c : bytes) *h = (*h ^ c) * kFnvPrime;
  *h = (*h ^ 0xff) * kFnvPrime;  // separator, so that ("ab", "c") and ("a", "bc") differ
}

}  // namespace

Result<uint64_t> InputIdentity(Env* env, const config::DatasetConfig& dataset) {
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<DatasetPart> parts, ResolveDatasetParts(env, dataset.path, dataset.splits));
  uint64_t h = 1469598103934665603ull;
  for (const auto& part : parts) {
    Mix(&h, part.split);
    for (const auto& f : part.files) {
      Mix(&h, f);
      MMIRAGE_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(f));
      Mix(&h, std::to_string(size));
      MMIRAGE_ASSIGN_OR_RETURN(auto file, env->NewSequentialFile(f));
      std::string head(kHeadBytes, '\0');
      size_t got = 0;
      while (got < head.size()) {
        MMIRAGE_ASSIGN_OR_RETURN(size_t n, file->Read(head.size() - got, head.data() + got));
        if (n == 0) break;
        got += n;
      }
      Mix(&h, std::string_view(head.data(), got));
    }
  }
  return h;
}

}  // namespace mmirage::pipeline

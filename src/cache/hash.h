// SHA-256 of a sequence of fields, for cache keys and entry checksums (util/sha.h underneath).
//
// Each Add* writes a type tag and a length before the bytes, so that ("ab", "c") and ("a", "bc") never hash
// alike. Plain value type; not thread-safe (one hasher per thread).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/sha.h"

namespace mmirage::cache {

class Hasher {
 public:
  Hasher() = default;
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  Hasher& AddString(std::string_view s);
  Hasher& AddInt(int64_t v);
  Hasher& AddDouble(double v);  // by its bit pattern (so 0.7 and 0.70000001 differ)
  Hasher& AddBool(bool v);
  // Raw bytes, no tag or length (streaming a file's contents).
  Hasher& AddRaw(std::string_view bytes);

  // The 32-byte digest. The hasher must not be used afterwards.
  std::string Finish() { return sha_.Finish(); }

 private:
  Sha256 sha_;
};

}  // namespace mmirage::cache

#include "cache/hash.h"

#include <cstring>

namespace mmirage::cache {
namespace {

std::string Le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

}  // namespace

Hasher& Hasher::AddRaw(std::string_view bytes) {
  sha_.Update(bytes);
  return *this;
}

Hasher& Hasher::AddString(std::string_view s) {
  AddRaw("s");
  AddRaw(Le64(s.size()));
  return AddRaw(s);
}

Hasher& Hasher::AddInt(int64_t v) {
  AddRaw("i");
  return AddRaw(Le64(static_cast<uint64_t>(v)));
}

Hasher& Hasher::AddDouble(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  AddRaw("d");
  return AddRaw(Le64(bits));
}

Hasher& Hasher::AddBool(bool v) { return AddRaw(v ? "T" : "F"); }

}  // namespace mmirage::cache

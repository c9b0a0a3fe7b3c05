#include "cache/hash.h"

#include <openssl/evp.h>

#include <cstring>

#include "util/status.h"

namespace mmirage::cache {

struct Hasher::Rep {
  EVP_MD_CTX* ctx = nullptr;
};

Hasher::Hasher() : rep_(new Rep) {
  rep_->ctx = EVP_MD_CTX_new();
  MMIRAGE_CHECK(rep_->ctx != nullptr && EVP_DigestInit_ex(rep_->ctx, EVP_sha256(), nullptr) == 1);
}

Hasher::~Hasher() { EVP_MD_CTX_free(rep_->ctx); }

Hasher& Hasher::AddRaw(std::string_view bytes) {
  if (!bytes.empty()) MMIRAGE_CHECK(EVP_DigestUpdate(rep_->ctx, bytes.data(), bytes.size()) == 1);
  return *this;
}

namespace {
std::string Le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}
}  // namespace

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

std::string Hasher::Finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  MMIRAGE_CHECK(EVP_DigestFinal_ex(rep_->ctx, out, &n) == 1);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string ToHex(std::string_view bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    s.push_back(kDigits[c >> 4]);
    s.push_back(kDigits[c & 15]);
  }
  return s;
}

}  // namespace mmirage::cache

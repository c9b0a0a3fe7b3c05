#include "util/sha.h"

#include <openssl/evp.h>

#include "util/hex.h"
#include "util/status.h"

namespace mmirage {
namespace {

// libcrypto fails only on allocation failure or a misused context: both are programmer errors here.
std::string Digest(const EVP_MD* md, std::string_view data) {
  unsigned char buf[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  MMIRAGE_CHECK(EVP_Digest(data.data(), data.size(), buf, &n, md, nullptr) == 1);
  return std::string(reinterpret_cast<const char*>(buf), n);
}

}  // namespace

struct Sha256::Rep {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : rep_(new Rep) {
  rep_->ctx = EVP_MD_CTX_new();
  MMIRAGE_CHECK(rep_->ctx != nullptr && EVP_DigestInit_ex(rep_->ctx, EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() { EVP_MD_CTX_free(rep_->ctx); }

void Sha256::Update(std::string_view bytes) {
  if (!bytes.empty()) MMIRAGE_CHECK(EVP_DigestUpdate(rep_->ctx, bytes.data(), bytes.size()) == 1);
}

std::string Sha256::Finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  MMIRAGE_CHECK(EVP_DigestFinal_ex(rep_->ctx, out, &n) == 1);
  return std::string(reinterpret_cast<const char*>(out), n);
}

std::string Sha256Hex(std::string_view data) { return HexEncode(Digest(EVP_sha256(), data)); }
std::string Sha1Hex(std::string_view data) { return HexEncode(Digest(EVP_sha1(), data)); }

}  // namespace mmirage

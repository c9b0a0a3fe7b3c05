// SHA-1 and SHA-256 (OpenSSL's libcrypto underneath): the one owner of the tree's digests, for cache keys, request
// hashes and ids. The free functions are pure and thread-safe; a Sha256 object belongs to one thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace mmirage {

// SHA-256 of data fed in pieces.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view bytes);
  // The 32-byte digest. The object must not be used afterwards.
  std::string Finish();

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
};

// 64 lower-case hex digits.
std::string Sha256Hex(std::string_view data);
// 40 lower-case hex digits.
std::string Sha1Hex(std::string_view data);

}  // namespace mmirage

// FNV-1a 64: the one fast non-cryptographic hash of the tree, for fingerprints that only detect change (config
// text, input identity, journal checks, HF state). Not for anything an adversary chooses. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace mmirage {

// The offset basis of the fingerprints in our state files. It is not the published FNV basis
// (kFnv1aStandardOffset): every journal, identity and state.json already written holds hashes from this one, and
// a resume compares against them, so it stays.
inline constexpr uint64_t kFnv1aOffset = 1469598103934665603ull;
inline constexpr uint64_t kFnv1aStandardOffset = 14695981039346656037ull;

// FNV-1a of `bytes` continuing from `h` (pass a previous result to hash several pieces as one).
inline uint64_t Fnv1a64(std::string_view bytes, uint64_t h = kFnv1aOffset) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace mmirage

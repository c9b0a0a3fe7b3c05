// Regression tests for issue #13, findings of the sanitizer build (scripts/sanitize.sh: ASan, UBSan, LeakSanitizer).
#include <dirent.h>
#include <gtest/gtest.h>

#include <string>

#include "cache/generation_cache.h"
#include "cache/hash.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

int OpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

std::unique_ptr<cache::GenerationCache> Open(const std::string& dir) {
  cache::CacheOptions o;
  o.dir = dir;
  o.mode = cache::CacheMode::kReadWrite;
  auto c = cache::GenerationCache::Open(o);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(*c) : nullptr;
}

std::string Key(const std::string& s) {
  cache::Hasher h;
  h.AddString(s);
  return h.Finish();
}

// LeakSanitizer in cache_test: a sealed cache file whose keys all live in newer files was closed with its key
// statement still live; sqlite3_close then refuses (SQLITE_BUSY) and the connection leaked, with its file
// descriptor, once per shadowed file per open. Opening a cache that sheds shadowed files now leaves no descriptor
// behind.
TEST(Issue13Sanitize, ShadowedCacheFilesAreClosed) {
  testing::TempDir d;
  cache::CacheEntry e;
  e.text = "A";
  for (int round = 0; round < 2; ++round) {  // two sealed files holding the same key
    auto c = Open(d.path());
    ASSERT_NE(c, nullptr);
    if (round == 0) {
      c->Insert(Key("a"), e);
    } else {
      ASSERT_TRUE(c->Lookup(Key("a")).has_value());  // a hit is refreshed into this writer's file
    }
  }
  int before = OpenFds();
  ASSERT_GT(before, 0);
  {
    auto c = Open(d.path());  // the older file adds no key: it is removed (and must be closed)
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->Lookup(Key("a"))->text, "A");
  }
  EXPECT_EQ(OpenFds(), before);
}

}  // namespace
}  // namespace mmirage

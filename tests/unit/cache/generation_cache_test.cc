// GenerationCache: one SQLite file per writer, sealed at Close; readers see sealed files; damage is a miss.
#include "cache/generation_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/hash.h"
#include "support/test_util.h"
#include "util/env.h"
#include "util/hex.h"

namespace mmirage::cache {
namespace {

using mmirage::testing::TempDir;

std::string Key(const std::string& s) {
  Hasher h;
  h.AddString(s);
  return h.Finish();
}

CacheEntry Entry(const std::string& text, int64_t completion = 5) {
  CacheEntry e;
  e.text = text;
  e.prompt_tokens = 11;
  e.completion_tokens = completion;
  e.finish = 1;
  return e;
}

std::unique_ptr<GenerationCache> OpenCache(const std::string& dir, CacheMode mode = CacheMode::kReadWrite,
                                           uint64_t max_bytes = 1ull << 30) {
  CacheOptions o;
  o.dir = dir;
  o.mode = mode;
  o.max_bytes = max_bytes;
  auto c = GenerationCache::Open(o);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(*c) : nullptr;
}

std::vector<std::string> Files(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  auto names = Env::Default()->GetChildren(dir);
  if (names.ok())
    for (const auto& n : *names)
      if (n.rfind(prefix, 0) == 0 && n.size() > 7 && n.compare(n.size() - 7, 7, ".sqlite") == 0) out.push_back(n);
  return out;
}

TEST(HasherTest, FieldBoundariesMatter) {
  Hasher a, b;
  a.AddString("ab").AddString("c");
  b.AddString("a").AddString("bc");
  EXPECT_NE(a.Finish(), b.Finish());
  EXPECT_EQ(Key("x").size(), 32u);
  // The key layout (tag "s", little-endian length, bytes) is part of every cache file's keys: it must not drift.
  EXPECT_EQ(HexEncode(Key("abc")), "738cc6a4aeca85404f503c399ed1bf53f0e7e5b104bb428cc3b24df250a46e64");
}

TEST(GenerationCacheTest, AnEntryWrittenByOneRunIsReadByTheNext) {
  TempDir d;
  {
    auto c = OpenCache(d.path());
    EXPECT_FALSE(c->Lookup(Key("a")).has_value());
    c->Insert(Key("a"), Entry("hello \xc3\xa9 world", 7));
    auto same_run = c->Lookup(Key("a"));  // this writer's own entry
    ASSERT_TRUE(same_run.has_value());
    EXPECT_EQ(same_run->text, "hello \xc3\xa9 world");
    ASSERT_TRUE(c->Close().ok());
  }
  EXPECT_EQ(Files(d.path(), "gen-").size(), 1u);
  EXPECT_TRUE(Files(d.path(), "open-").empty());
  auto c = OpenCache(d.path(), CacheMode::kRead);
  auto e = c->Lookup(Key("a"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->text, "hello \xc3\xa9 world");
  EXPECT_EQ(e->prompt_tokens, 11);
  EXPECT_EQ(e->completion_tokens, 7);
  EXPECT_EQ(e->finish, 1);
  EXPECT_FALSE(c->Lookup(Key("b")).has_value());
  EXPECT_EQ(c->counters().hits, 1);
  EXPECT_EQ(c->counters().misses, 1);
}

TEST(GenerationCacheTest, ReadModeCreatesAndWritesNothing) {
  TempDir d;
  std::string dir = d.Path("cache");
  {
    auto c = OpenCache(dir, CacheMode::kRead);
    c->Insert(Key("a"), Entry("x"));
  }
  EXPECT_FALSE(mmirage::testing::Exists(dir));
}

TEST(GenerationCacheTest, AnEmptyRunLeavesNoFile) {
  TempDir d;
  { auto c = OpenCache(d.path()); }
  EXPECT_TRUE(Files(d.path(), "gen-").empty());
  EXPECT_TRUE(Files(d.path(), "open-").empty());
}

TEST(GenerationCacheTest, HitsAreRefreshedAndShadowedFilesRemoved) {
  TempDir d;
  {
    auto c = OpenCache(d.path());
    c->Insert(Key("a"), Entry("A"));
    c->Insert(Key("b"), Entry("B"));
  }
  {
    auto c = OpenCache(d.path());
    ASSERT_TRUE(c->Lookup(Key("a")).has_value());
    ASSERT_TRUE(c->Lookup(Key("b")).has_value());
  }
  EXPECT_EQ(Files(d.path(), "gen-").size(), 2u);
  auto c = OpenCache(d.path());  // the first file's keys all live in the second: it goes
  EXPECT_EQ(Files(d.path(), "gen-").size(), 1u);
  EXPECT_EQ(c->Lookup(Key("a"))->text, "A");
  EXPECT_EQ(c->Lookup(Key("b"))->text, "B");
}

TEST(GenerationCacheTest, EvictionDropsTheLeastRecentlyUsedFilesFirst) {
  TempDir d;
  std::string big(200000, 'x');
  for (const char* k : {"old", "mid"}) {
    auto c = OpenCache(d.path());
    c->Insert(Key(k), Entry(big + k));
  }
  {
    auto c = OpenCache(d.path(), CacheMode::kReadWrite, /*max_bytes=*/450000);
    ASSERT_TRUE(c->Lookup(Key("old")).has_value());  // "old" is used again: now in the newest file
    c->Insert(Key("new"), Entry(big + "new"));
  }
  auto c = OpenCache(d.path(), CacheMode::kRead);
  EXPECT_TRUE(c->Lookup(Key("old")).has_value());
  EXPECT_TRUE(c->Lookup(Key("new")).has_value());
  EXPECT_FALSE(c->Lookup(Key("mid")).has_value());  // least recently used: evicted
}

TEST(GenerationCacheTest, AFileThatIsNotADatabaseIsIgnored) {
  TempDir d;
  {
    auto c = OpenCache(d.path());
    c->Insert(Key("a"), Entry("A"));
  }
  mmirage::testing::WriteFile(d.Path("gen-99999999999999999999-1-h.sqlite"), "this is not sqlite at all");
  auto c = OpenCache(d.path());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Lookup(Key("a"))->text, "A");
  EXPECT_FALSE(c->Lookup(Key("b")).has_value());
}

TEST(GenerationCacheTest, DamagedBytesAreNeverAWrongAnswer) {
  TempDir d;
  std::string texts[50];
  {
    auto c = OpenCache(d.path());
    for (int i = 0; i < 50; ++i) {
      texts[i] = "completion number " + std::to_string(i) + " " + std::string(100, 'a' + i % 26);
      c->Insert(Key(std::to_string(i)), Entry(texts[i]));
    }
  }
  auto files = Files(d.path(), "gen-");
  ASSERT_EQ(files.size(), 1u);
  std::string path = d.Path(files[0]);
  std::string bytes = mmirage::testing::ReadFile(path);
  // Flip bytes inside the stored texts (not the header): SQLite reads them fine, the checksum does not match.
  int flipped = 0;
  for (size_t pos = bytes.find("completion number"); pos != std::string::npos && flipped < 10;
       pos = bytes.find("completion number", pos + 1)) {
    bytes[pos + 30] ^= 0x01;
    ++flipped;
  }
  ASSERT_GT(flipped, 0);
  mmirage::testing::WriteFile(path, bytes);
  auto c = OpenCache(d.path(), CacheMode::kRead);
  int hits = 0;
  for (int i = 0; i < 50; ++i) {
    auto e = c->Lookup(Key(std::to_string(i)));
    if (!e) continue;
    EXPECT_EQ(e->text, texts[i]);  // a hit is always the stored text
    ++hits;
  }
  EXPECT_EQ(hits, 50 - flipped);
  EXPECT_EQ(c->counters().bad_entries, flipped);
}

TEST(GenerationCacheTest, TheFileOfAWriterThatDiedIsSealedByTheNextOpen) {
  TempDir d;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CacheOptions o;
    o.dir = d.path();
    auto c = GenerationCache::Open(o);
    if (!c.ok()) _exit(2);
    for (int i = 0; i < 100; ++i) (*c)->Insert(Key(std::to_string(i)), Entry("v" + std::to_string(i)));
    _exit(0);  // dies without Close: the first 64 entries were committed
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Files(d.path(), "open-").size(), 1u);
  auto c = OpenCache(d.path());
  EXPECT_TRUE(Files(d.path(), "open-").size() == 1u);  // only our own writer now
  int hits = 0;
  for (int i = 0; i < 100; ++i) {
    auto e = c->Lookup(Key(std::to_string(i)));
    if (e) {
      EXPECT_EQ(e->text, "v" + std::to_string(i));
      ++hits;
    }
  }
  EXPECT_EQ(hits, 64);
}

TEST(GenerationCacheTest, FourConcurrentWritersLoseNothing) {
  TempDir d;
  std::vector<pid_t> kids;
  for (int w = 0; w < 4; ++w) {
    pid_t p = fork();
    ASSERT_GE(p, 0);
    if (p == 0) {
      CacheOptions o;
      o.dir = d.path();
      auto c = GenerationCache::Open(o);
      if (!c.ok()) _exit(2);
      for (int i = 0; i < 300; ++i) {
        std::string k = "w" + std::to_string(w) + "-" + std::to_string(i);
        (*c)->Insert(Key(k), Entry("value of " + k));
        (*c)->Insert(Key("shared-" + std::to_string(i)), Entry("shared " + std::to_string(i)));
      }
      _exit((*c)->Close().ok() ? 0 : 3);
    }
    kids.push_back(p);
  }
  for (pid_t p : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(p, &status, 0), p);
    ASSERT_EQ(WEXITSTATUS(status), 0);
  }
  auto info = InspectCacheDir(Env::Default(), d.path());
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->sealed_files, 4);
  EXPECT_EQ(info->distinct_entries, 4 * 300 + 300);
  auto c = OpenCache(d.path(), CacheMode::kRead);
  for (int w = 0; w < 4; ++w)
    for (int i = 0; i < 300; ++i) {
      std::string k = "w" + std::to_string(w) + "-" + std::to_string(i);
      auto e = c->Lookup(Key(k));
      ASSERT_TRUE(e.has_value()) << k;
      EXPECT_EQ(e->text, "value of " + k);
    }
  EXPECT_EQ(c->Lookup(Key("shared-7"))->text, "shared 7");
}

TEST(GenerationCacheTest, ClearRemovesSealedFiles) {
  TempDir d;
  {
    auto c = OpenCache(d.path());
    c->Insert(Key("a"), Entry("A"));
  }
  auto n = ClearCacheDir(Env::Default(), d.path());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  auto c = OpenCache(d.path(), CacheMode::kRead);
  EXPECT_FALSE(c->Lookup(Key("a")).has_value());
}

TEST(GenerationCacheTest, ModesParse) {
  EXPECT_EQ(ParseCacheMode("off"), CacheMode::kOff);
  EXPECT_EQ(ParseCacheMode("read"), CacheMode::kRead);
  EXPECT_EQ(ParseCacheMode("readwrite"), CacheMode::kReadWrite);
  EXPECT_FALSE(ParseCacheMode("rw").has_value());
}

}  // namespace
}  // namespace mmirage::cache

#include "util/env.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/test_util.h"

namespace mmirage {
namespace {

TEST(EnvTest, WriteFileAtomicallyReplacesContentAndLeavesNoTemp) {
  testing::TempDir d;
  Env* env = Env::Default();
  std::string p = d.Path("f.json");
  ASSERT_TRUE(WriteFileAtomically(env, p, "one").ok());
  ASSERT_TRUE(WriteFileAtomically(env, p, "two").ok());
  EXPECT_EQ(testing::ReadFile(p), "two");
  auto children = env->GetChildren(d.path());
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, std::vector<std::string>{"f.json"});  // no temp left behind
  ASSERT_TRUE(WriteFileAtomically(env, p, "three", /*durable=*/false).ok());
  EXPECT_EQ(testing::ReadFile(p), "three");
  EXPECT_EQ(env->GetChildren(d.path())->size(), 1u);
}

// Two processes (here: threads, which share nothing but the file system) replacing the same file: every read
// sees one writer's whole content, never a mix or a truncated file (a shared `<path>.tmp` tore it).
TEST(EnvTest, ConcurrentReplacesNeverTearTheFile) {
  testing::TempDir d;
  Env* env = Env::Default();
  std::string p = d.Path("status.json");
  const std::string a(20000, 'a'), b(30000, 'b');
  ASSERT_TRUE(WriteFileAtomically(env, p, a).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  auto writer = [&](const std::string& content, bool durable) {
    for (int i = 0; i < 200; ++i)
      if (!WriteFileAtomically(env, p, content, durable).ok()) ++failures;
  };
  std::thread reader([&] {
    while (!stop) {
      auto text = env->ReadFileToString(p);
      if (!text.ok() || (*text != a && *text != b)) {
        ++failures;
        break;
      }
    }
  });
  std::thread w1(writer, a, false), w2(writer, b, false), w3(writer, a, true);
  w1.join();
  w2.join();
  w3.join();
  stop = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(env->GetChildren(d.path())->size(), 1u);
}

TEST(EnvTest, WriteFileAtomicallyFailsCleanlyWhenTheDirectoryIsMissing) {
  testing::TempDir d;
  Status s = WriteFileAtomically(Env::Default(), d.Path("no/such/dir/f"), "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no/such/dir/f.tmp"), std::string::npos) << s.message();
}

TEST(EnvTest, ExchangeSwapsTwoDirectories) {
  testing::TempDir d;
  Env* env = Env::Default();
  testing::WriteFile(d.Path("a/x"), "A");
  testing::WriteFile(d.Path("b/x"), "B");
  Status s = env->ExchangeFiles(d.Path("a"), d.Path("b"));
  if (s.IsUnavailable()) GTEST_FAIL() << "renameat2(RENAME_EXCHANGE) unsupported here: " << s.message();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testing::ReadFile(d.Path("a/x")), "B");
  EXPECT_EQ(testing::ReadFile(d.Path("b/x")), "A");
}

TEST(EnvTest, PathHelpers) {
  EXPECT_EQ(Dirname("a/b/c"), "a/b");
  EXPECT_EQ(Dirname("c"), ".");
  EXPECT_EQ(Dirname("/c"), "/");
  EXPECT_EQ(Basename("a/b/"), "b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("a", "/abs"), "/abs");
}

TEST(StatusTest, ResultCarriesValueOrError) {
  Result<int> ok = 3;
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  Result<int> bad = Status::NotFound("x");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsNotFound());
  EXPECT_EQ(Status::IOError("disk").WithContext("f.txt").message(), "f.txt: disk");
  EXPECT_TRUE(Status::OK().WithContext("ignored").ok());
}

}  // namespace
}  // namespace mmirage

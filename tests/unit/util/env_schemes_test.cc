// Env::Default() routes paths of a registered URL scheme to that scheme's Env, and every other path to POSIX.
#include "util/env_schemes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "support/counting_env.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

// Answers FileExists for its scheme's paths and records them.
class RecordingEnv final : public testing::CountingEnv {
 public:
  bool FileExists(const std::string& p) override {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(p);
    return true;
  }
  std::mutex mu;
  std::vector<std::string> seen;
};

RecordingEnv* Recorder() {
  static auto* env = new RecordingEnv();
  return env;
}
std::atomic<int> bad_calls{0};

TEST(EnvSchemesTest, PathSchemeIsThePrefixBeforeColonSlashSlash) {
  EXPECT_EQ(PathScheme("s3://bucket/key"), "s3");
  EXPECT_EQ(PathScheme("gs+x://b"), "gs+x");
  EXPECT_EQ(PathScheme("/abs/path"), "");
  EXPECT_EQ(PathScheme("rel/s3://x"), "");
  EXPECT_EQ(PathScheme("s3:/one-slash"), "");
  EXPECT_EQ(PathScheme("://nothing"), "");
}

TEST(EnvSchemesTest, RegisteredSchemeGoesToItsEnvOthersToPosix) {
  RegisterSchemeEnv("tst", []() -> Result<Env*> { return static_cast<Env*>(Recorder()); });
  Env* env = Env::Default();
  EXPECT_TRUE(env->FileExists("tst://bucket/key"));
  {
    std::lock_guard<std::mutex> lock(Recorder()->mu);
    ASSERT_EQ(Recorder()->seen.size(), 1u);
    EXPECT_EQ(Recorder()->seen[0], "tst://bucket/key");
  }
  testing::TempDir dir;
  EXPECT_FALSE(env->FileExists(dir.Path("absent")));    // POSIX: no such file
  EXPECT_FALSE(env->FileExists("unregistered://b/k"));  // an unknown scheme stays a local (relative) path
  EXPECT_EQ(*SchemeEnv("tst://b"), static_cast<Env*>(Recorder()));
  EXPECT_EQ(*SchemeEnv("/local"), nullptr);
  Status st = env->RenameFile("tst://b/k", dir.Path("k"));  // no move between storages
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("across storages"), std::string::npos) << st.message();
}

TEST(EnvSchemesTest, FactoryErrorNamesThePathAndIsAskedOnce) {
  RegisterSchemeEnv("bad", []() -> Result<Env*> {
    ++bad_calls;
    return Status::NotFound("cannot load libmmirage_x.so");
  });
  Result<std::string> r = Env::Default()->ReadFileToString("bad://b/k");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "bad://b/k: cannot load libmmirage_x.so");
  EXPECT_FALSE(Env::Default()->FileExists("bad://b/other"));
  EXPECT_EQ(bad_calls.load(), 1);
}

}  // namespace
}  // namespace mmirage

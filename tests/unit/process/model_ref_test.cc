#include "process/llm/model_ref.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "support/local_http_server.h"
#include "support/test_util.h"
#include "util/log.h"

namespace mmirage::process::llm {
namespace {

using testing::LocalHttpServer;

config::VarLookup Vars(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ParseHfModelRefTest, OwnerRepoAndPathWithDefaultRevision) {
  auto r = ParseHfModelRef("hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->owner, "Qwen");
  EXPECT_EQ(r->repo, "Qwen2.5-0.5B-Instruct-GGUF");
  EXPECT_EQ(r->revision, "main");
  EXPECT_EQ(r->path, "qwen2.5-0.5b-instruct-q4_k_m.gguf");
}

TEST(ParseHfModelRefTest, RevisionAndNestedPath) {
  auto r = ParseHfModelRef("hf://o/r@v1.0/sub/dir/m.gguf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->repo, "r");
  EXPECT_EQ(r->revision, "v1.0");
  EXPECT_EQ(r->path, "sub/dir/m.gguf");
}

TEST(ParseHfModelRefTest, MalformedReferencesAreInvalidArguments) {
  for (const char* bad :
       {"hf://only-owner", "hf://", "hf://a/b", "hf://a/b/", "hf:///b/c", "hf://a//c", "hf://a/b@/c", "hf://a/b/../c",
        "hf://a/b/c//d", "hf://a/b/./c", "hf://a b/c/d", "hf://../b/c", "/local/model.gguf"}) {
    auto r = ParseHfModelRef(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.status().IsInvalidArgument()) << bad;
    EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos) << r.status().message();
  }
}

TEST(ParseHfModelRefTest, IsHfModelRefLooksAtTheSchemeOnly) {
  EXPECT_TRUE(IsHfModelRef("hf://x"));
  EXPECT_FALSE(IsHfModelRef("models/m.gguf"));
  EXPECT_FALSE(IsHfModelRef("https://huggingface.co/x"));
  EXPECT_FALSE(IsHfModelRef("hf:/x"));
}

class ResolveModelPathTest : public ::testing::Test {
 protected:
  void StartServer() {
    server_ = std::make_unique<LocalHttpServer>(dir_.path(), dir_.Path("hub"));
    ASSERT_EQ(server_->error(), "");
  }
  // Puts `contents` where the hub serves <owner>/<repo>@<revision>/<path>.
  void Publish(const std::string& owner_repo, const std::string& revision, const std::string& path,
               const std::string& contents) {
    testing::WriteFile(dir_.Path("hub/" + owner_repo + "/resolve/" + revision + "/" + path), contents);
  }
  config::VarLookup HubVars(std::map<std::string, std::string> extra = {}) {
    extra.emplace("HF_ENDPOINT", server_ ? server_->Url("") : "http://127.0.0.1:9");
    extra.emplace("MMIRAGE_CACHE", cache_);
    return Vars(extra);
  }

  testing::TempDir dir_;
  std::string cache_ = dir_.Path("cache");
  std::unique_ptr<LocalHttpServer> server_;
};

TEST_F(ResolveModelPathTest, PlainPathIsReturnedUnchanged) {
  auto r = ResolveModelPath(Env::Default(), "models/missing.gguf", Vars({}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "models/missing.gguf");
}

TEST_F(ResolveModelPathTest, DownloadsIntoTheCacheThenResolvesWithoutNetwork) {
  const std::string model(200 * 1000 + 3, '\x7f');
  Publish("Qwen/Tiny-GGUF", "main", "sub/tiny.gguf", model);
  StartServer();
  const LogLevel saved_level = GetLogLevel();
  SetLogLevel(LogLevel::kDebug);
  ::testing::internal::CaptureStderr();
  auto r =
      ResolveModelPath(Env::Default(), "hf://Qwen/Tiny-GGUF/sub/tiny.gguf", HubVars({{"HF_TOKEN", "hf_secret_token"}}));
  const std::string log = ::testing::internal::GetCapturedStderr();
  SetLogLevel(saved_level);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, cache_ + "/hf/Qwen/Tiny-GGUF/main/sub/tiny.gguf");
  EXPECT_EQ(testing::ReadFile(*r), model);
  EXPECT_FALSE(testing::Exists(*r + ".part"));
  EXPECT_EQ(log.find("hf_secret_token"), std::string::npos) << log;  // the token is never logged
  std::vector<std::string> req = server_->Requests();
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0], "/Qwen/Tiny-GGUF/resolve/main/sub/tiny.gguf auth=Bearer hf_secret_token range=");

  server_->Stop();  // a second resolve must not need the network
  auto again = ResolveModelPath(Env::Default(), "hf://Qwen/Tiny-GGUF/sub/tiny.gguf", HubVars());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *r);
  EXPECT_EQ(server_->Requests().size(), 1u);
}

TEST_F(ResolveModelPathTest, RevisionSelectsTheUrlAndTheCacheDirectory) {
  Publish("o/r", "v2", "m.gguf", "v2 bytes");
  StartServer();
  auto r = ResolveModelPath(Env::Default(), "hf://o/r@v2/m.gguf", HubVars());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, cache_ + "/hf/o/r/v2/m.gguf");
  EXPECT_EQ(testing::ReadFile(*r), "v2 bytes");
}

TEST_F(ResolveModelPathTest, FileNamesAreUrlEncoded) {
  Publish("o/r", "main", "a b+c.gguf", "spaced");
  StartServer();
  auto r = ResolveModelPath(Env::Default(), "hf://o/r/a b+c.gguf", HubVars());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(testing::ReadFile(*r), "spaced");
  EXPECT_EQ(server_->Requests().at(0), "/o/r/resolve/main/a%20b%2Bc.gguf auth= range=");
}

TEST_F(ResolveModelPathTest, Http404IsAOneLineErrorNamingTheUrlAndLeavesNothing) {
  StartServer();
  auto r = ResolveModelPath(Env::Default(), "hf://o/r/missing.gguf", HubVars());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound()) << r.status().message();
  EXPECT_EQ(r.status().message(),
            "cannot download hf://o/r/missing.gguf (" + server_->Url("/o/r/resolve/main/missing.gguf") + "): HTTP 404");
  const std::string dest = cache_ + "/hf/o/r/main/missing.gguf";
  EXPECT_FALSE(testing::Exists(dest));
  EXPECT_FALSE(testing::Exists(dest + ".part"));
}

TEST_F(ResolveModelPathTest, UnreachableNetworkSuggestsDownloadingByHand) {
  StartServer();
  const std::string endpoint = server_->Url("");
  server_->Stop();
  auto r = ResolveModelPath(Env::Default(), "hf://o/r/m.gguf", HubVars({{"HF_ENDPOINT", endpoint}}));
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().message();
  EXPECT_TRUE(r.status().IsUnavailable()) << msg;
  EXPECT_EQ(msg.rfind("cannot download hf://o/r/m.gguf (" + endpoint + "/o/r/resolve/main/m.gguf): ", 0), 0u) << msg;
  EXPECT_NE(msg.find("network unreachable"), std::string::npos) << msg;
  EXPECT_NE(msg.find("download the file by hand and set server_args.model_path"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_FALSE(testing::Exists(cache_ + "/hf/o/r/main/m.gguf"));
}

TEST_F(ResolveModelPathTest, MalformedReferenceIsInvalidArgument) {
  auto r = ResolveModelPath(Env::Default(), "hf://only-owner", HubVars());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().message();
  EXPECT_FALSE(testing::Exists(cache_));
}

TEST_F(ResolveModelPathTest, CacheDefaultsToHomeAndACachedFileNeedsNoServer) {
  const std::string home = dir_.Path("home");
  const std::string cached = home + "/.cache/mmirage/hf/o/r/main/m.gguf";
  testing::WriteFile(cached, "cached");
  // HF_ENDPOINT points at a port nothing listens on: any network access would fail.
  auto r = ResolveModelPath(Env::Default(), "hf://o/r/m.gguf",
                            Vars({{"HOME", home}, {"MMIRAGE_CACHE", ""}, {"HF_ENDPOINT", "http://127.0.0.1:9"}}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, cached);
}

TEST_F(ResolveModelPathTest, NoCacheLocationIsInvalidArgument) {
  auto r = ResolveModelPath(Env::Default(), "hf://o/r/m.gguf", Vars({}));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().message();
  EXPECT_NE(r.status().message().find("MMIRAGE_CACHE"), std::string::npos);
}

}  // namespace
}  // namespace mmirage::process::llm

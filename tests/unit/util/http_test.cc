#include "util/http/download.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/local_http_server.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

using testing::LocalHttpServer;

std::string BinaryContent(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / 256) & 0xff);
  return s;
}

class DownloadFileTest : public ::testing::Test {
 protected:
  void Start(const std::string& mode = "range") {
    testing::WriteFile(root_ + "/model.gguf", content_);
    server_ = std::make_unique<LocalHttpServer>(dir_.path(), root_, mode);
    ASSERT_EQ(server_->error(), "");
  }
  Status Download(const std::string& path, const std::vector<std::string>& headers = {}) {
    DownloadProgress progress;
    progress.show = false;
    return DownloadFile(Env::Default(), server_->Url(path), headers, dest_, progress);
  }

  testing::TempDir dir_;
  std::string root_ = dir_.Path("root");
  std::string dest_ = dir_.Path("out.gguf");
  std::string content_ = BinaryContent(300 * 1000 + 17);
  std::unique_ptr<LocalHttpServer> server_;
};

TEST_F(DownloadFileTest, WritesIdenticalBytesAndLeavesNoPart) {
  Start();
  Status s = Download("/model.gguf", {"Authorization: Bearer secret-token"});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testing::ReadFile(dest_), content_);
  EXPECT_FALSE(testing::Exists(dest_ + ".part"));
  std::vector<std::string> req = server_->Requests();
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0], "/model.gguf auth=Bearer secret-token range=");
}

TEST_F(DownloadFileTest, FollowsRedirects) {
  Start();
  Status s = Download("/redirect/model.gguf");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testing::ReadFile(dest_), content_);
  EXPECT_EQ(server_->Requests().size(), 2u);
}

TEST_F(DownloadFileTest, Http404IsNotFoundAndLeavesNoFile) {
  Start();
  Status s = Download("/missing.gguf");
  EXPECT_TRUE(s.IsNotFound()) << s.message();
  EXPECT_EQ(s.message(), "HTTP 404");
  EXPECT_FALSE(testing::Exists(dest_));
  EXPECT_FALSE(testing::Exists(dest_ + ".part"));
}

TEST_F(DownloadFileTest, Http404RemovesAStalePart) {
  Start();
  testing::WriteFile(dest_ + ".part", "stale");
  EXPECT_TRUE(Download("/missing.gguf").IsNotFound());
  EXPECT_FALSE(testing::Exists(dest_ + ".part"));
}

TEST_F(DownloadFileTest, ResumesAPartialDownloadWithARangeRequest) {
  Start();
  testing::WriteFile(dest_ + ".part", content_.substr(0, 1000));
  Status s = Download("/model.gguf");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testing::ReadFile(dest_), content_);
  std::vector<std::string> req = server_->Requests();
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0], "/model.gguf auth= range=bytes=1000-");
}

TEST_F(DownloadFileTest, StartsOverWhenTheServerIgnoresTheRange) {
  Start("norange");
  testing::WriteFile(dest_ + ".part", std::string(1000, 'x'));
  Status s = Download("/model.gguf");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testing::ReadFile(dest_), content_);
}

TEST_F(DownloadFileTest, StartsOverWhenThePartIsLongerThanTheFile) {
  Start();
  testing::WriteFile(dest_ + ".part", content_ + "extra");
  Status s = Download("/model.gguf");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testing::ReadFile(dest_), content_);
  std::vector<std::string> req = server_->Requests();
  ASSERT_EQ(req.size(), 2u);  // 416, then the whole file
  EXPECT_EQ(req[1], "/model.gguf auth= range=");
}

TEST_F(DownloadFileTest, EmptyFileDownloadsAsEmptyFile) {
  Start();
  testing::WriteFile(root_ + "/empty.bin", "");
  Status s = Download("/empty.bin");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(testing::Exists(dest_));
  EXPECT_EQ(testing::ReadFile(dest_), "");
}

TEST_F(DownloadFileTest, ExistingDestinationIsNotDownloadedAgain) {
  Start();
  testing::WriteFile(dest_, "already here");
  ASSERT_TRUE(Download("/model.gguf").ok());
  EXPECT_EQ(testing::ReadFile(dest_), "already here");
  EXPECT_TRUE(server_->Requests().empty());
}

TEST_F(DownloadFileTest, RefusedConnectionIsUnavailableNetworkUnreachable) {
  Start();
  server_->Stop();  // nothing listens on the port any more
  Status s = Download("/model.gguf");
  EXPECT_TRUE(s.IsUnavailable()) << s.message();
  EXPECT_NE(s.message().find("network unreachable"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  EXPECT_FALSE(testing::Exists(dest_));
  EXPECT_FALSE(testing::Exists(dest_ + ".part"));
}

TEST(FormatDownloadProgressTest, PercentSizesRateAndEta) {
  EXPECT_EQ(FormatDownloadProgress(45'200'000, 100'000'000, 12'300'000.0), "45.2%  45.2/100.0 MB  12.3 MB/s  ETA 0:04");
  EXPECT_EQ(FormatDownloadProgress(0, 273'000'000, 1'000'000.0), "0.0%  0.0/273.0 MB  1.0 MB/s  ETA 4:33");
}

TEST(FormatDownloadProgressTest, HoursInEta) {
  EXPECT_EQ(FormatDownloadProgress(0, 10'000'000'000, 1'000'000.0), "0.0%  0.0/10000.0 MB  1.0 MB/s  ETA 2:46:40");
}

TEST(FormatDownloadProgressTest, UnknownTotalOrRateOmitsWhatCannotBeComputed) {
  EXPECT_EQ(FormatDownloadProgress(5'000'000, 0, 1'000'000.0), "5.0 MB  1.0 MB/s");
  EXPECT_EQ(FormatDownloadProgress(5'000'000, 10'000'000, 0.0), "50.0%  5.0/10.0 MB");
  EXPECT_EQ(FormatDownloadProgress(0, 0, 0.0), "0.0 MB");
}

}  // namespace
}  // namespace mmirage

#include "util/http.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace mmirage {
namespace {

// A file server on 127.0.0.1 (a free port chosen by the OS) that logs each request's path, Authorization and
// Range headers, answers Range requests with 206 (or ignores them in "norange" mode, or 416 past the end),
// and redirects /redirect/<p> to /<p>.
constexpr const char* kServerPy = R"PY(
import http.server, os, re, sys, urllib.parse
root, port_file, log_file, mode = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args): pass
    def do_GET(self):
        with open(log_file, 'a') as f:
            f.write('%s auth=%s range=%s\n' % (self.path, self.headers.get('Authorization', ''),
                                                self.headers.get('Range', '')))
        path = urllib.parse.unquote(self.path.split('?')[0])
        if path.startswith('/redirect/'):
            self.send_response(302)
            self.send_header('Location', path[len('/redirect'):])
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        full = os.path.normpath(os.path.join(root, path.lstrip('/')))
        if not full.startswith(root) or not os.path.isfile(full):
            self.send_error(404)
            return
        data = open(full, 'rb').read()
        m = re.match(r'bytes=(\d+)-$', self.headers.get('Range', ''))
        start = 0
        if m and mode != 'norange':
            start = int(m.group(1))
            if start >= len(data):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header('Content-Range', 'bytes %d-%d/%d' % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        self.send_header('Content-Length', str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])
srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
with open(port_file + '.tmp', 'w') as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + '.tmp', port_file)
srv.serve_forever()
)PY";

class LocalHttpServer {
 public:
  // Serves `root`; `dir` holds the script, port file and request log. Check error() afterwards.
  LocalHttpServer(const std::string& dir, const std::string& root, const std::string& mode = "range")
      : log_path_(dir + "/requests.log") {
    if (testing::RunCommand("command -v python3").exit_code != 0) {
      error_ = "python3 is not on PATH: the download tests need it to serve files on 127.0.0.1";
      return;
    }
    const std::string script = dir + "/server.py", port_file = dir + "/port";
    testing::WriteFile(script, kServerPy);
    testing::WriteFile(log_path_, "");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execlp("python3", "python3", script.c_str(), root.c_str(), port_file.c_str(), log_path_.c_str(),
               mode.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Wait (bounded) for the server to publish its port; it listens before writing the file.
    for (int i = 0; i < 500 && port_ == 0; ++i) {
      std::string p = testing::ReadFile(port_file);
      if (!p.empty()) {
        port_ = std::stoi(p);
        break;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        error_ = "the python3 test server exited before listening (status " + std::to_string(status) + ")";
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (port_ == 0) error_ = "the python3 test server did not start within 10 s";
  }
  ~LocalHttpServer() { Stop(); }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  std::string Url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::vector<std::string> Requests() const { return testing::ReadLines(log_path_); }

 private:
  std::string log_path_;
  std::string error_;
  pid_t pid_ = -1;
  int port_ = 0;
};

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
  EXPECT_EQ(FormatDownloadProgress(45'200'000, 100'000'000, 12'300'000.0),
            "45.2%  45.2/100.0 MB  12.3 MB/s  ETA 0:04");
  EXPECT_EQ(FormatDownloadProgress(0, 273'000'000, 1'000'000.0), "0.0%  0.0/273.0 MB  1.0 MB/s  ETA 4:33");
}

TEST(FormatDownloadProgressTest, HoursInEta) {
  EXPECT_EQ(FormatDownloadProgress(0, 10'000'000'000, 1'000'000.0),
            "0.0%  0.0/10000.0 MB  1.0 MB/s  ETA 2:46:40");
}

TEST(FormatDownloadProgressTest, UnknownTotalOrRateOmitsWhatCannotBeComputed) {
  EXPECT_EQ(FormatDownloadProgress(5'000'000, 0, 1'000'000.0), "5.0 MB  1.0 MB/s");
  EXPECT_EQ(FormatDownloadProgress(5'000'000, 10'000'000, 0.0), "50.0%  5.0/10.0 MB");
  EXPECT_EQ(FormatDownloadProgress(0, 0, 0.0), "0.0 MB");
}

}  // namespace
}  // namespace mmirage

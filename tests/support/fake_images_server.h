// Starts tests/support/fake_images_server.py (a fake OpenAI-images server with deterministic PNGs and scripted
// failures, see the script) on 127.0.0.1 with a port chosen by the OS; stops it at destruction.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace mmirage::testing {

class FakeImagesServer {
 public:
  // `dir` holds the port file and the request log. Check error() afterwards.
  FakeImagesServer(const std::string& dir, const std::string& mode = "ok");
  ~FakeImagesServer() { Stop(); }
  FakeImagesServer(const FakeImagesServer&) = delete;
  FakeImagesServer& operator=(const FakeImagesServer&) = delete;

  void Stop();
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  std::string BaseUrl() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<std::string> Posts() const;  // one JSON line per POST: {"path", "auth", "body"}
  static std::string Script();             // the server script's path

 private:
  std::string log_path_;
  std::string error_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace mmirage::testing

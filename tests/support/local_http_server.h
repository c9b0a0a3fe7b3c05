// A file server on 127.0.0.1 for download tests (a free port chosen by the OS): logs each request's path,
// Authorization and Range headers, answers Range requests with 206 (or ignores them in "norange" mode, or 416 past
// the end), and redirects /redirect/<p> to /<p>. Runs python3's http.server; error() says why it could not start.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace mmirage::testing {

class LocalHttpServer {
 public:
  // Serves `root`; `dir` holds the script, port file and request log. Check error() afterwards.
  LocalHttpServer(const std::string& dir, const std::string& root, const std::string& mode = "range");
  ~LocalHttpServer() { Stop(); }
  LocalHttpServer(const LocalHttpServer&) = delete;
  LocalHttpServer& operator=(const LocalHttpServer&) = delete;

  void Stop();
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  std::string Url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::vector<std::string> Requests() const;

 private:
  std::string log_path_;
  std::string error_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace mmirage::testing

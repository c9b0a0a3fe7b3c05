#include "support/fake_images_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "support/test_util.h"

namespace mmirage::testing {

std::string FakeImagesServer::Script() {
  return std::string(MMIRAGE_SOURCE_DIR) + "/tests/support/fake_images_server.py";
}

FakeImagesServer::FakeImagesServer(const std::string& dir, const std::string& mode) : log_path_(dir + "/posts.log") {
  const std::string port_file = dir + "/port";
  WriteFile(log_path_, "");
  ::unlink(port_file.c_str());  // a port file of an earlier server in this directory
  std::string python = PythonPath();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execl(python.c_str(), python.c_str(), Script().c_str(), "--port-file", port_file.c_str(), "--log",
            log_path_.c_str(), "--mode", mode.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 1000 && port_ == 0; ++i) {
    std::string p = ReadFile(port_file);
    if (!p.empty()) port_ = std::stoi(p);
    else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    int st;
    if (port_ == 0 && ::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      error_ = "the fake images server (" + python + " " + Script() + ") exited at start";
      return;
    }
  }
  if (port_ == 0) error_ = "the fake images server did not publish its port within 10 s";
}

void FakeImagesServer::Stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
}

std::vector<std::string> FakeImagesServer::Posts() const { return ReadLines(log_path_); }

}  // namespace mmirage::testing

// Test helpers: temporary directories, files, and running the mmirage binary with captured output.
#pragma once

#include <string>
#include <vector>

namespace mmirage::testing {

// A fresh directory under $TMPDIR, removed (recursively) at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Path(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& contents);  // creates parent dirs; aborts on failure
std::string ReadFile(const std::string& path);                         // "" when missing
bool Exists(const std::string& path);
std::vector<std::string> ReadLines(const std::string& path);  // non-empty lines

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs `command` through /bin/sh in `cwd` (if non-empty) with stdin from /dev/null.
CommandResult RunCommand(const std::string& command, const std::string& cwd = "");
// Runs the built mmirage binary with `args` (shell-quoted by the caller).
CommandResult RunMmirage(const std::string& args, const std::string& cwd = "");

std::string SharedDir();   // ../shared of the source tree
std::string PythonPath();  // interpreter with the test oracles

}  // namespace mmirage::testing

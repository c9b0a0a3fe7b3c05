#include "support/test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mmirage::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/mmirage_test_XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) std::abort();
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << contents;
  if (!out) std::abort();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

CommandResult RunCommand(const std::string& command, const std::string& cwd) {
  TempDir tmp;
  std::string out = tmp.Path("out"), err = tmp.Path("err");
  std::string full =
      (cwd.empty() ? "" : "cd '" + cwd + "' && ") + "( " + command + " ) </dev/null >'" + out + "' 2>'" + err + "'";
  int rc = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

CommandResult RunMmirage(const std::string& args, const std::string& cwd) {
  return RunCommand(std::string("'") + MMIRAGE_BINARY + "' " + args, cwd);
}

std::string SharedDir() { return MMIRAGE_SHARED_DIR; }
std::string PythonPath() { return MMIRAGE_PYTHON; }

}  // namespace mmirage::testing

// Differential test: renders a corpus generated and rendered by Python Jinja2 (tests/template_diff/gen_corpus.py)
// with our engine and requires >= 99% agreement. A case agrees when both produce the same string or both fail
// (parse or render error). Known deliberate differences: tests/template_diff/KNOWN_DIFFERENCES.md.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "data/json.h"
#include "template/template.h"

namespace mmirage::tmpl {
namespace {

std::string Quote(const std::string& s) { return "'" + s + "'"; }

TEST(TemplateDifferential, AgreesWithPythonJinja2) {
  // CMake declares MMIRAGE_PYTHON as a FILEPATH, so `-DMMIRAGE_PYTHON=python3` arrives as
  // "<source dir>/python3"; when that does not exist, fall back to the bare name looked up on PATH.
  std::string python = MMIRAGE_PYTHON;
  if (access(python.c_str(), X_OK) != 0) {
    size_t slash = python.rfind('/');
    if (slash != std::string::npos) python = python.substr(slash + 1);
  }
  const std::string script = std::string(MMIRAGE_SOURCE_DIR) + "/tests/template_diff/gen_corpus.py";
  char path[] = "/tmp/mmirage_template_corpus_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0) << "cannot create a temp file";
  close(fd);
  const std::string err_path = std::string(path) + ".err";
  const std::string cmd = python + " " + Quote(script) + " " + Quote(path) + " 2> " + Quote(err_path);
  int rc = std::system(cmd.c_str());
  std::string err_text;
  {
    std::ifstream ef(err_path);
    err_text.assign(std::istreambuf_iterator<char>(ef), std::istreambuf_iterator<char>());
  }
  std::remove(err_path.c_str());
  ASSERT_EQ(rc, 0) << "running the oracle failed (" << cmd << "). Python (MMIRAGE_PYTHON='" << python
                   << "') and the jinja2 package are required: pip install jinja2==3.1.6 markupsafe==3.0.2\n"
                   << err_text;

  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "no corpus written to " << path;
  std::string line;
  int total = 0, agree = 0, py_errors = 0;
  std::string report;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto rec = ParseJson(line);
    ASSERT_TRUE(rec.ok()) << rec.status().ToString() << ": " << line;
    const Value& r = *rec;
    const std::string& src = r.Find("template")->as_string();
    const Value& ctx = *r.Find("context");
    bool py_ok = r.Find("ok")->as_bool();
    ++total;
    if (!py_ok) ++py_errors;
    std::string ours;
    bool our_ok = false;
    auto t = Template::Parse(src);
    if (!t.ok()) {
      ours = "ERROR " + t.status().ToString();
    } else {
      auto out = t->Render(ctx);
      if (out.ok()) {
        our_ok = true;
        ours = *out;
      } else {
        ours = "ERROR " + out.status().ToString();
      }
    }
    bool same = py_ok ? (our_ok && ours == r.Find("output")->as_string()) : !our_ok;
    if (same) {
      ++agree;
      continue;
    }
    report += "case " + std::to_string(static_cast<int64_t>(r.Find("id")->as_int())) + ": template " +
              ToJson(Value(src)) + " context " + ToJson(ctx) +
              "\n  python: " + (py_ok ? ToJson(*r.Find("output")) : "ERROR " + r.Find("error")->as_string()) +
              "\n  ours:   " + (our_ok ? ToJson(Value(ours)) : ours) + "\n";
  }
  std::remove(path);
  ASSERT_GT(total, 600) << "corpus too small";
  double pct = 100.0 * agree / total;
  std::cout << "template differential: " << agree << "/" << total << " cases agree (" << pct << "%), " << py_errors
            << " of them are Python errors\n";
  if (!report.empty()) std::cout << "disagreements:\n" << report;
  EXPECT_GE(pct, 99.0);
}

}  // namespace
}  // namespace mmirage::tmpl

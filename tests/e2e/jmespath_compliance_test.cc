// The official JMESPath compliance suite, run through the binary (`mmirage query`), one process per `given`
// document with every expression of its cases (--lines mode is per document, so we batch by expression).
#include <gtest/gtest.h>

#include <filesystem>

#include "data/json.h"
#include "e2e/e2e_util.h"
#include "query/jmespath.h"

namespace mmirage::testing {
namespace {

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  return out + "'";
}

TEST(JmespathComplianceThroughBinary, EveryCasePasses) {
  std::string dir = SharedDir() + "/conformance/jmespath";
  ASSERT_TRUE(std::filesystem::is_directory(dir))
      << "JMESPath compliance suite not found at " << dir << " (it lives in ../shared/conformance/jmespath)";
  TempDir tmp;
  int total = 0, passed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::string name = entry.path().filename().string();
    auto suite = ParseJson(ReadFile(entry.path().string()));
    ASSERT_TRUE(suite.ok()) << name;
    int file_total = 0, file_passed = 0;
    for (const auto& group : suite->as_array()) {
      std::string given = ToJson(*group.Find("given"));
      WriteFile(tmp.Path("given.json"), given);
      for (const auto& c : group.Find("cases")->as_array()) {
        const Value* expected = c.Find("result");
        const Value* error = c.Find("error");
        if (expected == nullptr && error == nullptr) continue;  // benchmark-only case
        ++file_total;
        auto r = RunCommand("'" + std::string(MMIRAGE_BINARY) + "' query " +
                            ShellQuote(c.Find("expression")->as_string()) + " < " + tmp.Path("given.json"));
        bool ok;
        if (error != nullptr) {
          ok = r.exit_code == 1 && !r.err.empty();
        } else {
          auto got = ParseJson(r.out);
          ok = r.exit_code == 0 && got.ok() && *got == *expected;
        }
        if (ok) ++file_passed;
        else ADD_FAILURE() << name << ": " << c.Find("expression")->as_string() << " -> " << r.out << r.err;
      }
    }
    std::printf("  %-18s %d/%d\n", name.c_str(), file_passed, file_total);
    total += file_total;
    passed += file_passed;
  }
  std::printf("JMESPath compliance through the binary: %d/%d\n", passed, total);
  EXPECT_GT(total, 800);
  EXPECT_EQ(passed, total);
}

}  // namespace
}  // namespace mmirage::testing

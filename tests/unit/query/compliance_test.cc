// Runs the official JMESPath compliance suite (shared/conformance/jmespath/*.json) and requires 100 %.
// Each file is a list of {given, cases: [{expression, result | error | bench}]}. A result case passes when the
// result equals `result` as JSON; an error case when Compile or Evaluate fails with the same error kind. Bench
// cases (benchmarks.json) carry no expected value: they must compile and evaluate without error.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/json.h"
#include "query/jmespath.h"

namespace mmirage::query {
namespace {

const char* KindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSyntax: return "syntax";
    case ErrorKind::kUnknownFunction: return "unknown-function";
    case ErrorKind::kInvalidArity: return "invalid-arity";
    case ErrorKind::kInvalidType: return "invalid-type";
    case ErrorKind::kInvalidValue: return "invalid-value";
  }
  return "?";
}

// Empty string when the case passes, else a description of the failure.
std::string RunCase(const Value& given, const Value& test_case) {
  const Value* expression = test_case.Find("expression");
  if (expression == nullptr || !expression->is_string()) return "case without an expression";
  const Value* want_result = test_case.Find("result");
  const Value* want_error = test_case.Find("error");

  Status error;
  Value got;
  auto compiled = Expression::Compile(expression->as_string());
  if (!compiled.ok()) {
    error = compiled.status();
  } else {
    auto evaluated = compiled->Evaluate(given);
    if (evaluated.ok()) {
      got = std::move(*evaluated);
    } else {
      error = evaluated.status();
    }
  }

  if (want_error != nullptr) {
    if (error.ok()) return "expected error " + ToJson(*want_error) + ", got result " + ToJson(got);
    if (!want_error->is_string() || KindName(ErrorKindOf(error)) != want_error->as_string()) {
      return "expected error " + ToJson(*want_error) + ", got " + KindName(ErrorKindOf(error)) + " (" +
             error.message() + ")";
    }
    return "";
  }
  if (!error.ok()) return "unexpected error: " + error.message();
  if (want_result != nullptr && !(got == *want_result)) {
    return "expected " + ToJson(*want_result) + ", got " + ToJson(got);
  }
  return "";
}

TEST(JmespathComplianceTest, PassesEveryCaseOfTheOfficialSuite) {
  const std::filesystem::path dir = std::filesystem::path(MMIRAGE_SHARED_DIR) / "conformance" / "jmespath";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    FAIL() << "JMESPath compliance suite not found: " << dir.string()
           << " is missing (expected the official jmespath.test files there)";
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "no *.json files in " << dir.string();

  int total = 0, total_passed = 0;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    auto suites = ParseJson(buffer.str());
    ASSERT_TRUE(suites.ok()) << path.string() << ": " << suites.status().ToString();
    ASSERT_TRUE(suites->is_array()) << path.string();
    int count = 0, passed = 0;
    for (const Value& suite : suites->as_array()) {
      const Value* given = suite.Find("given");
      const Value* cases = suite.Find("cases");
      ASSERT_TRUE(given != nullptr && cases != nullptr && cases->is_array()) << path.string();
      for (const Value& test_case : cases->as_array()) {
        ++count;
        const std::string failure = RunCase(*given, test_case);
        if (failure.empty()) {
          ++passed;
        } else {
          ADD_FAILURE() << path.filename().string() << ": " << ToJson(*test_case.Find("expression")) << " on "
                        << ToJson(*given).substr(0, 200) << ": " << failure;
        }
      }
    }
    std::cout << "[ compliance ] " << path.filename().string() << ": " << passed << "/" << count << " passed\n";
    total += count;
    total_passed += passed;
  }
  std::cout << "[ compliance ] total: " << total_passed << "/" << total << " passed\n";
  EXPECT_EQ(total_passed, total);
}

}  // namespace
}  // namespace mmirage::query

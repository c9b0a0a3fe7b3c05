// mmirage-make-test-model, run as a subprocess: the tiny preset is written, deterministic per seed, loadable by
// llama.cpp (through the tool's --check, since this binary does not link llama.cpp), and fails cleanly.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "support/test_util.h"

namespace mmirage::testing {
namespace {

// The tool is built next to the mmirage binary (both in the build directory).
std::string ToolPath() {
  std::string path = MMIRAGE_BINARY;
  const std::string suffix = "mmirage";
  if (path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    path.erase(path.size() - suffix.size());
  }
  return path + "mmirage-make-test-model";
}

class MakeTestModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Exists(ToolPath())) << ToolPath() << " is missing: build the mmirage-make-test-model target";
  }
  CommandResult RunTool(const std::string& args) { return RunCommand("'" + ToolPath() + "' " + args); }
  std::string Out(const std::string& name) const { return tmp_.Path(name); }

  TempDir tmp_;
};

TEST_F(MakeTestModelTest, WritesTinyModel) {
  auto r = RunTool("--out '" + Out("tiny.gguf") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("preset=tiny"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("params="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MiB"), std::string::npos) << r.out;
  const std::string bytes = ReadFile(Out("tiny.gguf"));
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(0, 4), "GGUF");
  EXPECT_NE(bytes.find("qwen2.attention.head_count_kv"), std::string::npos);
  EXPECT_NE(bytes.find("tokenizer.chat_template"), std::string::npos);
  EXPECT_NE(bytes.find("blk.1.attn_q.bias"), std::string::npos);
  EXPECT_FALSE(Exists(Out("tiny.gguf.tmp")));
}

TEST_F(MakeTestModelTest, DeterministicPerSeed) {
  for (const char* name : {"a.gguf", "b.gguf"}) {
    auto r = RunTool("--seed 7 --out '" + Out(name) + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto r = RunTool("--seed 8 --out '" + Out("c.gguf") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string a = ReadFile(Out("a.gguf")), b = ReadFile(Out("b.gguf")), c = ReadFile(Out("c.gguf"));
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "same seed, different bytes";
  EXPECT_EQ(a.size(), c.size());  // same shapes
  EXPECT_FALSE(a == c) << "different seeds, same bytes";
}

TEST_F(MakeTestModelTest, CheckLoadsAndGeneratesWithLlamaCpp) {
  auto r = RunTool("--check --out '" + Out("tiny.gguf") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  static const std::regex kCheckLine(R"(check: ok generated=(\d+) tokens text=(".*")\n)");
  ASSERT_TRUE(std::regex_search(r.out, m, kCheckLine)) << r.out;
  EXPECT_GT(std::stoi(m[1].str()), 0) << r.out;
  EXPECT_GT(m[2].str().size(), 2u) << "empty text: " << r.out;
}

TEST_F(MakeTestModelTest, MissingVocabFailsWithoutOutput) {
  auto r = RunTool("--vocab '" + Out("nope.gguf") + "' --out '" + Out("m.gguf") + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("nope.gguf"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected one line: " << r.err;
  EXPECT_FALSE(Exists(Out("m.gguf")));
  EXPECT_FALSE(Exists(Out("m.gguf.tmp")));
}

TEST_F(MakeTestModelTest, InvalidVocabFailsWithoutOutput) {
  WriteFile(Out("bad.gguf"), "definitely not a gguf file");
  auto r = RunTool("--vocab '" + Out("bad.gguf") + "' --out '" + Out("m.gguf") + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_FALSE(Exists(Out("m.gguf")));
  EXPECT_FALSE(Exists(Out("m.gguf.tmp")));
}

TEST_F(MakeTestModelTest, MissingChatTemplateFailsWithoutOutput) {
  auto r = RunTool("--chat-template '" + Out("nope.jinja") + "' --out '" + Out("m.gguf") + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_FALSE(Exists(Out("m.gguf")));
  EXPECT_FALSE(Exists(Out("m.gguf.tmp")));
}

TEST_F(MakeTestModelTest, UnwritableOutputFails) {
  auto r = RunTool("--out '" + Out("no/such/dir/m.gguf") + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
}

TEST_F(MakeTestModelTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunTool("").exit_code, 2);  // --out is required
  EXPECT_EQ(RunTool("--preset huge --out '" + Out("m.gguf") + "'").exit_code, 2);
  EXPECT_EQ(RunTool("--seed abc --out '" + Out("m.gguf") + "'").exit_code, 2);
  EXPECT_FALSE(Exists(Out("m.gguf")));
}

}  // namespace
}  // namespace mmirage::testing

// PipeProcess: lines both ways, timeouts that keep partial lines, EOF on exit, SIGPIPE-free writes, kill.
#include <gtest/gtest.h>

#include "util/process/pipe_process.h"

namespace mmirage {
namespace {

TEST(PipeProcessTest, EchoesLinesAndSeesEof) {
  auto p = PipeProcess::Start({{"/bin/sh", "-c", "while IFS= read -r l; do echo \"got $l\"; done"}, {}, ""});
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE((*p)->Write("a\nb\n").ok());
  EXPECT_EQ(*(*p)->ReadLine(5000), "got a");
  EXPECT_EQ(*(*p)->ReadLine(5000), "got b");
  auto none = (*p)->ReadLine(50);
  EXPECT_TRUE(none.status().IsUnavailable());  // timeout
  EXPECT_EQ((*p)->Close(5000), 0);
}

TEST(PipeProcessTest, PartialLinesWaitForTheirEnd) {
  auto p = PipeProcess::Start({{"/bin/sh", "-c", "printf 'par'; sleep 0.3; printf 'tial\\nnext\\n'"}, {}, ""});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)->ReadLine(50).status().IsUnavailable());
  EXPECT_EQ(*(*p)->ReadLine(5000), "partial");
  EXPECT_EQ(*(*p)->ReadLine(5000), "next");
  auto eof = (*p)->ReadLine(5000);
  EXPECT_TRUE(eof.status().IsIOError()) << eof.status().message();
}

TEST(PipeProcessTest, WritingToADeadChildFailsWithoutSigpipe) {
  auto p = PipeProcess::Start({{"/bin/sh", "-c", "exit 3"}, {}, ""});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)->ReadLine(5000).status().IsIOError());
  std::string big(1 << 20, 'x');
  Status s = (*p)->Write(big);  // the process is still alive to see this
  EXPECT_TRUE(s.IsUnavailable()) << s.message();
  EXPECT_EQ((*p)->Close(1000), 3);
}

TEST(PipeProcessTest, KillEndsTheWholeGroupAndMissingProgramsAreNotFound) {
  auto p = PipeProcess::Start({{"/bin/sh", "-c", "sleep 60 & sleep 60"}, {}, ""});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->Kill(), 128 + 9);
  auto missing = PipeProcess::Start({{"/nonexistent/prog"}, {}, ""});
  EXPECT_TRUE(missing.status().IsNotFound());
  auto env = PipeProcess::Start({{"/bin/sh", "-c", "echo $PP_TEST"}, {{"PP_TEST", "v"}}, ""});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(*(*env)->ReadLine(5000), "v");
}

}  // namespace
}  // namespace mmirage

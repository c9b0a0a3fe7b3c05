// Issue #13 item 11 and the one spawn helper: children inherit no descriptor of ours, RunCommandCapture's deadline
// covers a child that closed its pipes and stops its whole group, no descriptor leaks on errors, and a child group
// started with stop_group_with_parent does not survive a SIGKILL of its parent.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/proc_util.h"
#include "util/process/pipe_process.h"
#include "util/process/subprocess.h"

namespace mmirage {
namespace {

std::set<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

int CountOpenFds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (struct dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n - 1;  // the directory's own descriptor
}

// Guard processes (util/process/spawn.h) watching group `pgid`, by their command line.
int GuardsFor(int pgid) {
  int n = 0;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return -1;
  std::string needle = std::string("mmirage-group-guard") + '\0' + std::to_string(pgid) + '\0';
  while (struct dirent* e = ::readdir(d)) {
    if (std::atoi(e->d_name) <= 0) continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    n += cmd.find(needle) != std::string::npos;
  }
  ::closedir(d);
  return n;
}

bool WaitUntilGroupGone(int pgid, double seconds) {
  return testing::WaitFor([pgid] { return testing::LiveGroupMembers(pgid).empty(); }, seconds);
}

TEST(SubprocessTest, ChildrenInheritNoDescriptorOfOurs) {
  // A descriptor opened without close-on-exec (as a library might): no child may see it.
  int leaky = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 3);
  const std::set<std::string> expected = {"0", "1", "2", "3"};  // 3: ls's own handle on /proc/self/fd

  auto cap = RunCommandCapture({"ls", "/proc/self/fd"}, 10);
  ASSERT_TRUE(cap.ok()) << cap.status().message();
  EXPECT_EQ(Words(cap->out), expected) << "RunCommandCapture child: " << cap->out;

  char tmpl[] = "/tmp/mmirage_fd_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string out_path = std::string(tmpl) + "/fds.txt";
  SubprocessOptions so;
  so.argv = {"/bin/sh", "-c", "exec ls /proc/self/fd"};
  so.stdout_path = out_path;
  so.stderr_path = "=stdout";
  so.new_process_group = true;
  so.terminate_with_parent = true;  // the fork+exec path with a parent-death signal
  auto p = Subprocess::Start(so);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)->Wait(), 0);
  std::ifstream f(out_path);
  std::string listed((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(Words(listed), expected) << "Subprocess child: " << listed;
  so.terminate_with_parent = false;  // the plain path
  ::unlink(out_path.c_str());
  p = Subprocess::Start(so);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)->Wait(), 0);
  std::ifstream f2(out_path);
  listed.assign((std::istreambuf_iterator<char>(f2)), std::istreambuf_iterator<char>());
  EXPECT_EQ(Words(listed), expected) << "Subprocess child: " << listed;
  ::unlink(out_path.c_str());
  ::rmdir(tmpl);

  auto pp = PipeProcess::Start({{"/bin/sh", "-c", "exec ls /proc/self/fd"}, {}, ""});
  ASSERT_TRUE(pp.ok()) << pp.status().message();
  std::string words;
  for (auto line = (*pp)->ReadLine(5000); line.ok(); line = (*pp)->ReadLine(5000)) words += *line + " ";
  EXPECT_EQ(Words(words), expected) << "PipeProcess child: " << words;
  ::close(leaky);
}

TEST(SubprocessTest, RunCommandCaptureDeadlineCoversAChildThatClosedItsPipes) {
  // The child prints the pid of a background member of its group, closes both pipes and keeps running.
  auto start = std::chrono::steady_clock::now();
  auto r = RunCommandCapture({"/bin/sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!; exec >&- 2>&-; sleep 30"}, 0.5);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 124);
  EXPECT_LT(took, 20) << "the deadline did not cover the wait";
  int member = std::atoi(r->out.c_str());
  ASSERT_GT(member, 0) << r->out;
  // SIGKILL went to the whole group: the background sleep is gone too (or a zombie awaiting its new parent).
  bool gone = false;
  for (int i = 0; i < 250 && !gone; ++i) {
    std::ifstream f("/proc/" + std::to_string(member) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    gone = stat.empty() || (close != std::string::npos && stat.compare(close + 2, 1, "Z") == 0);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "pid " << member << " of the command's group survived the deadline";
  // A command that finishes in time keeps its exit code and output.
  auto ok = RunCommandCapture({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->exit_code, 3);
  EXPECT_EQ(ok->out, "out\n");
  EXPECT_EQ(ok->err, "err\n");
}

TEST(SubprocessTest, NoDescriptorLeaksOnErrors) {
  int before = CountOpenFds();
  for (int i = 0; i < 20; ++i) {
    auto r = RunCommandCapture({"/nonexistent/program"}, 5);
    EXPECT_TRUE(r.status().IsNotFound()) << r.status().message();
    SubprocessOptions missing;
    missing.argv = {"/nonexistent/program"};
    missing.new_process_group = missing.terminate_with_parent = missing.stop_group_with_parent = true;
    auto p = Subprocess::Start(missing);
    EXPECT_TRUE(p.status().IsNotFound()) << p.status().message();
    auto pp = PipeProcess::Start({{"/nonexistent/program"}, {}, ""});
    EXPECT_TRUE(pp.status().IsNotFound()) << pp.status().message();
    SubprocessOptions bad_cwd;
    bad_cwd.argv = {"/bin/true"};
    bad_cwd.cwd = "/nonexistent/dir";
    EXPECT_FALSE(Subprocess::Start(bad_cwd).ok());
    SubprocessOptions bad_log;
    bad_log.argv = {"/bin/true"};
    bad_log.stdout_path = "/tmp";  // a directory: cannot be opened for writing
    EXPECT_FALSE(Subprocess::Start(bad_log).ok());
  }
  EXPECT_EQ(CountOpenFds(), before);

  // Room for exactly two more descriptors (the limit bounds descriptor numbers): the first pipe opens, the second
  // (or the spawn's own error pipe) fails; whatever was opened must be closed again.
  for (int room = 1; room <= 5; ++room) {
    int free_seen = 0, limit = 0;
    for (int fd = 0; free_seen <= room; ++fd) {
      if (::fcntl(fd, F_GETFD) < 0) ++free_seen;
      limit = fd;
    }
    struct rlimit old_limit;
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old_limit), 0);
    struct rlimit low = old_limit;
    low.rlim_cur = static_cast<rlim_t>(limit);  // descriptors < limit: `room` free ones
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    auto r = RunCommandCapture({"/bin/true"}, 5);
    auto pp = PipeProcess::Start({{"/bin/true"}, {}, ""});
    SubprocessOptions logged;
    logged.argv = {"/bin/true"};
    logged.stdout_path = "/dev/null";
    logged.new_process_group = logged.stop_group_with_parent = true;
    auto sp = Subprocess::Start(logged);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old_limit), 0);
    if (r.ok()) { EXPECT_EQ(r->exit_code, 0); }
    if (sp.ok()) (*sp)->Wait();
    pp = Status::IOError("done");  // closes it, if it started
    sp = Status::IOError("done");
    EXPECT_EQ(CountOpenFds(), before) << "room for " << room << " descriptor(s)";
  }
}

// A process that starts a guarded group (a shell that forked a child) and is then killed with SIGKILL: no member
// of the group may survive it. The starter is a forked copy of this test (single-threaded here).
TEST(SubprocessTest, GuardedGroupDiesWithItsParentEvenAfterSigkill) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t starter = ::fork();
  ASSERT_GE(starter, 0);
  if (starter == 0) {
    ::close(report[0]);
    SubprocessOptions so;
    so.argv = {"/bin/sh", "-c", "sleep 60 & sleep 60 & wait"};
    so.new_process_group = true;
    so.terminate_with_parent = true;
    so.stop_group_with_parent = true;
    so.group_stop_grace_seconds = 1;
    auto p = Subprocess::Start(so);
    int pgid = p.ok() ? (*p)->pid() : -1;
    ssize_t ignored = ::write(report[1], &pgid, sizeof pgid);
    (void)ignored;
    ::pause();
    ::_exit(0);
  }
  ::close(report[1]);
  int pgid = -1;
  ASSERT_EQ(::read(report[0], &pgid, sizeof pgid), static_cast<ssize_t>(sizeof pgid));
  ::close(report[0]);
  ASSERT_GT(pgid, 0) << "the starter could not start the group";
  // Wait until the shell has forked both sleeps (three members), then kill the starter.
  ASSERT_TRUE(testing::WaitFor([pgid] { return testing::LiveGroupMembers(pgid).size() >= 3; }, 5));
  ::kill(starter, SIGKILL);
  int st;
  ::waitpid(starter, &st, 0);
  EXPECT_TRUE(WaitUntilGroupGone(pgid, 10)) << testing::LiveGroupMembers(pgid).size() << " member(s) of group " << pgid
                                            << " survived the SIGKILL of the process that started it";
  for (int pid : testing::LiveGroupMembers(pgid)) ::kill(pid, SIGKILL);  // leave nothing behind when the test fails
  EXPECT_TRUE(testing::WaitFor([pgid] { return GuardsFor(pgid) == 0; }, 5))
      << "the guard did not exit after stopping the group";
}

TEST(SubprocessTest, AGuardIsDismissedWhenItsGroupEndedNormally) {
  SubprocessOptions so;
  so.argv = {"/bin/sh", "-c", "exit 4"};
  so.new_process_group = true;
  so.stop_group_with_parent = true;
  auto p = Subprocess::Start(so);
  ASSERT_TRUE(p.ok()) << p.status().message();
  int pgid = (*p)->pid();
  EXPECT_EQ(GuardsFor(pgid), 1);
  EXPECT_EQ((*p)->Wait(), 4);
  p->reset();
  EXPECT_TRUE(testing::WaitFor([pgid] { return GuardsFor(pgid) == 0; }, 5)) << "a dismissed guard is still running";
}

TEST(SubprocessTest, DestroyingAGuardedSubprocessStopsWhatIsLeftOfItsGroup) {
  SubprocessOptions so;
  so.argv = {"/bin/sh", "-c", "sleep 60 & exit 0"};  // the leader exits at once; its child stays
  so.new_process_group = true;
  so.stop_group_with_parent = true;
  so.group_stop_grace_seconds = 1;
  auto p = Subprocess::Start(so);
  ASSERT_TRUE(p.ok()) << p.status().message();
  int pgid = (*p)->pid();
  EXPECT_EQ((*p)->Wait(), 0);
  ASSERT_FALSE(testing::LiveGroupMembers(pgid).empty()) << "the background sleep should still run";
  p->reset();
  EXPECT_TRUE(WaitUntilGroupGone(pgid, 10));
  for (int pid : testing::LiveGroupMembers(pgid)) ::kill(pid, SIGKILL);
  // stop_group_with_parent needs a group of its own.
  SubprocessOptions bad;
  bad.argv = {"/bin/true"};
  bad.stop_group_with_parent = true;
  EXPECT_TRUE(Subprocess::Start(bad).status().IsInvalidArgument());
}

}  // namespace
}  // namespace mmirage
